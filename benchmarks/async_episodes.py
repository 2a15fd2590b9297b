"""Concurrent-episode benchmark: our AsyncEnvPool against openenv-core's MCPToolClient, 1 to 256 at once.

An episode is a reset and then ``K`` tool calls (``--calls``, default 8), checked one by one; each
of ``C`` concurrent episode loops (``C`` in 1, 16, 64, 256) runs episodes back to back. Measured
in one run, for each ``C``:

* (a) ours: ``AsyncEnvPool("openenv/Echo-v0", size=C, tool_calls=True)``: ``env = await
  pool.acquire()``, ``await env.reset()``, ``K`` x ``await env.step({"name": "echo_message",
  "arguments": {"message": "hello"}})``, ``await env.aclose()`` (the session goes back to the
  pool). Its servers take the pool's default layout, one per CPU with an even share of the
  sessions; the benchmark starts them (``openenv_gym serve``) and hands the pool their URLs, so
  it can read their memory;
* (b) openenv-core: ``C`` ``MCPToolClient`` sessions on its stock ``MCPEnvironment`` under uvicorn
  (``tests/openenv_core_server.py --env mcp --max-sessions C``), each looping ``await
  client.reset()``, ``K`` x ``await client.call_tool("echo_message", message="hello")``;
* (c) ours on ``openenv/CodingTools-v0``: the same pool episodes with ``run_python(code="print(1)")``
  (each session runs its own bubblewrap sandbox worker: two processes a session). No openenv-core
  counterpart: its numbers stand alone.

Printed per configuration: episodes/s and tool calls/s (the median of ``--rounds`` rounds), the
p50 episode time, and CPU time per tool call of the client (this process, where all the episode
loops run) and of the server processes, which shows which side a rate is bound by. The sessions
are opened untimed; each round runs one untimed episode per session, then ``n`` timed episodes per
loop (``n`` from the untimed one's duration, about ``--seconds`` a round, bounded). Sides take turns
round by round on the same servers, fresh ones per ``C``.

Memory per open session, both sides: the server processes' RSS (with all their descendants: our
servers' sandbox workers, openenv-core's uvicorn process) with ``C`` sessions open, each having
run one episode, minus their idle RSS (after one episode per server, its session closed and ~1 s
idle), divided by ``C``. PSS (shared pages split among the processes mapping them) is printed too.

CodingTools holds two sandbox processes per session; a level is skipped with a printed note when
the memory measured so far says it needs more than half of the memory available, or too many
processes for the user's limit. On a 2-CPU, 24 GiB machine 256 sessions fit: 514 processes,
about 4.1 GiB RSS (16 MiB a session; 8 MiB PSS), each session's sandbox started in its first reset.

Targets, printed and never asserted: ours >= 5x openenv-core's tool calls/s with 64 concurrent
sessions; ours <= 1/3 of openenv-core's memory (RSS) per open session, at the largest ``C`` both
ran. Run from the repository root::

    .venv/bin/python benchmarks/async_episodes.py            # full run: C = 1, 16, 64, 256; 3 rounds
    .venv/bin/python benchmarks/async_episodes.py --quick    # smoke run: C = 1, 64 (CodingTools 1, 16); 1 round
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from servers import Server, TreeSample, met, start_openenv_core, start_ours, stop_all, stop_all_on_sigterm, tree_sample

from openenv_gym import AsyncEnvPool
from openenv_gym.providers.fleet import server_layout

ECHO_ID, ECHO_TARGET = "openenv/Echo-v0", "openenv_gym.envs.echo:EchoEnvironment"
CODING_ID, CODING_TARGET = "openenv/CodingTools-v0", "openenv_gym.envs.coding_tools:CodingToolsEnvironment"
MESSAGE = "hello"
CODE = "print(1)"
LEVELS, QUICK_LEVELS = (1, 16, 64, 256), (1, 64)
CODING_LEVELS, QUICK_CODING_LEVELS = (1, 16, 64, 256), (1, 16)
TARGET_LEVEL, TARGET_RATE, TARGET_MEMORY = 64, 5.0, 1 / 3

CALL_TIMEOUT = 60.0  # per call, on both clients
OPEN_TIMEOUT = 300.0  # opening C sessions, and the untimed episode each (sandboxes start there)
RUN_TIMEOUT = 600.0  # one timed run of C loops
MAX_EPISODES = 2000  # per loop and run: the bound on top of the time budget
OPEN_CONCURRENCY = 32  # openenv-core sessions opened at once (as our pool does)
SETTLE_S = 1.0  # idle time before the idle memory is read
CODING_GUESS_MIB = 20.0  # memory per CodingTools session assumed until one is measured


def check_echo(text: Any) -> None:
    if text != MESSAGE:
        raise RuntimeError(f"unexpected echo_message result: {text!r}"[:2000])


def check_coding(text: Any) -> None:
    try:
        out = json.loads(text)
    except (TypeError, ValueError):
        out = None
    if not isinstance(out, dict) or out.get("stdout") != "1\n" or out.get("exit_code") != 0:
        raise RuntimeError(f"unexpected run_python result: {text!r}"[:2000])


@dataclass(frozen=True)
class Workload:
    """One env's episodes: the tool called ``calls`` times after a reset, and its result's check."""

    env_id: str
    target: str
    tool: str
    arguments: dict[str, str]
    check: Callable[[Any], None]
    calls: int


class OursSide:
    """``size`` sessions of an :class:`AsyncEnvPool` on the given servers; episodes acquire and release."""

    name = "ours"

    def __init__(self, work: Workload, urls: list[str], size: int) -> None:
        self.work = work
        self.action = {"name": work.tool, "arguments": work.arguments}
        self.pool = AsyncEnvPool(work.env_id, size=size, base_urls=urls, tool_calls=True, call_timeout=CALL_TIMEOUT)

    async def open(self) -> None:
        await self.pool.start()

    async def _run(self, env: Any) -> None:
        try:
            await env.reset()
            for _ in range(self.work.calls):
                text, _, terminated, truncated, _ = await env.step(self.action)
                self.work.check(text)
                if terminated or truncated:
                    raise RuntimeError(f"the episode ended early: terminated={terminated}, truncated={truncated}")
        finally:
            await env.aclose()

    async def warm(self) -> None:
        """One episode on every session at once (all acquired first, so every one runs one)."""
        envs = [await self.pool.acquire(timeout=OPEN_TIMEOUT) for _ in range(self.pool.size)]
        await asyncio.gather(*(self._run(env) for env in envs))

    async def episode(self, loop: int) -> None:
        await self._run(await self.pool.acquire(timeout=CALL_TIMEOUT))

    async def close(self) -> None:
        await self.pool.aclose()


class CoreSide:
    """``size`` openenv-core ``MCPToolClient`` sessions; loop ``i`` runs its episodes on client ``i``."""

    name = "openenv-core"

    def __init__(self, work: Workload, url: str, size: int) -> None:
        from openenv.core.mcp_client import MCPToolClient

        self.work = work
        self.clients = [MCPToolClient(base_url=url, message_timeout_s=CALL_TIMEOUT) for _ in range(size)]

    async def open(self) -> None:
        gate = asyncio.Semaphore(OPEN_CONCURRENCY)

        async def connect(client: Any) -> None:
            async with gate:
                await client.connect()

        await asyncio.gather(*(connect(client) for client in self.clients))

    async def episode(self, loop: int) -> None:
        client = self.clients[loop]
        await client.reset()
        for _ in range(self.work.calls):
            self.work.check(await client.call_tool(self.work.tool, **self.work.arguments))  # raises on a tool error

    async def warm(self) -> None:
        await asyncio.gather(*(self.episode(i) for i in range(len(self.clients))))

    async def close(self) -> None:
        await asyncio.gather(*(client.close() for client in self.clients), return_exceptions=True)


Side = OursSide | CoreSide


@dataclass
class Run:
    """One timed run of ``C`` loops: what it did, in how long, and the CPU time it took on each side."""

    episodes: int
    calls: int
    seconds: float
    client_cpu_s: float
    server_cpu_s: float


@dataclass
class Config:
    """One side at one concurrency: its runs, pooled episode times and memory with the sessions open."""

    runs: list[Run] = field(default_factory=list)
    episode_s: list[float] = field(default_factory=list)
    idle: TreeSample | None = None
    open: TreeSample | None = None
    servers: int = 0

    def rate(self, what: str) -> float:
        return statistics.median(getattr(run, what) / run.seconds for run in self.runs)

    def p50_ms(self) -> float:
        return statistics.median(self.episode_s) * 1e3

    def cpu_ms_per_call(self, what: str) -> float:
        calls = sum(run.calls for run in self.runs)
        return sum(getattr(run, what) for run in self.runs) / calls * 1e3

    def per_session_mib(self, level: int, what: str = "rss_mib") -> float:
        assert self.idle is not None and self.open is not None
        return (getattr(self.open, what) - getattr(self.idle, what)) / level


def client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(side: Side, pids: list[int], level: int, into: Config, sample: bool, seconds: float) -> None:
    """Open the side's sessions, run one untimed episode on each (memory is read then), then time ``n`` per loop."""
    try:
        await asyncio.wait_for(side.open(), OPEN_TIMEOUT)
        t0 = time.perf_counter()
        await asyncio.wait_for(side.warm(), OPEN_TIMEOUT)
        warm_s = time.perf_counter() - t0
        if sample:
            into.open = tree_sample(*pids)
        n = max(2, min(MAX_EPISODES, math.ceil(seconds / warm_s)))
        durations: list[float] = []

        async def loop(i: int) -> None:
            for _ in range(n):
                t = time.perf_counter()
                await side.episode(i)
                durations.append(time.perf_counter() - t)

        cpu0, server0, t0 = client_cpu_s(), tree_sample(*pids).cpu_s, time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(loop(i) for i in range(level))), RUN_TIMEOUT)
        elapsed = time.perf_counter() - t0
        cpu1, server1 = client_cpu_s(), tree_sample(*pids).cpu_s
    finally:
        await side.close()
    episodes = n * level
    into.runs.append(Run(episodes, episodes * side.work.calls, elapsed, cpu1 - cpu0, server1 - server0))
    into.episode_s.extend(durations)


