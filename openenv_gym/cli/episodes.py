"""``openenv-gym replay``, ``rescore`` and ``eval``: recorded episodes re-played and re-scored, and a policy evaluated."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from typing import Any

from ._arguments import env_kwargs
from ._user_code import current_directory_importable

__all__ = ["add_parsers", "evaluate", "replay", "rescore"]


def add_parsers(commands: Any) -> None:
    replaying = commands.add_parser(
        "replay",
        help="step an env with a trajectory file's actions and report where it diverges",
        description="Re-play recorded episodes (JSONL or Parquet, as openenv_gym.wrappers.RecordEpisodes "
        "writes them) on fresh envs of their ids, with their seeds, options and actions, and compare "
        "every observation, reward and flag with the record. Exits 1 if any episode diverges.",
    )
    replaying.add_argument("file", help="a trajectory file (.jsonl or .parquet)")
    replaying.add_argument("--env-kwargs", type=env_kwargs, default={}, help="gym.make keyword arguments, as JSON")
    replaying.add_argument("--env-id", default=None, help="the env to re-play on (default: each record's env_id)")

    rescoring = commands.add_parser(
        "rescore",
        help="recompute a trajectory file's rewards with reward functions, offline",
        description="Pay recorded episodes with reward functions of yours instead of the ones they were "
        "recorded with: from the records alone, without the env or the model. Prints the mean of each "
        "part and of the return over the episodes that ended (not those a recorder's close() cut short, "
        "unless --include-unfinished); --out writes every re-scored episode. Modules of the current "
        "directory import, as with python -m.",
    )
    rescoring.add_argument("file", help="a trajectory file (.jsonl or .parquet)")
    rescoring.add_argument(
        "--reward", action="append", required=True, metavar="MODULE:FN", help="a reward function (repeatable)"
    )
    rescoring.add_argument("--weight", type=float, default=1.0, help="the weight of each --reward (default 1)")
    rescoring.add_argument(
        "--per", choices=("episode", "step"), default="episode", help="what a plain function takes (default episode)"
    )
    rescoring.add_argument("--out", default=None, help="write the re-scored episodes here (.jsonl or .parquet)")
    rescoring.add_argument(
        "--include-unfinished",
        action="store_true",
        help="count the episodes cut short by a recorder's close() in the means too",
    )

    evaluating = commands.add_parser(
        "eval",
        help="run a policy on a task env's split: pass@1, pass@k and mean return per difficulty",
        description="Run a policy (module:fn, called as fn(observation, info) -> action; or a class, one "
        "instance per episode) on the tasks of a split, --samples episodes each; print pass@1, pass@k "
        "and the mean return per difficulty; with --out, write the trajectories, with --plot a PNG of each "
        "task's mean return. Modules of the current directory import, as with python -m.",
    )
    evaluating.add_argument("env_id", help="a registered task env id (openenv/CodingTools-v0)")
    evaluating.add_argument("--policy", required=True, metavar="MODULE:FN")
    evaluating.add_argument("--split", default="test", help="the split (default test)")
    evaluating.add_argument("--episodes", type=int, default=None, help="tasks to evaluate (default: the whole split)")
    evaluating.add_argument("--k", type=int, default=1, help="the k of pass@k (default 1)")
    evaluating.add_argument("--samples", type=int, default=None, help="episodes per task (default: k)")
    evaluating.add_argument(
        "--threshold", type=float, default=None, help="the return of a success (default: the env's)"
    )
    evaluating.add_argument("--out", default=None, help="write the trajectories here (.jsonl or .parquet)")
    evaluating.add_argument("--plot", default=None, help="write a PNG of each task's mean return here")
    evaluating.add_argument("--env-kwargs", type=env_kwargs, default={}, help="gym.make keyword arguments, as JSON")


def replay(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import openenv_gym  # noqa: F401  registers the ids

    from ..trajectories import read_trajectories
    from ..trajectories import replay as replay_episodes

    current_directory_importable()  # an id may be module:Name-v0

    def make(trajectory: Any) -> Any:
        env_id = args.env_id or trajectory.env_id
        if env_id is None:
            raise ValueError(f"episode {trajectory.stream}/{trajectory.episode} names no env id: pass --env-id")
        return gym.make(env_id, **args.env_kwargs)

    trajectories = list(read_trajectories(args.file))
    count, divergences = replay_episodes(trajectories, make, progress=sys.stderr.isatty())
    for divergence in divergences:
        print(f"diverged: {divergence}")
    print(f"{count} of {len(trajectories)} episodes re-played; {len(divergences)} diverged")
    return 1 if divergences else 0


def rescore(args: argparse.Namespace) -> int:
    from ..rewards import load_reward_function, rescored
    from ..trajectories import read_trajectories, write_trajectories

    current_directory_importable()
    functions = [load_reward_function(spec, weight=args.weight, per=args.per) for spec in args.reward]
    episodes = [rescored(trajectory, functions) for trajectory in read_trajectories(args.file)]
    counted = [episode for episode in episodes if args.include_unfinished or not episode.unfinished]
    left_out = len(episodes) - len(counted)
    if left_out:
        print(f"{left_out} episodes cut short by close() left out of the means (--include-unfinished counts them)")
    if not counted:
        what = "episodes" if not episodes else "episodes that ended"
        print(f"openenv-gym rescore: error: no {what} in {args.file}", file=sys.stderr)
        return 1
    for function in functions:
        values = [episode.components_total().get(function.name, 0.0) for episode in counted]
        print(f"{function.name}: mean {statistics.fmean(values):.6g} over {len(values)} episodes")
    print(f"return: mean {statistics.fmean(episode.total_reward for episode in counted):.6g}")
    if args.out:
        write_trajectories(args.out, episodes)
        print(f"wrote {len(episodes)} episodes to {args.out}")
    return 0


def evaluate(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from .. import tasks
    from ..evaluation import evaluate as run_evaluation
    from ..evaluation import load_policy, plot_returns
    from ..trajectories import TrajectoryWriter

    samples = args.samples if args.samples is not None else args.k
    current_directory_importable()
    policy = load_policy(args.policy)
    env = gym.make(args.env_id, **args.env_kwargs)
    try:
        catalog = tasks(env)
        task_ids = catalog.ids(split=args.split)[: args.episodes]
        threshold = args.threshold
        if threshold is None:
            spec_threshold = env.spec.reward_threshold if env.spec is not None else None
            threshold = 1.0 if spec_threshold is None else float(spec_threshold)
        with contextlib.ExitStack() as stack:
            writer = None if args.out is None else stack.enter_context(TrajectoryWriter(args.out))
            report = run_evaluation(
                env,
                policy,
                task_ids,
                catalog.difficulty_of(),
                samples=samples,
                k=args.k,
                threshold=threshold,
                writer=writer,
                progress=sys.stderr.isatty(),
            )
    finally:
        env.close()
    print(report.table())
    if args.plot is not None:
        plot_returns(report, args.plot)
    written = [f"{what}: {path}" for what, path in (("trajectories", args.out), ("plot", args.plot)) if path]
    if written:
        print("; ".join(written))
    return 0
