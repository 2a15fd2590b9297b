"""Evaluation of a policy on a task env's split: pass@1, pass@k and mean return per difficulty.

``openenv-gym eval openenv/CodingTools-v0 --policy my_agent:act --split test --k 4`` runs, for
each task of the split (in the set's order, ``--episodes`` of them), ``--samples`` episodes (at
least ``k``; default ``k``), prints the table, and, when asked, writes every episode as a
trajectory (``--out``) and saves a plot of the mean return of each task (``--plot``).

pass@k is the unbiased estimator of Chen et al. (2021): with ``n`` episodes of a task of which
``c`` succeeded, ``1 - C(n - c, k) / C(n, k)``, averaged over the tasks. An episode succeeds when
its return reaches the threshold (the env's ``reward_threshold``, else 1).

A policy is ``module:attr``: a function ``policy(observation, info) -> action`` called at each
step, or a class whose instance (one per episode, made with no arguments) is that function.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import EpisodeNotEndingError
from .trajectories import Trajectory, TrajectoryWriter

__all__ = ["EvalReport", "TaskResult", "evaluate", "load_policy", "pass_at_k", "plot_returns", "summarize"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` of ``n`` episodes, ``c`` of which succeeded, succeeds.

    Example:
        >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4), pass_at_k(4, 1, 4)
        (0.25, 0.5, 0.0, 1.0)

    Raises:
        ValueError: not ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass
class TaskResult:
    """One task's episodes: their returns, and how many succeeded."""

    task_id: str
    difficulty: str
    returns: list[float] = field(default_factory=list)
    successes: int = 0

    @property
    def samples(self) -> int:
        return len(self.returns)

    @property
    def mean_return(self) -> float:
        return math.fsum(self.returns) / len(self.returns)


@dataclass
class EvalReport:
    """The results of an evaluation, per task, and its summaries."""

    results: list[TaskResult]
    k: int
    threshold: float

    def rows(self) -> list[dict[str, Any]]:
        """One row per difficulty present, then ``"all"``: tasks, episodes, pass@1, pass@k, mean return."""
        groups: dict[str, list[TaskResult]] = {}
        for result in self.results:
            groups.setdefault(result.difficulty, []).append(result)
        order = [name for name in ("easy", "medium", "hard") if name in groups] + sorted(
            set(groups) - {"easy", "medium", "hard"}
        )
        return [self._row(name, groups[name]) for name in order] + [self._row("all", self.results)]

    def _row(self, name: str, results: Sequence[TaskResult]) -> dict[str, Any]:
        return {
            "difficulty": name,
            "tasks": len(results),
            "episodes": sum(result.samples for result in results),
            "pass@1": _mean([pass_at_k(r.samples, r.successes, 1) for r in results]),
            f"pass@{self.k}": _mean([pass_at_k(r.samples, r.successes, self.k) for r in results]),
            "mean_return": _mean([value for r in results for value in r.returns]),
        }

    def table(self) -> str:
        """The rows as aligned text."""
        rows = self.rows()
        columns = list(rows[0])
        cells = [[_cell(row[column]) for column in columns] for row in rows]
        widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
        lines = ["  ".join(column.ljust(width) for column, width in zip(columns, widths))]
        lines += ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)) for line in cells]
        return "\n".join(lines)


def summarize(
    trajectories: Iterable[Trajectory],
    k: int,
    threshold: float,
    difficulty_of: Mapping[str, str],
    *,
    include_unfinished: bool = False,
) -> EvalReport:
    """The report of recorded episodes: grouped by task (in first-seen order), success by threshold.
    An episode a recorder's ``close()`` cut short (``unfinished``) is left out, unless
    ``include_unfinished``: its return is not an episode's.

    Raises:
        ValueError: a task with fewer than ``k`` episodes, or an episode that names no task.
    """
    results: dict[str, TaskResult] = {}
    for trajectory in trajectories:
        if trajectory.unfinished and not include_unfinished:
            continue
        if trajectory.task_id is None:
            raise ValueError(f"episode {trajectory.stream}/{trajectory.episode} names no task (info['task_id'])")
        result = results.setdefault(
            trajectory.task_id, TaskResult(trajectory.task_id, difficulty_of.get(trajectory.task_id, "unknown"))
        )
        result.returns.append(trajectory.total_reward)
        result.successes += trajectory.total_reward >= threshold
    short = [result.task_id for result in results.values() if result.samples < k]
    if short:
        raise ValueError(f"pass@{k} needs at least {k} episodes of each task; these have fewer: {short}")
    return EvalReport(list(results.values()), k, threshold)