async def warm_servers(side: Side) -> None:
    """One episode per session of ``side``, then its sessions closed: the servers' lazy set-up is done."""
    try:
        await asyncio.wait_for(side.open(), OPEN_TIMEOUT)
        await asyncio.wait_for(side.warm(), OPEN_TIMEOUT)
    finally:
        await side.close()


def start_our_servers(target: str, level: int) -> list[Server]:
    """The servers ``AsyncEnvPool(size=level)`` would start: one per CPU, each taking its share."""
    count, per_server = server_layout(level, None, None)
    return [start_ours(target, "--max-sessions", str(per_server), "--idle-timeout", "none") for _ in range(count)]


def stop(servers: list[Server]) -> None:
    for server in servers:
        server.stop()


async def idle_sample(pids: list[int], procs: int) -> TreeSample:
    """The servers' tree once the sessions closed have left it (``procs`` processes) and ~1 s passed."""
    deadline = time.perf_counter() + 10.0
    while tree_sample(*pids).procs > procs and time.perf_counter() < deadline:  # sandboxes still stopping
        await asyncio.sleep(0.1)
    await asyncio.sleep(SETTLE_S)
    return tree_sample(*pids)


async def echo_level(work: Workload, level: int, rounds: int, seconds: float) -> dict[str, Config]:
    """Ours and openenv-core at ``level`` concurrent episodes, on fresh servers, sides in turn."""
    ours, core = Config(), Config()
    servers = start_our_servers(work.target, level)
    theirs = start_openenv_core("--env", "mcp", "--max-sessions", str(level))
    try:
        urls, our_pids, core_pids = [s.url for s in servers], [s.proc.pid for s in servers], [theirs.proc.pid]
        ours.servers, core.servers = len(servers), 1
        await warm_servers(OursSide(work, urls, len(servers)))
        await warm_servers(CoreSide(work, theirs.url, 1))
        ours.idle, core.idle = await idle_sample(our_pids, len(our_pids)), await idle_sample(core_pids, 1)
        for r in range(rounds):
            await measure(OursSide(work, urls, level), our_pids, level, ours, r == 0, seconds)
            await measure(CoreSide(work, theirs.url, level), core_pids, level, core, r == 0, seconds)
    finally:
        stop([*servers, theirs])
    return {"ours": ours, "openenv-core": core}


