"""Harness env benchmark: what ``openenv/Harness-v0`` adds to each of its agent's model calls, the
agent's start-up, and how many concurrent harness episodes one machine holds.

The env runs in this process (``HarnessEnvironment``, no client or server in front: those cost what
any env's step costs, see ``single_session.py``), and the policy answers each call at once, so
what is timed is the env. Measured in one run, in interleaved rounds:

* **cost per model call**, two ways:

  - seen by the agent: a minimal agent (the standard library's HTTP client, as in the test suite)
    times each of its chat-completions calls, request sent to reply read, on the env's endpoint
    (on the host, and confined by its sandbox, through the relay), against the **reference**: the
    same agent calling a bare loopback echo server that answers a fixed completion at once. The
    ratio is what the env adds to a plain HTTP round trip;
  - in the env, for any agent: from the agent's request received and parsed by the endpoint to
    the observation returned, plus from ``step`` called to the reply handed to the endpoint's
    loop; for the minimal agent and for mini-swe-agent (whose calls carry its whole history).

  Target, printed and never asserted: p50 of the agent-seen cost on the host <= 5 ms.
* **start-up**: mini-swe-agent's ``reset`` (workspace, agent started, its first call received),
  in its sandbox and on the host.
* **concurrency**: N = 1, 2, 4, 8... mini-swe-agent episodes at once, each env stepped by a thread
  of its own, until ``--max-agents``, or the memory left could not hold twice as many, or the
  per-call p50 in the env passes 20x that of one agent: the resident memory of each agent (the
  sum over its processes, read from ``/proc``) and the per-call p50 at each N.

Run from the repository root::

    .venv/bin/python benchmarks/harness.py            # full run (about 3 minutes)
    .venv/bin/python benchmarks/harness.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

from openenv_gym.envs.harness import AGENTS, AgentLaunch, HarnessEnvironment, ReplyAction
from openenv_gym.sandbox import find_bwrap
from openenv_gym.server.model_endpoint import PendingCall

TARGET_MS = 5.0
TASK = "clamp-values"
LATENCIES_FILE = "latencies.json"
PROBE = "benchmark-probe"
#: The minimal agent: N calls, each timed, the times written to its workspace as it exits.
PROBE_AGENT = """
import json, os, sys, time, urllib.request
url, calls, times = os.environ["OPENAI_BASE_URL"] + "/chat/completions", int(sys.argv[1]), []
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "next?"}]}).encode()
for _ in range(calls):
    t = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, body, {"content-type": "application/json"})) as reply:
        json.load(reply)
    times.append(time.perf_counter() - t)
with open("latencies.json", "w") as file:
    json.dump(times, file)
"""
COMPLETION = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    }
).encode()
BASH_TRUE = ReplyAction(content="Next.", tool_calls=[{"function": {"name": "bash", "arguments": {"command": "true"}}}])
SUBMIT = ReplyAction(
    content="Done.",
    tool_calls=[{"function": {"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}}],
)


@dataclass
class Timings:
    """Seconds, all rounds pooled."""

    lat: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        xs = sorted(self.lat)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3 if xs else float("nan")


class StampedQueue(queue.Queue[PendingCall]):
    """The endpoint's call queue, noting when each call was received (parsed and queued)."""

    def __init__(self) -> None:
        super().__init__()
        self.received: dict[int, float] = {}

    def put(self, item: PendingCall, block: bool = True, timeout: float | None = None) -> None:
        self.received[id(item)] = time.perf_counter()
        super().put(item, block, timeout)


