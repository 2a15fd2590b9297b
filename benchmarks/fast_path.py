"""Same-host fast path benchmark: a server-side vector env's steps through shared memory against the WebSocket and in-process peers.

CartPole-v1, all in one run so the ratios hold on a noisy machine, the configs taking turns
``--rounds`` times per N:

* ours, shared memory: ``gym.make_vec("openenv/CartPole-v1", num_envs=N)`` (one process server,
  ``CartPoleVectorEnv`` on it, ``transport="auto"``, which takes shared memory on this host);
* ours, WebSocket: the same with ``transport="ws"`` (every step a binary frame each way);
* Gymnasium's vectorized CartPole in-process: ``gymnasium.make_vec("CartPole-v1", N)``;
* ``gymnasium.vector.SyncVectorEnv`` of ``gym.make("CartPole-v1")`` (N <= 256);
* EnvPool in-process, sync, one thread per CPU (``envpool.make_gymnasium``; the ``envpool`` extra).

Each config: ``reset(seed=0)``, warm-up steps, then timed steps of seeded random actions
(env-steps/s = N * steps / seconds); each ratio is the median of its per-round ratios, every
round printed. The targets (issue 33), printed and never asserted: N=64 shared memory >= 3x
SyncVectorEnv; N=256 >= 2.0x EnvPool and >= 0.6x in-process vectorized; N=1024 >= 0.7x
in-process vectorized. Then, at N=256, where one step spends its time for each transport (us):
the vector env's own step in-process, the server's work around it, the client's, and the rest
(waking the other side, or the WebSocket round trip and both sessions). Run from the repository
root, on an otherwise idle machine::

    .venv/bin/python benchmarks/fast_path.py
    .venv/bin/python benchmarks/fast_path.py --envs 256 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from vector import _per_call_us, machine, time_vector, where_time_goes

ENV_ID = "CartPole-v1"
SHM, WS = "ours, shared memory", "ours, WebSocket"
GYM_VEC, SYNC, ENVPOOL = "gymnasium.make_vec (in-process)", "SyncVectorEnv", "EnvPool sync (in-process)"
MAX_SYNC = 256
#: (N, ours, peer, target): the issue's targets.
TARGETS = [
    (64, SHM, SYNC, 3.0),
    (256, SHM, ENVPOOL, 2.0),
    (256, SHM, GYM_VEC, 0.6),
    (1024, SHM, GYM_VEC, 0.7),
]


def makers(n: int, envpool: Any) -> dict[str, Callable[[], Any]]:
    made: dict[str, Callable[[], Any]] = {
        SHM: lambda: gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium", transport="shm"),
        WS: lambda: gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium", transport="ws"),
        GYM_VEC: lambda: gym.make_vec(ENV_ID, num_envs=n),
    }
    if n <= MAX_SYNC:
        made[SYNC] = lambda: gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID)] * n)
    if envpool is not None:
        made[ENVPOOL] = lambda: envpool.make_gymnasium(ENV_ID, num_envs=n, seed=0, num_threads=os.cpu_count() or 1)
    return made


def shm_breakdown(n: int) -> str:
    """One step at N=n through shared memory taken apart: each part timed alone, the rest by
    difference (the WebSocket's is :func:`vector.where_time_goes`)."""
    from gymnasium.vector.utils import batch_space

    from openenv_gym.protocol.shm import ShmLayout
    from openenv_gym.spaces import mismatch
    from openenv_gym.vector.batching import join_batches, join_infos

    actions = np.zeros(n, dtype=np.int64)
    space = batch_space(gym.spaces.Discrete(2), n)
    local = gym.make_vec(ENV_ID, num_envs=n)
    local.reset(seed=0)
    env_us = _per_call_us(lambda: local.step(actions))
    observations, rewards, terminated, truncated, infos = local.step(actions)
    local.close()
    segment = ShmLayout(n, "<i8", (), "<f4", (4,), 2**16)
    views = segment.views(bytearray(segment.size))

    def server() -> None:  # what the channel's thread does around the env's step
        np.copyto(views.actions, actions)
        mismatch(space, views.actions)
        np.copyto(views.observations, observations)
        np.copyto(views.rewards.view(np.float32)[:n], rewards)
        np.copyto(views.terminated, terminated)
        np.copyto(views.truncated, truncated)

    def client() -> None:  # the client's check, write, read and join
        mismatch(space, actions)
        np.copyto(views.actions, actions)
        for value in (views.observations, views.rewards, views.terminated, views.truncated):
            join_batches([value.copy()])
        join_infos([(0, n, infos)], n)

    server_us, client_us = _per_call_us(server), _per_call_us(client)
    envs = gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium", transport="shm")
    try:
        envs.reset(seed=0)
        for _ in range(200):
            envs.step(actions)
        total_us = _per_call_us(lambda: envs.step(actions), calls=500)
    finally:
        envs.close()
    rest = total_us - env_us - server_us - client_us
    return (
        f"N={n:<5} total {total_us:6.0f} = vector env step {env_us:5.0f} + server copy/check/copy "
        f"{server_us:4.0f} + client check/write/read/join {client_us:4.0f} + the rest {rest:5.0f} "
        "(waking the other side, and the env's step in another process)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--envs", default="64,256,1024", help="comma-separated num_envs values (default 64,256,1024)")
    p.add_argument("--steps", type=int, default=2000, help="timed vector steps per config and round (default 2000)")
    p.add_argument("--warmup", type=int, default=200, help="untimed vector steps before timing")
    p.add_argument("--rounds", type=int, default=5, help="turns each config takes per N (default 5)")
    args = p.parse_args()
    warnings.filterwarnings("ignore", message=".*precision lowered by casting")  # EnvPool's own spaces
    try:
        import envpool
    except ImportError as exc:
        envpool = None
        print(f"EnvPool is not installed ({exc}): pip install -e '.[envpool]'")
    sizes = [int(x) for x in args.envs.split(",") if x.strip()]
    print(f"{machine()}; {ENV_ID}; N {sizes}; {args.rounds} rounds of {args.steps} timed steps after {args.warmup}")
    rates: dict[tuple[str, int, int], float] = {}
    for n in sizes:
        rng = np.random.default_rng(0)
        warm, timed = rng.integers(0, 2, (args.warmup, n)), rng.integers(0, 2, (args.steps, n))
        made = makers(n, envpool)
        for turn in range(args.rounds):
            for label, make in made.items():
                rates[label, n, turn] = time_vector(make, n, warm, timed)
                print(
                    f"  round {turn + 1}: {label:<34} N={n:<5} {rates[label, n, turn]:>12,.0f} env-steps/s", flush=True
                )
    labels = list(dict.fromkeys(label for label, _, _ in rates))
    print(f"\n{'env-steps/s (median)':<36}" + "".join(f"{'N=' + str(n):>12}" for n in sizes))
    for label in labels:
        cells = []
        for n in sizes:
            measured = [rates[label, n, r] for r in range(args.rounds) if (label, n, r) in rates]
            cells.append(f"{statistics.median(measured):>12,.0f}" if measured else f"{'-':>12}")
        print(f"{label:<36}" + "".join(cells))
    print("\nratios (median of the rounds; each round's in brackets)")
    for n, ours, peer, target in [*TARGETS, *((n, SHM, WS, None) for n in sizes)]:
        rounds = [rates[ours, n, r] / rates[peer, n, r] for r in range(args.rounds) if (peer, n, r) in rates]
        if n not in sizes or not rounds:
            continue
        mid = statistics.median(rounds)
        verdict = f"target >= {target:g}x: {'met' if mid >= target else 'NOT met'}" if target else "(no target)"
        each = ", ".join(f"{r:.2f}" for r in rounds)
        print(f"  N={n:<5} {ours} / {peer:<32} {mid:5.2f}x  [{each}]  {verdict}")
    if 256 in sizes:
        print("\nwhere one step spends its time at N=256 (us; parts timed alone, medians of 5 runs):")
        print("  ws   " + where_time_goes(256))
        print("  shm  " + shm_breakdown(256))
    print(f"\nafter the run: {machine()}; {time.strftime('%Y-%m-%d %H:%M:%S')}")


if __name__ == "__main__":
    main()
