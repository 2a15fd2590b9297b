"""Server processes for the benchmarks: spawn, wait for ``/health``, stop; openenv-core's included.

Imported by the benchmark scripts, which run from the repository root as
``.venv/bin/python benchmarks/<name>.py`` (their folder is then on ``sys.path``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO

__all__ = [
    "REPO_ROOT",
    "SPAWNED",
    "START_TIMEOUT",
    "Server",
    "spawn",
    "start_frame_echo",
    "start_openenv_core",
    "wait_health",
]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60.0  # openenv-core imports gradio on start-up: allow for a cold disk


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


def start_openenv_core(*args: str) -> Server:
    """openenv-core's own server (``tests/openenv_core_server.py``, options ``args``), healthy."""
    port = _free_port()
    cmd = [sys.executable, "-m", "tests.openenv_core_server", str(port), *args]
    env = dict(os.environ, ENABLE_WEB_INTERFACE="false")
    server, t0 = spawn("openenv-core", cmd, f"http://127.0.0.1:{port}", env)
    wait_health(server, t0)
    return server


def start_frame_echo() -> Server:
    """``benchmarks/frame_echo_server.py``: a WebSocket server that answers every frame without work."""
    port = _free_port()
    cmd = [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "frame_echo_server.py"), str(port)]
    server, t0 = spawn("frame echo", cmd, f"http://127.0.0.1:{port}")
    wait_health(server, t0)
    return server
