"""Shared test helpers: a time unit, process counting, shared-memory segments, a server on a loop thread, openenv-core servers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_gym._loop_thread import LoopThread
from openenv_gym.client import http_get_json
from openenv_gym.errors import ServerConnectError
from openenv_gym.server import EnvServer

# One unit of test time; raise OPENENV_GYM_TEST_UNIT on a slow machine instead of editing tests.
UNIT = float(os.environ.get("OPENENV_GYM_TEST_UNIT", "1.0"))
REPO_ROOT = Path(__file__).resolve().parent.parent


# Under pytest-xdist each worker process has this variable, and every process it starts inherits it.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def started_by_this_worker(pid: int) -> bool:
    """Whether ``pid`` was started, directly or not, by this pytest-xdist worker (always true
    outside xdist): its environment at exec carries the worker's name, as a server's does."""
    if XDIST_WORKER is None:
        return True
    try:
        environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"PYTEST_XDIST_WORKER={XDIST_WORKER}".encode() in environment


def all_server_pids() -> set[int]:
    """PIDs of every running `openenv_gym serve` process on this machine, whoever started it."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"openenv_gym" in cmdline and b"serve" in cmdline:
            pids.add(int(entry.name))
    return pids


def server_pids() -> set[int]:
    """PIDs of every running `openenv_gym serve` process on this machine (of this worker's, under
    pytest-xdist: a test's "no server left" must not count the servers of tests beside it)."""
    return {pid for pid in all_server_pids() if started_by_this_worker(pid)}


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid``, or None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def own_server_pids() -> set[int]:
    """PIDs of the `openenv_gym serve` processes this test process started (others on the machine,
    such as a second test run's, are not counted)."""
    return {pid for pid in all_server_pids() if parent_pid(pid) == os.getpid()}


def sandbox_pids() -> set[int]:
    """PIDs of every sandbox worker, and of every process a sandbox run left, on this machine.

    Machine-wide even under pytest-xdist (a run's processes have a clean environment and their own
    uid): a test that compares it before and after is marked ``serial``."""
    from openenv_gym.sandbox.sandbox import SANDBOX_UID_BASE

    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            uid = int((entry / "status").read_text().split("\nUid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if b"The warm worker that runs inside the sandbox" in cmdline or uid >= SANDBOX_UID_BASE:
            if pid_alive(int(entry.name)):
                pids.add(int(entry.name))
    return pids


def our_containers(client) -> list:
    """Containers labelled as owned by this test process, as the Docker SDK ``client`` lists them."""
    from openenv_gym.providers.docker.owners import OWNER_PID

    return client.containers.list(all=True, filters={"label": f"{OWNER_PID}={os.getpid()}"})


def kept_venv(venv: Path, requirements: list[str], stamp: str) -> Path:
    """The Python of a virtual environment at ``venv`` holding ``requirements`` (pip's arguments),
    for a library that cannot share the test environment; made once, and kept while ``stamp`` (what
    it was made from) is the same."""
    python, marker = venv / "bin" / "python", venv / ".installed"
    if not (python.exists() and marker.exists() and marker.read_text() == stamp):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120 * UNIT)
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
            capture_output=True,
            text=True,
            timeout=900 * UNIT,
        )
        assert installed.returncode == 0, installed.stderr[-3000:]
        marker.write_text(stamp)
    return python


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (zombies count as dead)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def free_port() -> int:
    """A loopback port free right now (for servers that do not report the one they get for port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM ``process``, then SIGKILL if it has not exited within ``timeout``; it is reaped either way."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


#: What a shared-memory segment's mapping is called in ``/proc/<pid>/maps``.
SEGMENT = "memfd:openenv-gym-shm"


def segments_mapped(pid: int) -> int:
    """How many shared-memory segments process ``pid`` has mapped."""
    with open(f"/proc/{pid}/maps") as maps:
        return sum(SEGMENT in line for line in maps)


def stop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until every thread of it is stopped (a spinning one takes a moment)."""
    os.kill(pid, signal.SIGSTOP)

    def states() -> set[str]:
        found = set()
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/stat") as stat:
                found.add(stat.read().rsplit(")", 1)[1].split()[0])
        return found

    assert wait_until(lambda: states() == {"T"}, timeout=10)