class TimedEpisode:
    """One env's episodes, each call timed in the env: from the agent's request received to the
    observation returned, plus from ``step`` called to the reply handed to the endpoint's loop."""

    def __init__(self, env: HarnessEnvironment) -> None:
        self.env = env
        self.stamps = StampedQueue()
        self.handed = 0.0
        self.observed = 0.0  # the pending call's received-to-observation seconds (0: not stamped)

    def reset(self) -> float:
        """Start an episode; its start-up, seconds. Its later calls are stamped."""
        t = time.perf_counter()
        self.env.reset(options={"task_id": TASK})
        startup = time.perf_counter() - t
        run = self.env.agent_run
        assert run is not None
        # Safe now: the agent waits for the answer to its first call, so nothing is being queued.
        self.stamps = StampedQueue()
        run.endpoint._calls = self.stamps
        reply = run.endpoint.reply

        def timed_reply(pending: PendingCall, action: Any) -> None:
            reply(pending, action)
            self.handed = time.perf_counter()

        setattr(run.endpoint, "reply", timed_reply)  # noqa: B010 - an instance's method, wrapped
        self.observed = 0.0
        return startup

    def step(self, action: ReplyAction, into: Timings | None = None) -> bool:
        """Answer the pending call (its cost into ``into``); whether the episode goes on."""
        t_step = time.perf_counter()
        obs = self.env.step(action)
        returned = time.perf_counter()
        if into is not None and self.observed:
            into.lat.append(self.observed + self.handed - t_step)
        if obs.done or obs.truncated:
            return False
        pending = self.env._pending
        received = self.stamps.received.pop(id(pending), None)
        self.observed = returned - received if received is not None else 0.0
        return True

    def memory(self) -> tuple[int, int]:
        """Resident and proportional (shared pages split among their users) bytes of the agent's
        processes, each summed."""
        run = self.env.agent_run
        rss = pss = 0
        for pid in run.leftover_pids() if run else []:
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            for line in rollup.splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        return rss, pss


@contextmanager
def probe_agent(calls: int) -> Iterator[str]:
    """The minimal agent, registered for the run; its name."""
    AGENTS[PROBE] = AgentLaunch(PROBE, lambda prompt, home, base_url: [sys.executable, "-c", PROBE_AGENT, str(calls)])
    try:
        yield PROBE
    finally:
        del AGENTS[PROBE]


class EchoHandler(BaseHTTPRequestHandler):
    """The reference: a fixed completion at once, whatever was asked."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(COMPLETION)))
        self.end_headers()
        self.wfile.write(COMPLETION)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def probe_against_echo(url: str, calls: int, into: Timings, workdir: Path) -> None:
    """The minimal agent's calls to the echo server, as it times them."""
    variables = {**os.environ, "OPENAI_BASE_URL": url}
    subprocess.run([sys.executable, "-c", PROBE_AGENT, str(calls)], cwd=workdir, env=variables, check=True, timeout=300)
    into.lat.extend(json.loads((workdir / LATENCIES_FILE).read_text()))


def probe_episode(env: HarnessEnvironment, in_env: Timings, seen: Timings) -> None:
    """One episode of the minimal agent: every call answered at once; its own times read at the end."""
    episode = TimedEpisode(env)
    episode.reset()
    while episode.step(ReplyAction(content="ok"), in_env):
        pass
    run = env.agent_run
    assert run is not None
    seen.lat.extend(json.loads((run.workspace / LATENCIES_FILE).read_text())[1:])  # the first is the start-up


def mini_episode(env: HarnessEnvironment, calls: int, in_env: Timings) -> float:
    """One mini-swe-agent episode: ``calls`` replies running ``true``, then its submission; its start-up."""
    episode = TimedEpisode(env)
    startup = episode.reset()
    for _ in range(calls):
        if not episode.step(BASH_TRUE, in_env):
            raise RuntimeError(f"mini-swe-agent ended early: {env.agent_run.log_tail() if env.agent_run else ''}")
    episode.step(SUBMIT)
    return startup


def harness_env(agent: str, agent_sandbox: Literal["bubblewrap", "none"], calls: int) -> HarnessEnvironment:
    return HarnessEnvironment(agent=agent, agent_sandbox=agent_sandbox, max_calls=calls + 5, sandbox=GRADER_SANDBOX)


GRADER_SANDBOX: Literal["bubblewrap", "none"] = "bubblewrap" if find_bwrap() else "none"


