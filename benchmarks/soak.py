"""Soak: a realistic load held for a set time, sampling every server's RSS, fds, threads and children.

Four servers, each started as ``openenv_gym serve TARGET`` (as ``openenv-gym serve``) on loopback:
``CartPole-v1``, ``openenv/Coding-v0``'s ``CodingEnvironment`` (bubblewrap sandbox),
``openenv/CodingTools-v0``'s ``CodingToolsEnvironment`` (tools, same sandbox) and the Echo env
(tools). One asyncio load generator holds ``--sessions`` sessions at once over them (256 by
default), each a loop of its own kind:

* ``cartpole``: a plain session (``make_async("openenv/CartPole-v1", base_url=...)``), random actions;
* ``vector``: ``gym.make_vec("openenv/CartPole-v1", num_envs=8, base_url=...)``, a batch session
  of 8 sub-envs (half with the server-side ``CartPoleVectorEnv``, half ``per_env``), stepped in a
  thread of its own; a sub-env reported lost (``info["remote_failure"]``) counts as an error;
* ``coding``: ``openenv/Coding-v0`` steps with small programs (printing, a loop, an exception, a
  wrong solution), each run in the session's sandbox worker;
* ``tools``: ``openenv/CodingTools-v0`` tool calls (``run_python``, ``run_tests``, ``submit``);
* ``echo``: ``openenv/Echo-v0`` tool calls (``echo_message``) through the tool face;
* ``mcp``: MCP JSON-RPC ``tools/call`` frames on the Echo server over a bare WebSocket.

Each loop waits a random think time between actions (an agent's turn; ``--pace`` scales them),
resets when an episode ends and at random, and reconnects at random (closes its session and
opens a new one). Every result is checked; a failed call or a wrong result is a client error,
recorded, and its loop reconnects.

Every ``--interval`` seconds a sampler thread reads, from ``/proc``, each server process's RSS,
open fds and threads, its live descendants (sandbox workers) and their summed RSS. Before the
load: a warm-up burst of every kind, then the baseline (the counts once they are steady). After
the load its sessions close and the counts must come back to the baseline (waited for, bounded).
Printed: actions per kind, client errors (must be 0), and per server and metric the
least-squares slope over the load after ``--warmup`` seconds, per minute and relative to the
mean, and how much that slope amounts to over the whole run. Linux only (``/proc``). Run from the
repository root::

    .venv/bin/python benchmarks/soak.py --duration 1800 --out soak.json   # the benchmark (30 min)
    .venv/bin/python benchmarks/soak.py --duration 60 --sessions 64       # a short run

``tests/test_soak.py`` runs a short one and asserts the counts return to their baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import platform
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib.metadata import version
from typing import Any

from servers import ECHO, Server, descendants, start_ours, stop_all, stop_all_on_sigterm
from soak_drivers import (
    PROGRAMS,
    VECTOR_ENVS,
    Driver,
    MCPDriver,
    PlainDriver,
    Stats,
    VectorDriver,
    check_cartpole,
    check_coding,
    check_echo,
    check_tools,
    echo_call,
    tool_call,
)

__all__ = [
    "KINDS",
    "METRICS",
    "Plan",
    "Report",
    "Sample",
    "Soak",
    "main",
    "plan",
    "run_soak",
    "sample",
    "slope",
]

#: Each kind of session: the server it runs on, its share of the sessions, its mean think time
#: (seconds between actions), and its chances per action to reset or reconnect instead.
KINDS: dict[str, dict[str, Any]] = {
    "cartpole": {"server": "cartpole", "share": 96, "think": 0.5, "reset": 0.02, "reconnect": 0.01},
    "vector": {"server": "cartpole", "share": 16, "think": 0.25, "reset": 0.01, "reconnect": 0.005},
    "coding": {"server": "coding", "share": 32, "think": 3.0, "reset": 0.05, "reconnect": 0.03},
    "tools": {"server": "tools", "share": 32, "think": 3.0, "reset": 0.05, "reconnect": 0.03},
    "echo": {"server": "echo", "share": 48, "think": 0.5, "reset": 0.02, "reconnect": 0.01},
    "mcp": {"server": "echo", "share": 32, "think": 0.5, "reset": 0.02, "reconnect": 0.01},
}
#: What each server runs (``openenv_gym serve TARGET``).
TARGETS = {
    "cartpole": "CartPole-v1",
    "coding": "openenv_gym.envs.coding:CodingEnvironment",
    "tools": "openenv_gym.envs.coding_tools:CodingToolsEnvironment",
    "echo": ECHO,
}
METRICS = ("rss_mib", "fds", "threads", "children", "tree_rss_mib")
SETTLE_TIMEOUT = 90.0  # for the counts to come back to the baseline once the sessions are closed
STOP_TIMEOUT = 120.0  # for every session loop to finish its action and close once the load stops


@dataclass(frozen=True)
class Plan:
    """How many sessions of each kind, and the ``--max-sessions`` of each server."""

    sessions: dict[str, int]
    max_sessions: dict[str, int]


def plan(total: int) -> Plan:
    """``total`` sessions split over the kinds by their shares (at least one each); room on every
    server for twice its sessions (a reconnect opens before the server has seen the old one go)."""
    if total < len(KINDS):
        raise ValueError(f"--sessions must be at least {len(KINDS)} (one per kind), got {total}")
    shares = sum(k["share"] for k in KINDS.values())
    counts = {name: max(1, round(total * k["share"] / shares)) for name, k in KINDS.items()}
    largest = max(counts, key=lambda name: counts[name])
    counts[largest] += total - sum(counts.values())  # rounding: the total is exact
    seats: Counter[str] = Counter()
    for name, n in counts.items():
        seats[KINDS[name]["server"]] += n * (VECTOR_ENVS if name == "vector" else 1)
    return Plan(counts, {server: 2 * seats[server] + 8 for server in TARGETS})


@dataclass
class Sample:
    """One server's process at one moment (``children``: its live descendants, sandbox workers)."""

    t: float  # seconds since the load started (negative before it)
    rss_mib: float
    fds: int
    threads: int
    children: int
    tree_rss_mib: float  # VmRSS of the server and all its descendants


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.split(":", 1) for line in f if ":" in line)


