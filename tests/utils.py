"""Shared test helpers: a time unit, process counting, and a server running on a loop thread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.loop_thread import LoopThread
from openenv_gym.server import EnvServer

# One unit of test time; raise OPENENV_GYM_TEST_UNIT on a slow machine instead of editing tests.
UNIT = float(os.environ.get("OPENENV_GYM_TEST_UNIT", "1.0"))
REPO_ROOT = Path(__file__).resolve().parent.parent


def server_pids() -> set[int]:
    """PIDs of every running `openenv_gym serve` process on this machine."""
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


def sandbox_pids() -> set[int]:
    """PIDs of every sandbox worker, and of every process a sandbox run left, on this machine."""
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


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (zombies count as dead)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


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
