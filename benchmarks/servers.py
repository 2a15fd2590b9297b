"""Server processes for the benchmarks: spawn, wait for ``/health``, stop; ours and openenv-core's.

Also the per-configuration result the session benchmarks share (calls/s per round, pooled
latencies), the ``met`` / ``NOT met`` word their target lines print, and what a server's process
tree holds (its processes, their memory and CPU time, read from ``/proc``: Linux only).

Imported by the benchmark scripts, which run from the repository root as
``.venv/bin/python benchmarks/<name>.py`` (their folder is then on ``sys.path``).
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import IO

__all__ = [
    "ECHO",
    "REPO_ROOT",
    "SPAWNED",
    "START_TIMEOUT",
    "Result",
    "Server",
    "TreeSample",
    "descendants",
    "met",
    "spawn",
    "start_frame_echo",
    "start_openenv_core",
    "start_ours",
    "stop_all",
    "stop_all_on_sigterm",
    "tree_sample",
    "wait_health",
]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60.0  # openenv-core imports gradio on start-up: allow for a cold disk
ECHO = "openenv_gym.envs.echo:EchoEnvironment"


@dataclass
class Server:
    """A server child process, its log, its URL and how long it took to answer ``/health``."""

    name: str
    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    url: str = ""
    startup_s: float = 0.0

    def stop(self) -> None:
        for escalate in (self.proc.terminate, self.proc.kill):  # each wait bounded
            if self.proc.poll() is None:
                escalate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()

    def fail(self, why: str) -> RuntimeError:
        """Stop the server and return an error carrying the end of its log."""
        try:
            self.log.seek(0)
            tail = self.log.read()[-2000:].decode(errors="replace")
        except (OSError, ValueError):
            tail = ""
        self.stop()
        return RuntimeError(f"{self.name} server: {why}\n{tail}")


SPAWNED: list[Server] = []  # every server started, so a script's `finally` can stop them all


def stop_all() -> None:
    """Stop every server spawned so far (for a script's ``finally``); idempotent."""
    for server in SPAWNED:
        server.stop()


def stop_all_on_sigterm() -> None:
    """Make SIGTERM exit through the script's ``finally`` (as Ctrl-C does), so its servers are stopped."""

    def exit_(signum: int, frame: object) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, exit_)


def spawn(name: str, cmd: list[str], url: str = "", env: dict[str, str] | None = None) -> tuple[Server, float]:
    """Start ``cmd`` from the repository root; without a ``url`` its stdout is piped (ours reports its port there)."""
    log = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    stdout = subprocess.PIPE if not url else log
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=log, env=env, cwd=REPO_ROOT)
    server = Server(name, proc, log, url)
    SPAWNED.append(server)
    return server, t0


def wait_health(server: Server, t0: float) -> None:
    """Poll ``GET /health`` until 200 (recording the start-up time), within START_TIMEOUT."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    while time.perf_counter() < t0 + START_TIMEOUT:
        if server.proc.poll() is not None:
            raise server.fail(f"exited with code {server.proc.returncode}")
        try:
            with opener.open(server.url + "/health", timeout=1.0) as reply:
                if reply.status == 200:
                    server.startup_s = time.perf_counter() - t0
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.005)
    raise server.fail("no 200 from /health in time")


def _free_port() -> int:
    """A free loopback port (for servers that do not report the one they get for port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_ours(target: str = ECHO, *serve_args: str) -> Server:
    """``openenv_gym serve target [serve_args]`` on a free loopback port (the one its ready line reports), healthy."""
    cmd = [sys.executable, "-m", "openenv_gym", "serve", target, "--port", "0", "--host", "127.0.0.1", *serve_args]
    server, t0 = spawn("ours", cmd)
    assert server.proc.stdout is not None
    buffer = b""
    with selectors.DefaultSelector() as sel:
        sel.register(server.proc.stdout, selectors.EVENT_READ)
        while b"\n" not in buffer:
            if time.perf_counter() > t0 + START_TIMEOUT:
                raise server.fail("no ready line in time")
            if sel.select(0.1):
                chunk = os.read(server.proc.stdout.fileno(), 4096)
                if not chunk:
                    raise server.fail("closed stdout before it was ready")
                buffer += chunk
    # "openenv-gym server listening on http://127.0.0.1:PORT (WebSocket ...)"
    server.url = buffer.split(b"\n", 1)[0].decode().split(" on ", 1)[1].split()[0]
    wait_health(server, t0)
    return server


def start_openenv_core(*args: str) -> Server:
    """openenv-core's own server (``tests/openenv_core_server.py``, options ``args``), healthy.

    ``start_openenv_core("--env", "mcp")`` serves its stock ``MCPEnvironment`` with FastMCP tools;
    ``"--max-sessions", "256"`` raises its limit of concurrent sessions.
    """
    port = _free_port()
    cmd = [sys.executable, "-m", "tests.openenv_core_server", str(port), *args]
    env = dict(os.environ, ENABLE_WEB_INTERFACE="false")
    server, t0 = spawn("openenv-core", cmd, f"http://127.0.0.1:{port}", env)
    wait_health(server, t0)
    return server


def start_frame_echo(reply_bytes: int | None = None) -> Server:
    """``benchmarks/frame_echo_server.py``: a WebSocket server that answers every frame without work
    (with ``reply_bytes``, a binary message of that size)."""
    port = _free_port()
    cmd = [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "frame_echo_server.py"), str(port)]
    cmd += [] if reply_bytes is None else [str(reply_bytes)]
    server, t0 = spawn("frame echo", cmd, f"http://127.0.0.1:{port}")
    wait_health(server, t0)
    return server


@dataclass
class Result:
    """One configuration's measurements: a rate per round, and every call's latency pooled."""

    rates: list[float] = field(default_factory=list)  # calls/s, one per round
    lat: list[float] = field(default_factory=list)  # seconds, all rounds pooled

    def rate(self) -> float:
        return statistics.median(self.rates)

    def ms(self, q: float) -> float:
        xs = sorted(self.lat)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def _parents() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:  # it exited meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name, in parentheses, may hold spaces
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(*pids: int) -> list[int]:
    """``pids`` and every live process under them (children, their children...)."""
    children = _parents()
    found, stack = [], list(pids)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


@dataclass
class TreeSample:
    """Processes of some server trees at one moment: their count, summed RSS and PSS, CPU time."""

    procs: int
    rss_mib: float  # VmRSS summed: pages shared between the processes count in each
    pss_mib: float  # Pss summed: shared pages split among the processes that map them
    cpu_s: float  # user + system seconds, with those of the children they reaped


def tree_sample(*pids: int) -> TreeSample:
    """Count, memory and CPU time of ``pids`` and all their descendants (those that exit meanwhile are skipped)."""
    procs, rss_kib, pss_kib, ticks = 0, 0, 0, 0
    for pid in descendants(*pids):
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{pid}/smaps_rollup") as f:
                pss = next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs, rss_kib, pss_kib = procs + 1, rss_kib + rss, pss_kib + pss
        ticks += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return TreeSample(procs, rss_kib / 1024, pss_kib / 1024, ticks / os.sysconf("SC_CLK_TCK"))


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"