def kill_stepping_client(script: str, url: str, server_pid: int) -> None:
    """Run ``script`` with ``url`` (a client that prints ``stepping`` once it steps through shared
    memory, then steps on) in a child process, SIGKILL it mid-run, and check the server at
    ``server_pid`` lets go of the session's segment."""
    child = subprocess.Popen([sys.executable, "-c", script, url], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert select.select([child.stdout], [], [], 120)[0], "the client did not start stepping"
        assert child.stdout.readline().strip() == "stepping"
        assert segments_mapped(server_pid) == 1
        os.kill(child.pid, signal.SIGKILL)  # mid-step, most likely
        child.wait(timeout=30)
        assert wait_until(lambda: segments_mapped(server_pid) == 0, timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()


@contextlib.contextmanager
def running_server(factory: Callable[[], Any], **kwargs: Any) -> Iterator[EnvServer]:
    """An `EnvServer` on a free loopback port, served from a background event loop."""
    loop = LoopThread(name="test-server")
    server = EnvServer(factory, port=0, **kwargs)
    loop.run(server.start(), timeout=10 * UNIT)
    try:
        yield server
    finally:
        loop.run(server.stop(), timeout=20 * UNIT)
        loop.stop()


def run_async(coroutine: Any, timeout: float = 30.0) -> Any:
    """Run ``coroutine`` to completion with a timeout, on a fresh event loop."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


@contextlib.contextmanager
def openenv_core_servers(names: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """openenv-core servers (``tests/openenv_core_server.py --env NAME``), started in parallel.

    Their stderr goes to a file, not a pipe: uvicorn logs a traceback for every WebSocket a
    client closes, and an unread pipe would fill up and block the server.
    """
    processes: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    logs = tempfile.TemporaryFile()
    try:
        for name in names:
            port = free_port()  # uvicorn does not report the port it picks for port 0
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.openenv_core_server", str(port), "--env", name],
                cwd=REPO_ROOT,
                env={**os.environ, "ENABLE_WEB_INTERFACE": "false"},
                stdout=subprocess.DEVNULL,
                stderr=logs,
            )
            processes[name] = (process, f"http://127.0.0.1:{port}")
        for name, (process, url) in processes.items():

            def healthy(process: subprocess.Popen[bytes] = process, url: str = url) -> bool:
                try:
                    return http_get_json(url, "/health", timeout=1) == {"status": "healthy"}
                except ServerConnectError:
                    return process.poll() is not None  # stop waiting: it died

            # openenv-core imports gradio at start-up: several seconds each on this machine.
            if not (wait_until(healthy, 90 * UNIT, interval=0.2) and process.poll() is None):
                logs.seek(0)
                pytest.fail(f"openenv-core server {name!r} did not start:\n{logs.read().decode(errors='replace')}")
        yield {name: url for name, (_, url) in processes.items()}
    finally:
        for process, _ in processes.values():
            process.terminate()  # all at once, then each waited for
        for process, _ in processes.values():
            stop_process(process)
        logs.close()


def assert_restores_elsewhere(
    source: Any, target: Any, *, seed: int, before: tuple[int, ...] = (), action: int
) -> None:
    """A portable snapshot of ``source`` (reset with ``seed``, then stepped with ``before``), restored
    on ``target`` (an env of another server), steps ``action`` to the observation ``source`` did:
    the two servers share the snapshot key."""
    import numpy as np

    from openenv_gym.snapshot import restore, snapshot

    source.reset(seed=seed)
    for step in before:
        source.step(step)
    handle = snapshot(source, portable=True)
    expected = source.step(action)[0]
    target.reset(seed=0)
    restore(target, handle)
    np.testing.assert_array_equal(target.step(action)[0], expected)