async def coding_level(work: Workload, level: int, rounds: int, seconds: float) -> Config:
    ours = Config()
    servers = start_our_servers(work.target, level)
    try:
        urls, pids = [s.url for s in servers], [s.proc.pid for s in servers]
        ours.servers = len(servers)
        await warm_servers(OursSide(work, urls, len(servers)))
        ours.idle = await idle_sample(pids, len(pids))
        for r in range(rounds):
            await measure(OursSide(work, urls, level), pids, level, ours, r == 0, seconds)
    finally:
        stop(servers)
    return ours


def mem_available_mib() -> float:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:")) / 1024


def coding_room(level: int, per_session_mib: float, per_session_procs: float) -> str | None:
    """Why ``level`` CodingTools sessions would not fit this machine now, or None if they do."""
    need, available = per_session_mib * level, mem_available_mib()
    if need > available / 2:
        return f"needs ~{need:.0f} MiB, more than half of the {available:.0f} MiB available"
    procs, limit = per_session_procs * level, resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if limit != resource.RLIM_INFINITY and procs > limit / 2:
        return f"needs ~{procs:.0f} processes, more than half of the user's limit of {limit}"
    return None


def table_row(level: int, side: str, c: Config) -> str:
    return (
        f"{level:>5}  {side:<13}{c.servers:>4}{c.rate('episodes'):>12.1f}{c.rate('calls'):>13.0f}{c.p50_ms():>11.1f}"
        f"{c.cpu_ms_per_call('client_cpu_s'):>10.3f}{c.cpu_ms_per_call('server_cpu_s'):>10.3f}"
    )


