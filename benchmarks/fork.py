"""Snapshot, restore and fork of a remote env, against the same operation in-process, in one run.

Each round times, per line, the remote operation over the wire (one server started by
``gym.make``, on loopback) and its in-process reference on a local env of the same id:

* CartPole-v1, a snapshot and a restore (``env.unwrapped.snapshot()`` + ``restore()``; the
  snapshots are released after, untimed) against ``copy.deepcopy`` of the local env, twice (a copy to keep and
  one to go back to);
* ALE Pong-v5, the same, against ALE's own ``cloneState(include_rng=True)`` + ``restoreState``
  (a restore answers with the state's observation: on a plain session, a 210x160x3 frame as
  JSON, which costs what a step's does);
* ``fork(8)`` of a CartPole mid-episode (the forks closed after, untimed) against 8 deep copies;
* ``fork(8)`` of Git-v0 mid-episode against 8 in-process ``GitEnvironment``s restoring the same
  snapshot (each a new sandbox with the workspace unpacked: what a fork's sessions do on the
  server, without the wire);
* the same ``fork(8)`` on a server made with ``spare_sandboxes=8`` (``gym.make("openenv/Git-v0",
  spare_sandboxes=8)``: its restores take sandboxes started ahead), against the same local
  reference: once after an untimed wait long enough for the server to start its 8 spares again
  (``--refill-wait``, printed), and once back to back, with no wait, which shows the steady
  state of forks that come faster than spares start.

Targets, printed and never asserted: CartPole snapshot + restore <= 1 ms p50 on loopback;
Git-v0 ``fork(8)`` <= 150 ms p50. Run from the repository root::

    .venv/bin/python benchmarks/fork.py              # 5 rounds
    .venv/bin/python benchmarks/fork.py --quick      # a smoke run
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from collections.abc import Callable

import gymnasium as gym

import openenv_gym  # noqa: F401 - registers the catalog
from openenv_gym.errors import SnapshotUnsupportedError

SPARES_LINE = "Git-v0 fork(8), 8 spare sandboxes (ms) / 8 local restores"
SPARES_BACK_TO_BACK_LINE = "Git-v0 fork(8), 8 spare sandboxes, back to back (ms) / 8 local restores"


def p50_ms(operation: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def remote_pair_ms(env: gym.Env, repeats: int) -> float:
    """p50 of a snapshot and a restore of it; the snapshots are released after, untimed."""
    remote, times, handles = env.unwrapped, [], []
    for _ in range(repeats):
        start = time.perf_counter()
        handle = remote.snapshot()
        remote.restore(handle)
        times.append(time.perf_counter() - start)
        handles.append(handle)
    remote.release(*handles)
    return statistics.median(times) * 1e3


def local_copy_pair(env: gym.Env) -> Callable[[], None]:
    def pair() -> None:
        kept = copy.deepcopy(env)
        copy.deepcopy(kept)

    return pair


def ale_pair(env: gym.Env) -> Callable[[], None]:
    ale = env.unwrapped.ale

    def pair() -> None:
        ale.restoreState(ale.cloneState(include_rng=True))

    return pair


def timed_fork(env: gym.Env, count: int, repeats: int, wait: float = 0.0) -> float:
    """p50 of ``fork(count)`` alone (closing the forks is not counted), each after ``wait`` seconds,
    untimed (for a server's spare sandboxes to refill)."""
    times = []
    for _ in range(repeats):
        time.sleep(wait)
        start = time.perf_counter()
        children = env.unwrapped.fork(count)
        times.append(time.perf_counter() - start)
        for child in children:
            child.close()
    return statistics.median(times) * 1e3


def local_git_forks(count: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """8 in-process Git envs restoring one mid-episode snapshot (closed after, untimed), and a closer."""
    from openenv_gym.envs.git import GitEnvironment

    source = GitEnvironment()
    source.reset(seed=0)
    source.run("echo change >> README.md && git commit -qam change")  # mid-episode: a commit made
    state = source.snapshot()
    source.close()
    made: list[GitEnvironment] = []

    def forks() -> None:
        for _ in range(count):
            env = GitEnvironment()
            env.restore(state)
            made.append(env)

    def close() -> None:
        while made:
            made.pop().close()

    return forks, close


def p50_ms_then(operation: Callable[[], None], after: Callable[[], None], repeats: int) -> float:
    """p50 of ``operation``, ``after`` run untimed after each."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
        after()
    return statistics.median(times) * 1e3


def mid_episode(env: gym.Env, steps: int, action: object = None) -> gym.Env:
    env.reset(seed=0)
    for _step in range(steps):
        env.step(env.action_space.sample() if action is None else action)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=500, help="snapshot+restore pairs per round")
    parser.add_argument("--forks", type=int, default=20, help="fork(8) calls per round")
    parser.add_argument(
        "--refill-wait",
        type=float,
        default=2.0,
        help="seconds waited, untimed, before each timed fork of the server with 8 spare sandboxes",
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.pairs, args.forks = 1, 50, 3
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    remote_cartpole = mid_episode(gym.make("openenv/CartPole-v1"), 5, action=1)
    local_cartpole = mid_episode(gym.make("CartPole-v1"), 5, action=1)
    remote_pong = mid_episode(gym.make("openenv/ALE-Pong-v5"), 20)
    import ale_py

    gym.register_envs(ale_py)
    local_pong = mid_episode(gym.make("ALE/Pong-v5"), 20)
    commit = '{"name": "run", "arguments": {"command": "echo change >> README.md && git commit -qam change"}}'
    git = gym.make("openenv/Git-v0")
    git.reset(seed=0)
    git.step(commit)
    git_spares = gym.make("openenv/Git-v0", spare_sandboxes=8)
    git_spares.reset(seed=0)
    git_spares.step(commit)
    git_local, git_local_close = local_git_forks(8)
    try:
        git.unwrapped.snapshot()
        git_reason = None
    except SnapshotUnsupportedError as exc:
        git_reason = exc.headline()

    lines: dict[str, list[tuple[float, float]]] = {}
    try:
        for round_index in range(args.rounds):
            measured = {
                "CartPole snapshot+restore (ms) / deepcopy x2": (
                    remote_pair_ms(remote_cartpole, args.pairs),
                    p50_ms(local_copy_pair(local_cartpole), args.pairs),
                ),
                "Pong snapshot+restore (ms) / ALE clone+restore": (
                    remote_pair_ms(remote_pong, args.pairs // 5),
                    p50_ms(ale_pair(local_pong), args.pairs // 5),
                ),
                "CartPole fork(8) (ms) / 8 deepcopies": (
                    timed_fork(remote_cartpole, 8, args.forks),
                    p50_ms(lambda: [copy.deepcopy(local_cartpole) for _ in range(8)], args.forks),
                ),
            }
            if git_reason is None:
                repeats = max(3, args.forks // 4)
                local_git = p50_ms_then(git_local, git_local_close, repeats)
                measured["Git-v0 fork(8) (ms) / 8 local restores"] = (timed_fork(git, 8, repeats), local_git)
                if round_index == 0:
                    print(
                        f"Git-v0 with 8 spare sandboxes: waiting {args.refill_wait:g} s, untimed, before each "
                        "timed fork(8), for the server to start its spares again"
                    )
                measured[SPARES_LINE] = (timed_fork(git_spares, 8, repeats, args.refill_wait), local_git)
                measured[SPARES_BACK_TO_BACK_LINE] = (timed_fork(git_spares, 8, repeats), local_git)
            for name, pair in measured.items():
                lines.setdefault(name, []).append(pair)
            print(
                f"round {round_index + 1}: "
                + "; ".join(f"{name}: {remote:.3f} vs {local:.3f}" for name, (remote, local) in measured.items())
            )
    finally:
        for env in (remote_cartpole, local_cartpole, remote_pong, local_pong, git, git_spares):
            env.close()

    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, pairs in lines.items():
        remote = [r for r, _ in pairs]
        ratios = [remote / local for remote, local in pairs]
        print(
            f"{name}: remote p50 per round {[f'{r:.3f}' for r in remote]}, ratio per round {[f'{x:.1f}' for x in ratios]}"
        )
    cartpole = statistics.median(r for r, _ in lines["CartPole snapshot+restore (ms) / deepcopy x2"])
    print(f"target CartPole snapshot+restore <= 1 ms p50: {cartpole:.3f} ms -> {'met' if cartpole <= 1 else 'NOT met'}")
    if git_reason is not None:
        print(f"target Git-v0 fork(8) <= 150 ms: not measured: {git_reason}")
    else:
        git_fork = statistics.median(r for r, _ in lines["Git-v0 fork(8) (ms) / 8 local restores"])
        print(f"target Git-v0 fork(8) <= 150 ms p50: {git_fork:.1f} ms -> {'met' if git_fork <= 150 else 'NOT met'}")
        spared = statistics.median(r for r, _ in lines[SPARES_LINE])
        back_to_back = statistics.median(r for r, _ in lines[SPARES_BACK_TO_BACK_LINE])
        print(
            f"target Git-v0 fork(8) <= 150 ms p50, 8 spare sandboxes refilled between forks: {spared:.1f} ms -> "
            f"{'met' if spared <= 150 else 'NOT met'} (back to back: {back_to_back:.1f} ms)"
        )


if __name__ == "__main__":
    main()