def load_policy(spec: str) -> Callable[[], Callable[[Any, dict[str, Any]], Any]]:
    """What makes a policy for one episode, from ``module:attr`` (a function, or a class).

    Raises:
        ValueError: ``spec`` is not ``module:attr``, or names nothing callable.
    """
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"a policy is named as module:attr, got {spec!r}")
    found = getattr(importlib.import_module(module), attr, None)
    if isinstance(found, type):
        return found
    if not callable(found):
        raise ValueError(f"{spec} is not a function or a class")
    return lambda: found


def evaluate(
    env: Any,
    policy: Callable[[], Callable[[Any, dict[str, Any]], Any]],
    task_ids: Sequence[str],
    difficulty_of: Mapping[str, str],
    *,
    samples: int,
    k: int,
    threshold: float,
    writer: TrajectoryWriter | None = None,
    max_steps: int = 1000,
    progress: bool = True,
) -> EvalReport:
    """Run ``samples`` episodes of each task on ``env`` (a Gymnasium env with the task API),
    ``reset(seed=i, options={"task_id": ...})`` for the ``i``-th, with a fresh policy each.

    Raises:
        ValueError: ``k`` more than ``samples``.
        EpisodeNotEndingError: an episode that has not ended after ``max_steps`` steps.
    """
    from tqdm.auto import tqdm

    from .wrappers import RecordEpisodes

    if not 1 <= k <= samples:
        raise ValueError(f"k must be from 1 to samples ({samples}), got {k}")
    recorder = RecordEpisodes(env, writer=writer, metadata={"evaluation": True})
    with tqdm(total=len(task_ids) * samples, desc="eval", unit="episode", disable=not progress) as bar:
        for task_id in task_ids:
            for sample in range(samples):
                act = policy()
                observation, info = recorder.reset(seed=sample, options={"task_id": task_id})
                for _ in range(max_steps):
                    observation, _, terminated, truncated, info = recorder.step(act(observation, info))
                    if terminated or truncated:
                        break
                else:
                    raise EpisodeNotEndingError(
                        f"an episode of {task_id} did not end in {max_steps} steps: give the env a time limit "
                        "(gym.make(..., max_episode_steps=N), or the task's own turn limit)"
                    )
                bar.update(1)
    return summarize(recorder.episodes, k, threshold, difficulty_of)


def plot_returns(report: EvalReport, path: str | Path) -> Path:
    """A PNG of each task's mean return (bars coloured by difficulty, a mean of 0 as a dot on the
    axis, the threshold as a line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    colours = {"easy": "tab:green", "medium": "tab:orange", "hard": "tab:red"}
    figure, axes = plt.subplots(figsize=(max(6.0, 0.3 * len(report.results) + 2), 4))
    try:
        positions = range(len(report.results))
        colour_of = [colours.get(result.difficulty, "tab:blue") for result in report.results]
        means = [result.mean_return for result in report.results]
        axes.bar(positions, means, color=colour_of)
        # A mean of 0 is a bar of no height: a marker on the axis shows the task was run.
        zeros = [index for index, mean in enumerate(means) if mean == 0]
        axes.scatter(
            zeros, [0.0] * len(zeros), c=[colour_of[i] for i in zeros], marker="o", s=30, clip_on=False, zorder=3
        )
        line = axes.axhline(report.threshold, color="grey", linestyle="--", linewidth=1, label="success threshold")
        swatches = [
            Patch(color=colours.get(difficulty, "tab:blue"), label=difficulty)
            for difficulty in dict.fromkeys(result.difficulty for result in report.results)
        ]
        axes.legend(handles=[line, *swatches], fontsize=8)
        axes.set_xticks(list(positions), [result.task_id for result in report.results], rotation=90, fontsize=7)
        axes.set_ylabel("mean return")
        axes.set_title(f"{len(report.results)} tasks; pass@{report.k} = {report.rows()[-1][f'pass@{report.k}']:.3f}")
        figure.tight_layout()
        figure.savefig(path, format="png", dpi=100)
    finally:
        plt.close(figure)
    return Path(path)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