TABLE_HEAD = (
    f"{'C':>5}  {'side':<13}{'srv':>4}{'episodes/s':>12}{'calls/s':>13}{'p50 ep ms':>11}"
    f"{'cpu cli':>10}{'cpu srv':>10}   (cpu: ms per tool call)"
)


def memory_row(level: int, side: str, c: Config) -> str:
    assert c.idle is not None and c.open is not None
    return (
        f"{level:>5}  {side:<13}{c.idle.procs:>6}{c.open.procs:>6}{c.idle.rss_mib:>10.1f}{c.open.rss_mib:>10.1f}"
        f"{c.per_session_mib(level) * 1024:>12.0f}{c.per_session_mib(level, 'pss_mib') * 1024:>12.0f}"
    )


MEMORY_HEAD = (
    f"{'C':>5}  {'side':<13}{'procs':>6}{'open':>6}{'idle MiB':>10}{'open MiB':>10}"
    f"{'KiB/sess':>12}{'PSS KiB/s':>12}   (procs: idle, with C open; RSS summed over the trees)"
)


async def run_all(args: argparse.Namespace) -> None:
    echo = Workload(ECHO_ID, ECHO_TARGET, "echo_message", {"message": MESSAGE}, check_echo, args.calls)
    coding = Workload(CODING_ID, CODING_TARGET, "run_python", {"code": CODE}, check_coding, args.calls)
    results: dict[int, dict[str, Config]] = {}
    for level in args.levels:
        results[level] = await echo_level(echo, level, args.rounds, args.seconds)
        print(f"  echo C={level} done", flush=True)
    coding_results: dict[int, Config] = {}
    notes: list[str] = []
    per_mib, per_procs = CODING_GUESS_MIB, 2.0
    for level in args.coding_levels:
        why = coding_room(level, per_mib, per_procs)
        if why is not None:
            notes.append(f"CodingTools C={level} skipped: {why}")
            continue
        c = coding_results[level] = await coding_level(coding, level, args.rounds, args.seconds)
        assert c.idle is not None and c.open is not None
        per_mib, per_procs = c.per_session_mib(level), (c.open.procs - c.idle.procs) / level
        print(f"  CodingTools C={level} done", flush=True)

    print(f"\n(a, b) Echo tools, episode = reset + {args.calls} x echo_message(message={MESSAGE!r})")
    print(TABLE_HEAD)
    for level, sides in results.items():
        for side, c in sides.items():
            print(table_row(level, side, c))
    print("\nratio ours/openenv-core: tool calls/s (= episodes/s), median of rounds (min..max); p50 episode time")
    ratios: dict[int, float] = {}
    for level, sides in results.items():
        ours, core = sides["ours"], sides["openenv-core"]
        per_round = [a.calls / a.seconds / (b.calls / b.seconds) for a, b in zip(ours.runs, core.runs, strict=True)]
        ratios[level] = statistics.median(per_round)
        print(
            f"{level:>5}  {ratios[level]:>7.2f}x ({min(per_round):.2f}..{max(per_round):.2f})"
            f"   p50 episode {ours.p50_ms() / core.p50_ms():.2f}x"
        )
    print(f"\n(c) CodingTools, episode = reset + {args.calls} x run_python(code={CODE!r}); ours only")
    print(TABLE_HEAD)
    for level, c in coding_results.items():
        print(table_row(level, "ours", c))
    for note in notes:
        print(f"  note: {note}")

    print("\nmemory per open session: (server trees' RSS with C sessions open - idle RSS) / C")
    print(MEMORY_HEAD)
    for level, sides in results.items():
        for side, c in sides.items():
            print(memory_row(level, side, c))
    for level, c in coding_results.items():
        print(memory_row(level, "ours Coding", c))
    mem_ratios = {
        level: sides["ours"].per_session_mib(level) / sides["openenv-core"].per_session_mib(level)
        for level, sides in results.items()
    }
    print("ratio ours/openenv-core, RSS per session: " + ", ".join(f"C={k}: {v:.2f}x" for k, v in mem_ratios.items()))

    print("\ntargets, ours against openenv-core:")
    if TARGET_LEVEL in ratios:
        ok = ratios[TARGET_LEVEL] >= TARGET_RATE
        print(f"  tool calls/s at C={TARGET_LEVEL} >= {TARGET_RATE:g}x: {ratios[TARGET_LEVEL]:.2f}x -> {met(ok)}")
    else:
        print(f"  tool calls/s at C={TARGET_LEVEL} >= {TARGET_RATE:g}x: not measured in this run")
    top = max(mem_ratios)
    print(
        f"  RSS per open session at C={top} <= 1/3: {mem_ratios[top]:.2f}x -> {met(mem_ratios[top] <= TARGET_MEMORY)}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--calls", type=int, default=8, help="tool calls per episode, after its reset (default 8)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per configuration; rates are the median")
    p.add_argument(
        "--seconds", type=float, default=3.0, help="about how long one timed run lasts (at least 2 episodes a loop)"
    )
    p.add_argument("--levels", type=int, nargs="+", help=f"concurrent episodes for Echo (default {LEVELS})")
    p.add_argument(
        "--coding-levels", type=int, nargs="*", help=f"concurrent episodes for CodingTools (default {CODING_LEVELS})"
    )
    p.add_argument("--quick", action="store_true", help="smoke run: C = 1 and 64 (CodingTools 1, 16), one short round")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.seconds = 1, 0.5
    if args.levels is None:
        args.levels = QUICK_LEVELS if args.quick else LEVELS
    if args.coding_levels is None:
        args.coding_levels = QUICK_CODING_LEVELS if args.quick else CODING_LEVELS
    if min([*args.levels, *args.coding_levels, args.calls, args.rounds]) < 1:
        p.error("levels, --calls and --rounds must be at least 1")
    if args.calls > 15:
        p.error("--calls: CodingTools-v0 ends an episode at its 16th tool call; at most 15")

    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, openenv-core "
        f"{version('openenv-core')}, fastmcp {version('fastmcp')}, websockets {version('websockets')}, "
        f"uvicorn {version('uvicorn')}"
    )
    count = os.cpu_count()
    print(
        f"{count} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{mem_available_mib():.0f} MiB available; {args.rounds} round(s) of ~{args.seconds:g} s per configuration; "
        f"ours: one server per CPU (at most one per session), openenv-core: one uvicorn server; "
        f"every client in this process, one event loop"
    )
    stop_all_on_sigterm()
    try:
        asyncio.run(run_all(args))
    finally:
        stop_all()


if __name__ == "__main__":
    main()