def sample(pid: int, t: float = 0.0) -> Sample:
    """Read ``pid``'s RSS, fds and threads and its descendants from ``/proc`` (a process that exits
    meanwhile is left out)."""
    status = _status(pid)
    rss = int(status["VmRSS"].split()[0]) / 1024
    tree = rss
    kids = [p for p in descendants(pid) if p != pid]
    for kid in kids:
        try:
            tree += int(_status(kid).get("VmRSS", "0 kB").split()[0]) / 1024
        except (OSError, ValueError):
            continue
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return Sample(t, rss, fds, int(status["Threads"]), len(kids), tree)


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``(t, y)`` points (0.0 for fewer than two distinct ``t``)."""
    if len(points) < 2:
        return 0.0
    mean_t = statistics.fmean(t for t, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / var


class Sampler:
    """A thread sampling every server's process every ``interval`` seconds into ``samples``."""

    def __init__(self, servers: dict[str, Server], interval: float, origin: float) -> None:
        self.servers = servers
        self.interval = interval
        self.origin = origin
        self.samples: dict[str, list[Sample]] = {name: [] for name in servers}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def take(self) -> dict[str, Sample]:
        t = time.monotonic() - self.origin
        return {name: sample(server.proc.pid, t) for name, server in self.servers.items()}

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for name, s in self.take().items():
                self.samples[name].append(s)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)


@dataclass
class Report:
    """A soak's figures (``asdict`` of it is the ``--out`` JSON)."""

    config: dict[str, Any]
    actions: dict[str, int]
    errors: dict[str, int]
    error_messages: list[str]
    baseline: dict[str, dict[str, float]]  # server -> metric -> value before the load
    final: dict[str, dict[str, float]]  # server -> metric -> value after the load, once settled
    settled: bool  # every server's fds, threads and children came back to the baseline
    settle_s: float
    slopes: dict[str, dict[str, dict[str, float]]]  # server -> metric -> mean, per_min, rel_per_min, rel_run
    samples: dict[str, list[dict[str, float]]]

    @property
    def total_errors(self) -> int:
        return sum(self.errors.values())


COUNTS = ("fds", "threads", "children")  # must come back exactly to the baseline


