"""Single-session benchmark: our server + clients vs openenv-core's, on the same trivial echo env.

Everything is measured in one run, so the ratios hold even on a noisy shared machine:

* steps/s and per-step round-trip latency (p50/p99) over one WebSocket session, for ours
  (``openenv_gym serve`` + ``AsyncEnvClient`` / ``EnvClient``) and for openenv-core
  (``create_app`` under uvicorn + ``GenericEnvClient`` / ``GenericEnvClient(...).sync()``);
* server start-up: process spawn until ``GET /health`` answers 200 (median of ``--starts``);
* server idle RSS: ``VmRSS`` once the server has served one session and idled ~1 s.

Targets, printed and never asserted: ours >= 2x openenv-core's steps/s; start-up <= 0.5 s;
idle RSS <= 50 MiB. Run from the repository root::

    .venv/bin/python benchmarks/single_session.py            # full run
    .venv/bin/python benchmarks/single_session.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from importlib.metadata import version
from typing import Any

from servers import Result, Server, met, start_openenv_core, start_ours, stop_all

ACTION = {"message": "hello"}
SESSION_TIMEOUT = 600.0
CALL_TIMEOUT = 30.0


def start_openenv(async_step: bool = False) -> Server:
    # The same openenv-core echo env the interoperability tests use.
    return start_openenv_core(*(["--async-step"] if async_step else []))


def vm_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024  # kB -> MiB


def check(result: Any) -> None:
    # Both clients' results have .observation (a dict) and .reward: time real echoes, not errors.
    obs = result.observation
    if obs.get("echoed_message") != "hello" or obs.get("message_length") != 5 or abs(result.reward - 0.5) > 1e-9:
        raise RuntimeError(f"unexpected step result: {result!r}")


async def session_async(client: Any, warmup: int, steps: int) -> tuple[float, list[float]]:
    await client.connect()
    try:
        await client.reset()
        check(await client.step(ACTION))
        for _ in range(warmup):
            await client.step(ACTION)
        lat: list[float] = []
        start = time.perf_counter()
        for _ in range(steps):
            t = time.perf_counter()
            await client.step(ACTION)
            lat.append(time.perf_counter() - t)
        return time.perf_counter() - start, lat
    finally:
        await client.close()


def session_sync(client: Any, warmup: int, steps: int) -> tuple[float, list[float]]:
    client.connect()
    try:
        client.reset()
        check(client.step(ACTION))
        for _ in range(warmup):
            client.step(ACTION)
        lat: list[float] = []
        start = time.perf_counter()
        for _ in range(steps):
            t = time.perf_counter()
            client.step(ACTION)
            lat.append(time.perf_counter() - t)
        return time.perf_counter() - start, lat
    finally:
        client.close()


def make_client(side: str, kind: str, url: str) -> Any:
    """An unconnected client with connect/reset/step/close; imported late so no server loads both."""
    if side == "ours":
        from openenv_gym import AsyncEnvClient, EnvClient  # the package root exports both

        return (AsyncEnvClient if kind == "async" else EnvClient)(url, call_timeout=CALL_TIMEOUT)
    from openenv.core.generic_client import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=CALL_TIMEOUT)
    return client if kind == "async" else client.sync()


def run_session(side: str, kind: str, url: str, warmup: int, steps: int) -> tuple[float, list[float]]:
    client = make_client(side, kind, url)
    if kind == "async":
        # One overall bound on top of the clients' own per-call timeouts.
        return asyncio.run(asyncio.wait_for(session_async(client, warmup, steps), SESSION_TIMEOUT))
    return session_sync(client, warmup, steps)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--steps", type=int, default=3000, help="timed steps per configuration and round")
    p.add_argument("--warmup", type=int, default=200, help="untimed steps before timing")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; steps/s is the median round")
    p.add_argument("--starts", type=int, default=5, help="server starts for the start-up median")
    p.add_argument("--quick", action="store_true", help="smoke run: few steps, one round, two starts")
    p.add_argument(
        "--openenv-async-step",
        action="store_true",
        help="give openenv-core's echo env a step_async, so its server skips the thread-pool hop",
    )
    args = p.parse_args()
    if args.quick:
        args.steps, args.warmup, args.rounds, args.starts = 200, 20, 1, 2

    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, openenv-core "
        f"{version('openenv-core')}, websockets {version('websockets')}, uvicorn {version('uvicorn')}"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.steps} steps x {args.rounds} rounds after {args.warmup} warm-up steps; action {ACTION}"
    )
    print(
        "openenv-core echo env: "
        + (
            "step_async (on the event loop)"
            if args.openenv_async_step
            else "sync step (its server runs it in a thread pool; ours runs on the loop)"
        )
    )
    starters = {"ours": start_ours, "openenv-core": lambda: start_openenv(args.openenv_async_step)}
    configs = [("ours", "async"), ("openenv-core", "async"), ("ours", "sync"), ("openenv-core", "sync")]
    results = {config: Result() for config in configs}
    startup: dict[str, list[float]] = {name: [] for name in starters}
    servers: dict[str, Server] = {}
    try:
        for start in starters.values():  # untimed: warms the page cache and .pyc files
            start().stop()
        # Interleave the sides so machine noise hits both alike; keep each side's last server.
        for i in range(args.starts):
            for name, start in starters.items():
                servers[name] = start()
                startup[name].append(servers[name].startup_s)
                if i < args.starts - 1:
                    servers[name].stop()
        # Idle RSS: one session with the side's own sync client, then ~1 s idle.
        for name, srv in servers.items():
            run_session(name, "sync", srv.url, args.warmup, args.warmup)
        time.sleep(1.0)
        rss = {name: vm_rss_mib(srv.proc.pid) for name, srv in servers.items()}
        for _ in range(args.rounds):
            for side, kind in configs:
                total, lat = run_session(side, kind, servers[side].url, args.warmup, args.steps)
                results[side, kind].rates.append(args.steps / total)
                results[side, kind].lat.extend(lat)
    finally:
        stop_all()

    print(f"\n{'one session: server / client':<30}{'steps/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for side, kind in configs:
        r = results[side, kind]
        print(f"{side + ' / ' + kind:<30}{r.rate():>9.0f}{r.ms(0.50):>9.3f}{r.ms(0.99):>9.3f}")
    for kind in ("async", "sync"):
        a, b = results["ours", kind], results["openenv-core", kind]
        ratio = a.rate() / b.rate()
        print(
            f"{'ratio ours/openenv, ' + kind:<30}{ratio:>8.2f}x{a.ms(0.5) / b.ms(0.5):>8.2f}x"
            f"{a.ms(0.99) / b.ms(0.99):>8.2f}x   target: steps/s >= 2x -> {met(ratio >= 2)}"
        )

    print(f"\nserver start-up, spawn -> GET /health 200 (median of {args.starts}; min..max)")
    for name, times in startup.items():
        med = statistics.median(times)
        note = f"target: <= 0.5 s -> {met(med <= 0.5)}" if name == "ours" else "(reference)"
        print(f"  {name:<14}{med:>7.3f} s    ({min(times):.3f}..{max(times):.3f})   {note}")
    print("server idle RSS (VmRSS after one session and ~1 s idle)")
    for name, mib in rss.items():
        note = f"target: <= 50 MiB -> {met(mib <= 50)}" if name == "ours" else "(reference)"
        print(f"  {name:<14}{mib:>7.1f} MiB  {note}")


if __name__ == "__main__":
    main()
