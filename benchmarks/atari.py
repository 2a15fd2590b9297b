"""Atari benchmark: env-steps/s of Pong vector envs with the usual preprocessing, ours against ALE's own.

For each ``num_envs`` (default 16 and 64), all in one run so the ratios hold on a noisy machine,
every config giving 84x84 grayscale frames, 4 stacked, 4 frames skipped per step:

* ALE's ``AtariVectorEnv("pong", N)`` in-process: ale-py's C++ vector env (its own threads);
* ours: ``gym.make_vec("openenv/ALE-Pong-v5", num_envs=N)``: the same ``AtariVectorEnv`` on one
  server (the default backend for ALE ids), its steps through shared memory (``transport="auto"``
  on one host);
* EnvPool's ``Pong-v5`` in-process, one thread per CPU (its defaults differ in details: no
  sticky actions, reward clipping; a benchmark-only dependency);
* Gymnasium's ``AsyncVectorEnv`` over ``gym.make("ALE/Pong-v5", frameskip=1)`` wrapped in
  ``AtariPreprocessing`` and ``FrameStackObservation(4)``: one process per env (N <= 16).

Then, per N, where a step of ours over the WebSocket (``transport="ws"``) spends its time: ALE's step in-process, the server's packing,
the client's reading and joining, a frame echo server's round trip with a reply of the same size
(the transport's floor), and the rest by difference. Each config: reset, warm-up steps, then ``--steps`` timed steps of seeded random actions; the
configs take turns ``--rounds`` times; the table shows medians and the ratios the median of the
per-round ratios with their range. Target, printed and never asserted: ours >= 1.0x ALE's
in-process ``AtariVectorEnv`` at N=16 and N=64 (issue 33; it was 0.8x at N=16). Run from the repository root::

    .venv/bin/pip install -e '.[bench]'     # EnvPool, and OpenCV for Gymnasium's AtariPreprocessing
    .venv/bin/python benchmarks/atari.py
    .venv/bin/python benchmarks/atari.py --quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the openenv/... ids)

ALE, OURS, ENVPOOL, ASYNC = (
    "ALE AtariVectorEnv (in-process)",
    "ours, openenv/ALE-Pong-v5",
    "EnvPool Pong-v5",
    "AsyncVectorEnv",
)
MAX_ENVS = {ASYNC: 16}
SHAPE = (4, 84, 84)


def make_ale(n: int) -> Any:
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv("pong", num_envs=n, repeat_action_probability=0.25)


def make_async(n: int) -> Any:
    def one() -> gym.Env[Any, Any]:
        import ale_py

        gym.register_envs(ale_py)
        env = gym.make("ALE/Pong-v5", frameskip=1)
        env = gym.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84, grayscale_obs=True, noop_max=30)
        return gym.wrappers.FrameStackObservation(env, 4)

    return gym.vector.AsyncVectorEnv([one] * n)


def make_envpool(n: int) -> Any:
    import envpool

    return envpool.make_gymnasium("Pong-v5", num_envs=n, seed=0, num_threads=os.cpu_count() or 1)


def time_vector(make: Callable[[], Any], n: int, warmup: np.ndarray, timed: np.ndarray) -> float:
    envs = make()
    try:
        seeded_at_make = any("envpool" in cls.__module__ for cls in type(envs).__mro__)
        obs, _ = envs.reset() if seeded_at_make else envs.reset(seed=0)
        if np.shape(obs) != (n, *SHAPE):
            raise RuntimeError(f"observations of shape {np.shape(obs)}, expected {(n, *SHAPE)}")
        for actions in warmup:
            envs.step(actions)
        start = time.perf_counter()
        for actions in timed:
            obs, *_ = envs.step(actions)
        seconds = time.perf_counter() - start
        if not obs.any():
            raise RuntimeError("blank frames: the steps did not run")
        return n * len(timed) / seconds
    finally:
        envs.close()


def _per_call_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def where_time_goes(n: int, calls: int) -> str:
    """One step of ours at N=n taken apart: each part timed alone, the rest by difference."""
    from servers import start_frame_echo

    from openenv_gym.client import EnvClient
    from openenv_gym.protocol.vector import VectorResultFrame, parse_vector_server_frame
    from openenv_gym.vector.batching import join_batches

    actions = np.zeros(n, dtype=np.int64)
    local = make_ale(n)
    local.reset(seed=0)
    env_us = _per_call_us(lambda: local.step(actions), calls)
    observations, rewards, terminated, truncated, infos = local.step(actions)
    local.close()
    result = VectorResultFrame(observations, infos, rewards, terminated, truncated)
    message = result.serialize_binary()
    pack_us = _per_call_us(result.serialize_binary, calls)
    read_us = _per_call_us(lambda: join_batches([parse_vector_server_frame(message).observations]), calls)
    envs = gym.make_vec("openenv/ALE-Pong-v5", num_envs=n, transport="ws")
    try:
        envs.reset(seed=0)
        total_us = _per_call_us(lambda: envs.step(actions), calls)
    finally:
        envs.close()
    echo = start_frame_echo(len(message))
    try:
        client = EnvClient(echo.url, call_timeout=30)
        client.connect()

        def round_trip() -> None:
            client.begin("echo", lambda: '{"type":"state"}')
            client.connection._next_message()  # the raw reply: no frame to parse
            client.connection._in_flight = False

        floor_us = _per_call_us(round_trip, calls)
        client.close()
    finally:
        echo.stop()
    rest = total_us - env_us - pack_us - read_us - floor_us
    return (
        f"N={n:<3} total {total_us:6.0f} = ALE step {env_us:6.0f} + server pack {pack_us:4.0f} + client read/join "
        f"{read_us:4.0f} + round trip of {len(message):,} bytes {floor_us:4.0f} + the rest {rest:5.0f} (the server's "
        "thread hop, and ALE's threads sharing the cores with both processes)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--envs", default="16,64", help="comma-separated num_envs values (default 16,64)")
    p.add_argument("--steps", type=int, default=150, help="timed vector steps per config (default 150)")
    p.add_argument("--warmup", type=int, default=20, help="untimed vector steps before timing")
    p.add_argument("--rounds", type=int, default=3, help="turns each config takes per N (default 3)")
    p.add_argument("--quick", action="store_true", help="smoke run: one round of 20 timed steps")
    args = p.parse_args()
    if args.quick:
        args.steps, args.warmup, args.rounds = 20, 5, 1
    warnings.filterwarnings("ignore", message=".*precision lowered by casting")  # EnvPool's own spaces
    sizes = [int(x) for x in args.envs.split(",") if x.strip()]
    makers: dict[str, Callable[[int], Any]] = {
        ALE: make_ale,
        OURS: lambda n: gym.make_vec("openenv/ALE-Pong-v5", num_envs=n),
        ENVPOOL: make_envpool,
        ASYNC: make_async,
    }
    try:
        envpool_version = version("envpool")
    except Exception:
        envpool_version = "not installed"
        del makers[ENVPOOL]
    print(
        f"gymnasium {version('gymnasium')}, ale-py {version('ale-py')}, envpool {envpool_version}, "
        f"openenv-gym {version('openenv-gym')}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(f"Pong, num_envs {sizes}, {args.rounds} round(s) of {args.warmup} warm-up + {args.steps} timed steps")
    rates: dict[tuple[str, int, int], float] = {}
    for n in sizes:
        rng = np.random.default_rng(0)
        warm, timed = rng.integers(0, 6, (args.warmup, n)), rng.integers(0, 6, (args.steps, n))
        for turn in range(args.rounds):
            for label, make in makers.items():
                if n > MAX_ENVS.get(label, n):
                    continue
                try:
                    rate = time_vector(lambda make=make, n=n: make(n), n, warm, timed)
                except Exception as exc:  # report it, measure the rest
                    print(f"  round {turn + 1}: FAILED {label} N={n}: {type(exc).__name__}: {str(exc)[:300]}")
                    continue
                rates[label, n, turn] = rate
                print(f"  round {turn + 1}: {label:<34} N={n:<3} {rate:>9,.0f} env-steps/s", flush=True)

    print(f"\n{'env-steps/s':<36}" + "".join(f"{'N=' + str(n):>10}" for n in sizes))
    for label in makers:
        cells = []
        for n in sizes:
            measured = [rates[label, n, r] for r in range(args.rounds) if (label, n, r) in rates]
            cells.append(f"{statistics.median(measured):>10,.0f}" if measured else f"{'-':>10}")
        print(f"{label:<36}" + "".join(cells))
    for n in sizes:
        print(f"ratios at N={n}")
        for other, target in ((ALE, 1.0), (ENVPOOL, None), (ASYNC, None)):
            both = [r for r in range(args.rounds) if (OURS, n, r) in rates and (other, n, r) in rates]
            if not both:
                continue
            per_round = [rates[OURS, n, r] / rates[other, n, r] for r in both]
            mid = statistics.median(per_round)
            spread = f" (rounds {min(per_round):.2f}-{max(per_round):.2f})" if len(per_round) > 1 else ""
            verdict = f"target >= {target:g}x -> {'met' if mid >= target else 'NOT met'}" if target else ""
            print(f"  {OURS + ' / ' + other:<66}{mid:>6.2f}x{spread:<22} {verdict}")
    print("\nwhere a step of ours spends its time (us per step):")
    for n in sizes:
        print("  " + where_time_goes(n, 20 if args.quick else 100))


if __name__ == "__main__":
    main()