class Soak:
    """Servers, session loops and sampler of one soak run (see :func:`run_soak`)."""

    def __init__(
        self,
        sessions: int = 256,
        duration: float = 60.0,
        interval: float = 5.0,
        warmup: float = 60.0,
        pace: float = 1.0,
        seed: int = 0,
        log: Callable[[str], None] = print,
    ) -> None:
        self.plan = plan(sessions)
        self.sessions, self.duration, self.interval = sessions, duration, interval
        self.warmup, self.pace, self.seed, self.log = warmup, pace, seed, log
        self.stats = Stats()
        self.servers: dict[str, Server] = {}
        self.vector_pool = concurrent.futures.ThreadPoolExecutor(
            self.plan.sessions["vector"] + 4, thread_name_prefix="soak-vector"
        )

    # sessions

    async def open(self, kind: str, index: int) -> Driver:
        url = self.servers[KINDS[kind]["server"]].url
        if kind == "cartpole":
            return await PlainDriver.open("openenv/CartPole-v1", url, lambda rng: rng.randrange(2), check_cartpole)
        if kind == "vector":
            return await VectorDriver.open(url, "auto" if index % 2 == 0 else "per_env", self.vector_pool)
        if kind == "coding":
            return await PlainDriver.open("openenv/Coding-v0", url, lambda rng: rng.choice(PROGRAMS), check_coding)
        if kind == "tools":
            return await PlainDriver.open("openenv/CodingTools-v0", url, tool_call, check_tools, tool_calls=True)
        if kind == "echo":
            return await PlainDriver.open("openenv/Echo-v0", url, echo_call, check_echo, tool_calls=True)
        if kind == "mcp":
            return await MCPDriver.open(url)
        raise ValueError(f"unknown session kind {kind!r}")

    async def loop(self, kind: str, index: int, stop: asyncio.Event) -> None:
        """One session's life until ``stop``: open, reset, think and act, reconnect at random."""
        rng = random.Random(f"{self.seed}-{kind}-{index}")
        spec = KINDS[kind]
        think = spec["think"] * self.pace
        # Spread the openings and the first actions, so the sessions do not act in lockstep.
        await asyncio.sleep(rng.uniform(0, min(think, 2.0)))
        while not stop.is_set():
            driver: Driver | None = None
            try:
                driver = await self.open(kind, index)
                self.stats.actions[f"{kind} open"] += 1
                await driver.reset()
                self.stats.actions[f"{kind} reset"] += 1
                while not stop.is_set():
                    try:
                        await asyncio.wait_for(stop.wait(), rng.uniform(0.2, 1.8) * think)
                        break
                    except TimeoutError:
                        pass
                    draw = rng.random()
                    if draw < spec["reconnect"]:
                        self.stats.actions[f"{kind} reconnect"] += 1
                        break
                    if draw < spec["reconnect"] + spec["reset"]:
                        await driver.reset()
                        self.stats.actions[f"{kind} reset"] += 1
                    else:
                        await driver.step(rng)
                        self.stats.actions[f"{kind} step"] += 1
            except Exception as exc:
                self.stats.error(kind, exc)
                await asyncio.sleep(1.0)  # then a new session
            finally:
                if driver is not None:
                    try:
                        await driver.close()
                    except Exception as exc:
                        self.stats.error(kind, exc)

    async def burst(self, per_kind: int) -> None:
        """Warm-up: ``per_kind`` sessions of every kind opened at once, a few actions each, closed."""

        async def one(kind: str, index: int) -> None:
            rng = random.Random(f"warm-{kind}-{index}")
            driver = await self.open(kind, index)
            try:
                await driver.reset()
                for _ in range(3):
                    await driver.step(rng)
            finally:
                await driver.close()

        await asyncio.gather(*(one(kind, i) for kind in KINDS for i in range(per_kind)))

    async def load(self, sampler: Sampler) -> None:
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(self.loop(kind, i, stop), name=f"soak-{kind}-{i}")
            for kind, n in self.plan.sessions.items()
            for i in range(n)
        ]
        started = time.monotonic()
        next_report = started + 60
        while time.monotonic() < started + self.duration:
            await asyncio.sleep(min(1.0, started + self.duration - time.monotonic()))
            if time.monotonic() >= next_report:
                next_report += 60
                steps = sum(v for k, v in self.stats.actions.items() if k.endswith("step"))
                last = {name: s[-1] for name, s in sampler.samples.items() if s}
                self.log(
                    f"  {time.monotonic() - started:6.0f} s: {steps} steps, {sum(self.stats.errors.values())} errors; "
                    + ", ".join(
                        f"{n} {s.rss_mib:.0f} MiB/{s.fds} fds/{s.threads} thr/{s.children} ch" for n, s in last.items()
                    )
                )
        stop.set()
        _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT)
        for task in pending:  # a loop stuck past every call's timeout: an error in itself
            self.stats.error(task.get_name(), TimeoutError("did not stop within STOP_TIMEOUT"))
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # the run

    def start_servers(self) -> None:
        for name, target in TARGETS.items():
            self.servers[name] = start_ours(target, "--max-sessions", str(self.plan.max_sessions[name]))

    def steady(
        self, sampler: Sampler, timeout: float, want: dict[str, Sample] | None = None
    ) -> tuple[dict[str, Sample], bool]:
        """The samples once the counts hold still over three samples a second apart (or, with
        ``want``, once they equal its counts), and whether that happened within ``timeout``."""
        deadline = time.monotonic() + timeout
        history: list[dict[str, Sample]] = []
        while True:
            now = sampler.take()
            history.append(now)
            counts = [{n: tuple(getattr(s, m) for m in COUNTS) for n, s in h.items()} for h in history[-3:]]
            if want is not None:
                if all(
                    tuple(getattr(now[n], m) for m in COUNTS) == tuple(getattr(want[n], m) for m in COUNTS) for n in now
                ):
                    return now, True
            elif len(counts) == 3 and counts[0] == counts[1] == counts[2]:
                return now, True
            if time.monotonic() > deadline:
                return now, False
            time.sleep(1.0)

    def run(self) -> Report:
        self.log(
            f"soak: {self.sessions} sessions ({', '.join(f'{n} {k}' for k, n in self.plan.sessions.items())}), "
            f"{self.duration:g} s, sampled every {self.interval:g} s, slopes after {self.warmup:g} s"
        )
        self.start_servers()
        origin = time.monotonic()
        sampler = Sampler(self.servers, self.interval, origin)
        burst = max(2, min(8, self.sessions // 32))
        asyncio.run(self._with_executor(self.burst(burst)))
        baseline, _ = self.steady(sampler, 30.0)
        self.log("baseline: " + _counts_line(baseline))
        sampler.origin = origin = time.monotonic()
        with sampler:
            asyncio.run(self._with_executor(self.load(sampler)))
        load_samples = {name: list(s) for name, s in sampler.samples.items()}
        t_closed = time.monotonic()
        final, settled = self.steady(sampler, SETTLE_TIMEOUT, want=baseline)
        settle_s = time.monotonic() - t_closed
        self.log(f"after ({settle_s:.1f} s{'' if settled else ', NOT settled'}): " + _counts_line(final))
        slopes = {}
        for name, samples in load_samples.items():
            # The load's samples only: none of the warm-up, none taken while the sessions closed.
            kept = [s for s in samples if self.warmup <= s.t <= self.duration] or samples
            span_min = (kept[-1].t - kept[0].t) / 60 if kept else 0.0
            half = kept[len(kept) // 2 :]
            slopes[name] = {}
            for metric in METRICS:
                points = [(s.t / 60, float(getattr(s, metric))) for s in kept]
                mean = statistics.fmean(y for _, y in points) if points else 0.0
                per_min = slope(points)
                slopes[name][metric] = {
                    "mean": mean,
                    "per_min": per_min,
                    "rel_per_min": per_min / mean if mean else 0.0,
                    "rel_run": per_min * span_min / mean if mean else 0.0,
                    # A leak keeps its slope; an allocator settling in flattens: the second half alone.
                    "per_min_2nd_half": slope([(s.t / 60, float(getattr(s, metric))) for s in half]),
                    "first": float(getattr(kept[0], metric)) if kept else 0.0,
                    "last": float(getattr(kept[-1], metric)) if kept else 0.0,
                }
        return Report(
            config={
                "sessions": self.plan.sessions,
                "max_sessions": self.plan.max_sessions,
                "duration_s": self.duration,
                "interval_s": self.interval,
                "warmup_s": self.warmup,
                "pace": self.pace,
                "seed": self.seed,
                "vector_envs": VECTOR_ENVS,
            },
            actions=dict(sorted(self.stats.actions.items())),
            errors=dict(self.stats.errors),
            error_messages=self.stats.error_messages,
            baseline={n: _metrics(s) for n, s in baseline.items()},
            final={n: _metrics(s) for n, s in final.items()},
            settled=settled,
            settle_s=settle_s,
            slopes=slopes,
            samples={n: [asdict(s) for s in ss] for n, ss in load_samples.items()},
        )

    async def _with_executor(self, work: Any) -> None:
        # make_async reads /schema in a worker thread: room for every session's reconnect at once.
        executor = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="soak-io")
        asyncio.get_running_loop().set_default_executor(executor)
        await work

    def close(self) -> None:
        self.vector_pool.shutdown(wait=False, cancel_futures=True)
        stop_all()


def _metrics(s: Sample) -> dict[str, float]:
    return {m: float(getattr(s, m)) for m in METRICS}


def _counts_line(samples: dict[str, Sample]) -> str:
    return ", ".join(
        f"{n} {s.rss_mib:.0f} MiB/{s.fds} fds/{s.threads} thr/{s.children} ch ({s.tree_rss_mib:.0f} MiB tree)"
        for n, s in samples.items()
    )


def run_soak(**kwargs: Any) -> Report:
    """Start the servers, warm up, take the baseline, hold the load, wait for the counts to settle;
    stop the servers (always) and return the figures. Keyword arguments: :class:`Soak`'s."""
    soak = Soak(**kwargs)
    try:
        return soak.run()
    finally:
        soak.close()


def print_report(report: Report) -> None:
    print()
    print("actions: " + ", ".join(f"{k} {n}" for k, n in report.actions.items()))
    print(f"client errors: {report.total_errors}" + (f" {report.errors}" if report.errors else ""))
    for message in report.error_messages:
        print(f"  {message}")
    print()
    print(
        f"{'server':<9} {'metric':<13} {'baseline':>9} {'first':>8} {'last':>8} {'mean':>8} {'slope/min':>10} "
        f"{'rel/min':>9} {'over run':>9} {'2nd half':>10} {'after':>8}"
    )
    for name, metrics in report.slopes.items():
        for metric, fit in metrics.items():
            print(
                f"{name:<9} {metric:<13} {report.baseline[name][metric]:9.1f} {fit['first']:8.1f} {fit['last']:8.1f} "
                f"{fit['mean']:8.1f} {fit['per_min']:+10.4f} {fit['rel_per_min']:+9.3%} {fit['rel_run']:+9.2%} "
                f"{fit['per_min_2nd_half']:+10.4f} {report.final[name][metric]:8.1f}"
            )
    print("(slopes: least squares over the load after the warm-up, per minute; '2nd half': over its second half)")
    print()
    print(f"counts back to baseline after the load: {'yes' if report.settled else 'NO'} ({report.settle_s:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--duration", type=float, default=1800.0, help="seconds of load (default: 1800)")
    parser.add_argument("--sessions", type=int, default=256, help="sessions held at once (default: 256)")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples (default: 5)")
    parser.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="seconds of load left out of the slopes (default: a tenth of the run, at most 120)",
    )
    parser.add_argument(
        "--pace", type=float, default=1.0, help="think times' scale: below 1, more actions/s (default: 1)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the figures and every sample there as JSON")
    args = parser.parse_args()
    warmup = min(120.0, args.duration / 10) if args.warmup is None else args.warmup
    print(
        f"Python {platform.python_version()}, websockets {version('websockets')}, gymnasium {version('gymnasium')}; "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    stop_all_on_sigterm()
    report = run_soak(
        sessions=args.sessions,
        duration=args.duration,
        interval=args.interval,
        warmup=warmup,
        pace=args.pace,
        seed=args.seed,
    )
    print_report(report)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(asdict(report), f, indent=1)
        print(f"figures and samples: {args.out}")
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
