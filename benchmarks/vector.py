"""Vector benchmark: env-steps/s of CartPole-v1 vector envs, ours against Gymnasium's and openenv-core's.

For each ``num_envs`` (default 1, 8, 64, 256 and 1024), all in one run so the ratios hold on a
noisy machine:

* ``gymnasium.vector.SyncVectorEnv`` over ``gym.make("CartPole-v1")``: the in-process reference;
* ``gymnasium.vector.AsyncVectorEnv`` over the same: one process per env, shared memory (N <= 64);
* Gymnasium's own vectorized CartPole in-process: ``gymnasium.make_vec("CartPole-v1", N)``, which
  is its ``vector_entry_point``, ``CartPoleVectorEnv`` (numpy over all sub-envs at once);
* EnvPool in-process, sync mode, one thread per CPU: ``envpool.make_gymnasium("CartPole-v1")``
  (a benchmark-only dependency, the ``envpool`` extra);
* ours, server-side vector env: ``gym.make_vec("openenv/CartPole-v1", num_envs=N)``, whose
  default backend is the same ``CartPoleVectorEnv`` on one server, its steps through shared
  memory (``transport="auto"`` on one host; ``benchmarks/fast_path.py`` compares the transports);
* ours, batched per env: the same with ``vector_backend="per_env"`` (one Python env per sub-env
  in batch sessions on one server per CPU, as ``SyncVectorEnv``); each codec, N <= 256;
* ours, JSON per-session: the same with ``batched=False`` (one OpenEnv WebSocket session per env,
  N <= 64);
* openenv-core: N ``GenericEnvClient`` async clients stepped with ``asyncio.gather`` against its
  own server (``tests/openenv_core_server.py --env cartpole``), reset client-side when done;
* the transport floor of the per-session path: N of our ``EnvClient`` sessions, stepped as ours
  are (every request sent, then every reply read), against ``benchmarks/frame_echo_server.py``
  (one per CPU, as ours): websockets' asyncio server answering each frame with a fixed CartPole
  observation frame, no env and no protocol work. It bounds what any per-session client and
  server on this WebSocket stack reach here.

Each config: ``reset(seed=0)``, warm-up steps, then ``--steps`` timed steps of seeded random
actions; env-steps/s = N * steps / seconds. Autoreset is Gymnasium's default (NextStep). The
configs take turns, ``--rounds`` times per N, so a ratio compares runs minutes apart at most on a
machine whose speed drifts; the table shows each config's median, and each ratio is the median of
its per-round ratios, with their range. Targets, printed and never asserted: at 64 envs ours
batched >= 10x AsyncVectorEnv and >= 0.5x SyncVectorEnv, ours JSON per-session >= 4x
openenv-core's aggregate, ours server-side vector env >= 2x SyncVectorEnv; at 256 envs ours
server-side vector env >= 1.0x EnvPool and >= 4x SyncVectorEnv. Then, per N, where a step of the
server-side vector env over the WebSocket (``transport="ws"``) spends its time: the vector env's
own step (in-process), the server's decoding, check and encoding, the client's, and the rest (the
WebSocket round trip and both sessions; a frame echo server's round trip is printed beside it as
the transport's floor).
Run from the repository root::

    .venv/bin/python benchmarks/vector.py                 # full run: three rounds of every config
    .venv/bin/python benchmarks/vector.py --quick         # smoke run
    .venv/bin/python benchmarks/vector.py --envs 64,256 --steps 500
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import platform
import statistics
import time
import warnings
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import gymnasium as gym
import numpy as np
from servers import Server, start_frame_echo, start_openenv_core

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym.vector import RemoteVectorEnv

ENV_ID = "CartPole-v1"
CALL_TIMEOUT = 30.0
RUN_TIMEOUT = 900.0  # one openenv-core fan-out run, end to end

SYNC, ASYNC, PER_SESSION, CORE = "SyncVectorEnv", "AsyncVectorEnv", "ours JSON per-session", "openenv-core x N"
FLOOR = "transport floor: frame echo x N"
GYM_VEC, ENVPOOL = "gymnasium.make_vec (in-process)", "EnvPool sync (in-process)"
VECTOR = "ours, server-side vector env"
# The largest N each config runs at: one process or session per sub-env does not scale further here.
MAX_ENVS = {ASYNC: 64, PER_SESSION: 64, CORE: 64, FLOOR: 64}
MAX_BATCHED_PER_ENV = 256


def close_env(envs: Any) -> None:
    if isinstance(envs, gym.vector.AsyncVectorEnv):
        envs.close(timeout=30)  # bounded: terminates workers that do not answer
    else:
        envs.close()


def time_vector(make: Callable[[], Any], n: int, warmup: np.ndarray, timed: np.ndarray) -> float:
    """env-steps/s of the vector env ``make()`` builds, over the timed action rows."""
    envs = make()
    try:
        seeded_at_make = any("envpool" in cls.__module__ for cls in type(envs).__mro__)  # EnvPool's reset takes none
        obs, _ = envs.reset() if seeded_at_make else envs.reset(seed=0)
        if np.shape(obs) != (n, 4):
            raise RuntimeError(f"reset gave observations of shape {np.shape(obs)}, expected {(n, 4)}")
        for actions in warmup:
            envs.step(actions)
        total = 0.0
        start = time.perf_counter()
        for actions in timed:
            _, rewards, _, _, _ = envs.step(actions)
            total += float(np.sum(rewards))
        seconds = time.perf_counter() - start
        if total <= 0:  # NextStep resets give 0; every other step gives 1
            raise RuntimeError("no reward at all: the steps did not run")
        return n * len(timed) / seconds
    finally:
        close_env(envs)


async def core_fanout(url: str, n: int, warmup: np.ndarray, timed: np.ndarray) -> float:
    """env-steps/s of N openenv-core clients, one session each, stepped together per vector step."""
    from openenv.core.generic_client import GenericEnvClient

    clients = [GenericEnvClient(base_url=url, message_timeout_s=CALL_TIMEOUT) for _ in range(n)]
    done = [False] * n

    async def one(i: int, action: int) -> None:
        if done[i]:  # client-side autoreset: the reset is not counted as a step
            await clients[i].reset()
        result = await clients[i].step({"action": action})
        if result.reward != 1.0 or len(result.observation.get("observation", ())) != 4:
            raise RuntimeError(f"unexpected step result: {result!r}")
        done[i] = bool(result.done)

    async def run(rows: np.ndarray) -> None:
        for row in rows.tolist():
            await asyncio.gather(*(one(i, a) for i, a in enumerate(row)))

    try:
        await asyncio.gather(*(client.connect() for client in clients))
        await asyncio.gather(*(client.reset(seed=i) for i, client in enumerate(clients)))
        await run(warmup)
        start = time.perf_counter()
        await run(timed)
        return n * len(timed) / (time.perf_counter() - start)
    finally:
        await asyncio.wait_for(asyncio.gather(*(c.close() for c in clients), return_exceptions=True), 30)


def floor_fanout(urls: list[str], n: int, warmup: np.ndarray, timed: np.ndarray) -> float:
    """env-steps/s of N of our sync sessions spread over frame echo servers, stepped as ours are."""
    from openenv_gym.client import EnvClient

    clients = [EnvClient(urls[i * len(urls) // n], call_timeout=CALL_TIMEOUT) for i in range(n)]

    def run(rows: np.ndarray) -> None:
        for row in rows.tolist():
            for client, action in zip(clients, row):
                client.begin_step({"action": action})
            for client in clients:
                if client.complete().reward != 1.0:
                    raise RuntimeError("the frame echo server answered something else")

    try:
        for client in clients:
            client.reset(seed=0)  # answered with the same frame; it lets the sessions step
        run(warmup)
        start = time.perf_counter()
        run(timed)
        return n * len(timed) / (time.perf_counter() - start)
    finally:
        for client in clients:
            client.close()


def _per_call_us(fn: Callable[[], Any], calls: int = 1000, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def where_time_goes(n: int) -> str:
    """One vector step of ours at N=n, taken apart: each part timed alone, the rest by difference."""
    from gymnasium.vector.utils import batch_space

    from openenv_gym.client import EnvClient
    from openenv_gym.protocol.vector import (
        VectorResultFrame,
        VectorStepFrame,
        parse_vector_client_frame,
        parse_vector_server_frame,
    )
    from openenv_gym.spaces import mismatch
    from openenv_gym.vector.batching import join_batches, join_infos

    actions = np.zeros(n, dtype=np.int64)
    space = batch_space(gym.spaces.Discrete(2), n)
    local = gym.make_vec(ENV_ID, num_envs=n)
    local.reset(seed=0)
    env_us = _per_call_us(lambda: local.step(actions))
    result = VectorResultFrame(*local.step(actions)[:1], local.step(actions)[4], *local.step(actions)[1:4])
    local.close()
    request, reply = VectorStepFrame(actions).serialize_binary(), result.serialize_binary()

    def server() -> None:
        mismatch(space, parse_vector_client_frame(request).actions)
        result.serialize_binary()

    def client() -> None:
        mismatch(space, actions)
        VectorStepFrame(actions).serialize_binary()
        parsed = parse_vector_server_frame(reply)
        for value in (parsed.observations, parsed.rewards, parsed.terminated, parsed.truncated):
            join_batches([value])
        join_infos([(0, n, parsed.infos)], n)

    server_us, client_us = _per_call_us(server), _per_call_us(client)
    over_ws = {"transport": "ws"} if "transport" in inspect.signature(RemoteVectorEnv.__init__).parameters else {}
    envs = gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium", **over_ws)
    try:
        envs.reset(seed=0)
        total_us = _per_call_us(lambda: envs.step(actions), calls=300)
    finally:
        envs.close()
    echo = start_frame_echo()
    try:
        floor = EnvClient(echo.url, call_timeout=CALL_TIMEOUT)
        floor.reset(seed=0)
        floor_us = _per_call_us(lambda: floor.step({"action": 0}), calls=300)
        floor.close()
    finally:
        echo.stop()
    rest = total_us - env_us - server_us - client_us
    return (
        f"N={n:<5} total {total_us:6.0f} = vector env step {env_us:5.0f} + server decode/check/encode "
        f"{server_us:4.0f} + client check/encode/decode/join {client_us:4.0f} + round trip and sessions "
        f"{rest:5.0f} (a frame echo round trip alone: {floor_us:.0f})"
    )


def overlap(n: int, work_s: float, steps: int) -> str:
    """Lockstep on one server against EnvPool-style send/recv over two, with the learner's work.

    The work is a ``time.sleep`` (as a GPU forward pass, it leaves the CPU to the servers) of
    ``work_s`` per ``n`` sub-envs: in lockstep it adds to every step; with ``batch_size = n / 2``
    half of it follows each ``recv()``, while the other server steps.
    """
    lockstep = gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium")
    try:
        lockstep.reset(seed=0)
        actions = np.zeros(n, dtype=np.int64)
        start = time.perf_counter()
        for _ in range(steps):
            lockstep.step(actions)
            time.sleep(work_s)
        lockstep_rate = n * steps / (time.perf_counter() - start)
    finally:
        lockstep.close()
    half = n // 2
    envs = gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, batch_size=half, vector_backend="gymnasium")
    try:
        envs.async_reset(seed=0)
        actions = np.zeros(half, dtype=np.int64)
        start = time.perf_counter()
        for _ in range(2 * steps):
            infos = envs.recv()[4]
            time.sleep(work_s / 2)
            envs.send(actions, infos["env_id"])
        async_rate = half * 2 * steps / (time.perf_counter() - start)
    finally:
        envs.close()
    return (
        f"N={n:<5} {work_s * 1e3:g} ms of learner work per N sub-envs: lockstep {lockstep_rate:>10,.0f}, "
        f"send/recv (batch_size={half}, 2 servers) {async_rate:>10,.0f} env-steps/s: {async_rate / lockstep_rate:.2f}x"
    )


def machine() -> str:
    return f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"


def fmt(value: float | str) -> str:
    return f"{value:>12,.0f}" if isinstance(value, float) else f"{value:>12}"


def median_rate(rates: dict[tuple[str, int, int], float], label: str, n: int, rounds: int) -> float | str:
    """The median env-steps/s of ``label`` at ``n`` over the rounds that measured it, else ``"-"``."""
    measured = [rates[label, n, r] for r in range(rounds) if (label, n, r) in rates]
    return float(statistics.median(measured)) if measured else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument(
        "--envs", default="1,8,64,256,1024", help="comma-separated num_envs values (default 1,8,64,256,1024)"
    )
    p.add_argument(
        "--steps", type=int, default=None, help="timed vector steps per config (default 1000 for N <= 8, 300 above)"
    )
    p.add_argument("--warmup", type=int, default=200, help="untimed vector steps before timing")
    p.add_argument("--rounds", type=int, default=3, help="turns each config takes per N (default 3)")
    p.add_argument(
        "--quick", action="store_true", help="smoke run: one round, 30 warm-up and 50 (N <= 8) or 20 timed steps"
    )
    args = p.parse_args()
    warnings.filterwarnings("ignore", message=".*precision lowered by casting")  # EnvPool's own spaces
    sizes = [int(x) for x in args.envs.split(",") if x.strip()]
    if args.quick:
        args.warmup, args.rounds = 30, 1

    def steps_for(n: int) -> int:
        if args.steps is not None:
            return args.steps
        return (50 if n <= 8 else 20) if args.quick else (1000 if n <= 8 else 300)

    params = inspect.signature(RemoteVectorEnv.__init__).parameters
    codecs: list[str | None] = ["json", "binary"] if "codec" in params else [None]
    has_batched = "batched" in params
    has_backends = "vector_backend" in params
    per_env = {"vector_backend": "per_env"} if has_backends else {}
    ours = {
        codec: "ours batched" + (" per env" if has_backends else "") + (f", codec={codec}" if codec else "")
        for codec in codecs
    }
    for label in ours.values():
        MAX_ENVS[label] = MAX_BATCHED_PER_ENV
    try:
        import envpool
    except ImportError as exc:
        envpool = None
        print(f"EnvPool is not installed ({exc}): pip install -e '.[envpool]'")
    rows = [SYNC, ASYNC, GYM_VEC, ENVPOOL, VECTOR, *ours.values(), PER_SESSION, CORE, FLOOR]

    print(
        f"python {platform.python_version()}, gymnasium {version('gymnasium')}, openenv-gym "
        f"{version('openenv-gym')}, openenv-core {version('openenv-core')}, numpy {np.__version__}"
    )
    print(
        f"{machine()}; {ENV_ID}; num_envs {sizes}; {args.rounds} round(s); {args.warmup} warm-up steps, "
        f"then timed steps {[steps_for(n) for n in sizes]}; random actions from default_rng(0); autoreset NextStep"
    )
    print(
        f"RemoteVectorEnv: codec= {'accepted' if 'codec' in params else 'not accepted (default only)'}, "
        f"batched= {'accepted' if has_batched else 'not accepted'}; default servers: one per CPU"
    )

    rates: dict[tuple[str, int, int], float] = {}  # (config, N, round) -> env-steps/s
    errors: list[str] = []
    server: Server | None = None
    echoes: list[Server] = []
    try:
        try:
            server = start_openenv_core("--env", "cartpole")
        except Exception as exc:  # measure the rest without it
            errors.append(f"{CORE}: {type(exc).__name__}: {str(exc)[:500]}")
        try:
            for _ in range(os.cpu_count() or 1):
                echoes.append(start_frame_echo())
        except Exception as exc:
            errors.append(f"{FLOOR}: {type(exc).__name__}: {str(exc)[:500]}")
        for n in sizes:
            rng = np.random.default_rng(0)
            warm = rng.integers(0, 2, size=(args.warmup, n))
            timed = rng.integers(0, 2, size=(steps_for(n), n))
            makers: dict[str, Callable[[], Any]] = {
                SYNC: lambda n=n: gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID)] * n),
                ASYNC: lambda n=n: gym.vector.AsyncVectorEnv([lambda: gym.make(ENV_ID)] * n),
                GYM_VEC: lambda n=n: gym.make_vec(ENV_ID, num_envs=n),
            }
            if envpool is not None:
                makers[ENVPOOL] = lambda n=n: envpool.make_gymnasium(
                    ENV_ID, num_envs=n, seed=0, num_threads=os.cpu_count() or 1
                )
            if has_backends:
                makers[VECTOR] = lambda n=n: gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, vector_backend="gymnasium")
            for codec, label in ours.items():
                kwargs = {"codec": codec, **per_env} if codec else per_env
                makers[label] = lambda n=n, kw=kwargs: gym.make_vec(f"openenv/{ENV_ID}", num_envs=n, **kw)
            if has_batched:
                makers[PER_SESSION] = lambda n=n: gym.make_vec(
                    f"openenv/{ENV_ID}", num_envs=n, batched=False, **per_env
                )
            for label, turn in ((label, turn) for turn in range(args.rounds) for label in rows):
                if n > MAX_ENVS.get(label, n):
                    continue
                try:
                    if label == CORE:
                        if server is None:
                            raise RuntimeError("openenv-core's server did not start")
                        url = server.url
                        rate = asyncio.run(asyncio.wait_for(core_fanout(url, n, warm, timed), RUN_TIMEOUT))
                    elif label == FLOOR:
                        if len(echoes) != (os.cpu_count() or 1):
                            raise RuntimeError("the frame echo servers did not start")
                        urls = [echo.url for echo in echoes[:n]]
                        rate = floor_fanout(urls, n, warm, timed)
                    elif label in makers:
                        rate = time_vector(makers[label], n, warm, timed)
                    else:
                        continue
                    rates[label, n, turn] = rate
                    print(f"  round {turn + 1}: {label:<32} N={n:<3} {rate:>12,.0f} env-steps/s", flush=True)
                except Exception as exc:  # report the failure, measure the rest
                    errors.append(f"{label}, N={n}: {type(exc).__name__}: {str(exc)[:500]}")
                    print(
                        f"  round {turn + 1}: FAILED {label:<25} N={n:<3} {type(exc).__name__}: {str(exc)[:200]}",
                        flush=True,
                    )
    finally:
        for started in [server, *echoes]:
            if started is not None:
                started.stop()

    print(f"\n{'env-steps/s':<34}" + "".join(f"{'N=' + str(n):>12}" for n in sizes))
    for label in rows:
        if label == PER_SESSION and not has_batched:
            print(f"{label:<34}  n/a (not available: RemoteVectorEnv takes no batched=)")
            continue
        print(f"{label:<34}" + "".join(fmt(median_rate(rates, label, n, args.rounds)) for n in sizes))
    for error in errors:
        print(f"error: {error}")

    at = 64 if 64 in sizes else max(sizes)

    def ratio(a: str, b: str, target: float | None, what: str = "") -> None:
        both = [r for r in range(args.rounds) if (a, at, r) in rates and (b, at, r) in rates]
        per_round = [rates[a, at, r] / rates[b, at, r] for r in both]
        text = "    n/a"
        if per_round:
            spread = f" (rounds {min(per_round):.2f}-{max(per_round):.2f})" if len(per_round) > 1 else ""
            mid = statistics.median(per_round)
            verdict = f"target >= {target:g}x -> {'met' if mid >= target else 'NOT met'}" if target else f"({what})"
            text = f"{mid:>7.2f}x{spread:<20} {verdict}"
        print(f"  {a + ' / ' + b:<58}{text}")

    print(f"\nratios at N={at}" + ("" if at == 64 else " (64 not measured; targets are for 64)"))
    for label in ours.values():
        ratio(label, ASYNC, 10)
        ratio(label, SYNC, 0.5)
    ratio(PER_SESSION, CORE, 4)
    ratio(VECTOR, SYNC, 2)
    for at in (n for n in sizes if n > 64):
        print(f"ratios at N={at}")
        ratio(VECTOR, ENVPOOL, 1.0 if at == 256 else None, "no target at this N")
        ratio(VECTOR, SYNC, 4 if at == 256 else None, "no target at this N")
        ratio(VECTOR, GYM_VEC, None, "the same vector env in-process: what the wire costs")
    at = 64 if 64 in sizes else max(sizes)
    print("what the targets ask of this machine (no targets):")
    ratio(SYNC, ASYNC, None, "10x AsyncVectorEnv is 10 / this x the in-process SyncVectorEnv")
    ratio(FLOOR, CORE, None, "the most a per-session client gets over openenv-core on this transport")
    ratio(PER_SESSION, FLOOR, None, "ours per-session, as a share of that floor")
    if has_backends:
        print("\nwhere a step of ours, server-side vector env, spends its time (us per step, medians of 5 runs):")
        for n in (n for n in sizes if n >= 64):
            print("  " + where_time_goes(n))
        print("\nEnvPool-style asynchronous stepping, with the learner's work overlapping the servers' (no target):")
        for n in (n for n in sizes if n >= 64):
            print("  " + overlap(n, 0.001, 50 if args.quick else 300))
    print(f"\nafter the run: {machine()}")


if __name__ == "__main__":
    main()