def row(name: str, t: Timings, note: str = "") -> None:
    print(f"  {name:<56}{t.ms(0.5):>8.2f}{t.ms(0.9):>8.2f}{len(t.lat):>6}  {note}")


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Crowd:
    """What N concurrent episodes measured."""

    lat: Timings = field(default_factory=Timings)
    memory: list[tuple[int, int]] = field(default_factory=list)
    #: The machine's MemAvailable, read with each agent's memory (halfway through its episode).
    available: list[int] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def drive(self, episode: TimedEpisode, calls: int) -> None:
        """One episode, its agent's memory read halfway."""
        mine = Timings()
        try:
            episode.reset()
            for index in range(calls):
                if index == calls // 2:
                    memory, available = episode.memory(), mem_available()
                    with self.lock:
                        self.memory.append(memory)
                        self.available.append(available)
                if not episode.step(BASH_TRUE, mine):
                    raise RuntimeError("mini-swe-agent ended early")
            episode.step(SUBMIT)
        except BaseException as error:  # raised by the main thread
            self.errors.append(error)
        with self.lock:
            self.lat.lat.extend(mine.lat)


def crowd(n: int, calls: int) -> tuple[Crowd, float, int]:
    """N mini-swe-agent episodes, one thread each: what they measured, the wall time and the least
    memory available while they ran (read halfway through each episode: at the end the agents have
    exited)."""
    envs = [harness_env("mini-swe-agent", AGENT_SANDBOX, calls) for _ in range(n)]
    measured = Crowd()
    t = time.perf_counter()
    threads = [threading.Thread(target=measured.drive, args=(TimedEpisode(env), calls)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t
    available = min(measured.available, default=mem_available())
    for env in envs:
        env.close()
    if measured.errors:
        raise measured.errors[0]
    return measured, wall, available


def concurrency(max_agents: int, calls: int) -> None:
    """N mini-swe-agent episodes at once, doubling N until a limit says stop."""
    print(f"\nconcurrent mini-swe-agent episodes (agent sandbox {AGENT_SANDBOX}), {calls} calls each, a thread per env")
    print(
        f"  {'N':>4}{'RSS/agent MiB':>15}{'PSS/agent MiB':>15}{'per-call p50 ms':>17}{'p90 ms':>9}{'wall s':>8}{'MemAvailable MiB':>18}"
    )
    base_p50 = 0.0
    n = 1
    while n <= max_agents:
        measured, wall, available = crowd(n, calls)
        lat = measured.lat
        per_agent = sum(rss for rss, _ in measured.memory) / max(1, len(measured.memory))
        pss = sum(pss for _, pss in measured.memory) / max(1, len(measured.memory))
        print(
            f"  {n:>4}{per_agent / 2**20:>15.1f}{pss / 2**20:>15.1f}{lat.ms(0.5):>17.2f}{lat.ms(0.9):>9.2f}{wall:>8.1f}"
            f"{available / 2**20:>18.0f}"
        )
        base_p50 = base_p50 or lat.ms(0.5)
        if available < 2 * n * per_agent:
            print(f"  stop: the memory left ({available / 2**20:.0f} MiB) would not hold {2 * n} agents more")
            return
        if lat.ms(0.5) > 20 * base_p50:
            print(f"  stop: per-call p50 over 20x that of one agent ({base_p50:.2f} ms)")
            return
        n *= 2
    print(f"  stop: --max-agents {max_agents}")


AGENT_SANDBOX: Literal["bubblewrap", "none"] = GRADER_SANDBOX


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200, help="calls per episode of the minimal agent")
    p.add_argument("--mini-calls", type=int, default=20, help="calls per mini-swe-agent episode")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--max-agents", type=int, default=8, help="the most concurrent episodes tried")
    p.add_argument("--quick", action="store_true", help="smoke run: few calls, one round, up to 2 agents")
    args = p.parse_args()
    if args.quick:
        args.calls, args.mini_calls, args.rounds, args.max_agents = 20, 3, 1, 2
    sandboxes: list[Literal["bubblewrap", "none"]] = ["none", "bubblewrap"] if find_bwrap() else ["none"]
    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, mini-swe-agent "
        f"{version('mini-swe-agent')}{'' if find_bwrap() else ', no bubblewrap: the agent runs on the host only'}"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.rounds} rounds; per round: one minimal-agent episode of {args.calls} calls per configuration, "
        f"one mini-swe-agent episode of {args.mini_calls} calls per sandbox setting"
    )
    echo = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    echo_url = f"http://127.0.0.1:{echo.server_address[1]}/v1"
    seen = {name: Timings() for name in ("echo", *sandboxes)}
    in_env = {name: Timings() for name in (*sandboxes, *(f"mini {s}" for s in sandboxes))}
    startup = {s: Timings() for s in sandboxes}
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"harness-bench-{os.getpid()}"
    workdir.mkdir()
    try:
        with probe_agent(args.calls + 1) as probe:
            envs = {s: harness_env(probe, s, args.calls + 1) for s in sandboxes}
            minis = {s: harness_env("mini-swe-agent", s, args.mini_calls) for s in sandboxes}
            try:
                for r in range(args.rounds):
                    reference = Timings()
                    probe_against_echo(echo_url, args.calls + 1, reference, workdir)
                    seen["echo"].lat.extend(reference.lat[1:])
                    parts = [f"agent-seen ms: echo p50 {reference.ms(0.5):.2f}"]
                    for s in sandboxes:
                        mine = Timings()
                        probe_episode(envs[s], in_env[s], mine)
                        seen[s].lat.extend(mine.lat)
                        parts.append(f"env ({s}) p50 {mine.ms(0.5):.2f}")
                    for s in sandboxes:
                        mine = Timings()
                        startup[s].lat.append(mini_episode(minis[s], args.mini_calls, mine))
                        in_env[f"mini {s}"].lat.extend(mine.lat)
                        parts.append(
                            f"mini-swe-agent ({s}) start-up {startup[s].lat[-1]:.2f} s, in env p50 {mine.ms(0.5):.2f}"
                        )
                    print(f"round {r + 1}: " + ", ".join(parts))
            finally:
                for env in (*envs.values(), *minis.values()):
                    env.close()
    finally:
        echo.shutdown()
        subprocess.run(["rm", "-rf", str(workdir)], check=False)

    print(f"\n{'per model call, ms':<58}{'p50':>8}{'p90':>8}{'n':>6}")
    print("seen by the minimal agent (request sent to reply read):")
    row("bare loopback echo server", seen["echo"], "reference")
    for s in sandboxes:
        row(f"Harness env, agent sandbox {s}", seen[s], "policy answers at once")
    print("in the env (request received to observation + step to reply handed):")
    for s in sandboxes:
        row(f"minimal agent, agent sandbox {s}", in_env[s])
        row(f"mini-swe-agent, agent sandbox {s}", in_env[f"mini {s}"])
    print(f"\n{'mini-swe-agent start-up (reset to its first call), s':<58}{'p50':>8}{'max':>8}{'n':>6}")
    for s in sandboxes:
        t = startup[s]
        print(f"  {'agent sandbox ' + s:<56}{t.ms(0.5) / 1e3:>8.2f}{max(t.lat):>8.2f}{len(t.lat):>6}")
    print()
    for s in sandboxes:
        print(
            f"ratio env ({s}) / echo, agent-seen: p50 {seen[s].ms(0.5) / seen['echo'].ms(0.5):.2f}x, "
            f"p90 {seen[s].ms(0.9) / seen['echo'].ms(0.9):.2f}x; added p50 {seen[s].ms(0.5) - seen['echo'].ms(0.5):.2f} ms"
        )
    host = seen["none"].ms(0.5)
    print(
        f"target: agent-seen cost per call on the host p50 <= {TARGET_MS:g} ms -> {host:.2f} ms, {'met' if host <= TARGET_MS else 'NOT met'}"
    )
    concurrency(args.max_agents, args.mini_calls)
    print(f"after the run: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
