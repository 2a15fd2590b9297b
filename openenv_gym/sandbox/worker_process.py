"""The sandbox worker's process, seen from the server's side: a message sent down its stdin, replies read
from its stdout with a deadline, what it left on stderr, its kill, and what its start passes it."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import Any

from . import worker
from .cgroup import RunCgroup
from .tmpfs import TmpfsMounts

__all__ = ["filter_pipe", "kill", "kill_if_owner", "private_tempdir", "read_available", "read_exactly", "send"]

STOP_TIMEOUT = 5.0  # seconds a killed worker's process may take to be reaped


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    """Write ``message`` to the worker (started with its stdin a pipe)."""
    assert process.stdin is not None
    worker.write_message(process.stdin, message)


def kill_if_owner(
    owner: int, process: subprocess.Popen[bytes], cgroup: RunCgroup | None, mounts: TmpfsMounts | None
) -> None:
    """:func:`kill`, as the finalizer of a sandbox of process ``owner``: a forked child that
    drops a copy of its parent's sandbox (or a spare) leaves the parent's worker alone."""
    if os.getpid() == owner:
        kill(process, cgroup, mounts)


def kill(process: subprocess.Popen[bytes], cgroup: RunCgroup | None = None, mounts: TmpfsMounts | None = None) -> None:
    """SIGKILL the worker's process group and reap it (then remove its cgroup and mount points, if given)."""
    # Under bubblewrap that group is bubblewrap itself: --die-with-parent and the end of the
    # pid namespace take every process inside with it.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    if cgroup is not None:
        cgroup.remove()
    if mounts is not None:
        mounts.remove()


def read_available(stream: Any) -> str:
    """What a dead process left in a pipe, without waiting for processes that may still hold it."""
    if stream is None:
        return ""
    os.set_blocking(stream.fileno(), False)
    try:
        return (stream.read() or b"").decode("utf-8", "replace")
    except OSError:
        return ""


def read_exactly(fd: int, size: int, deadline: float) -> bytes | None:
    """``size`` bytes from ``fd`` before ``deadline``; ``None`` on timeout or end of stream."""
    data = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return None
            chunk = os.read(fd, size - len(data))
            if not chunk:
                return None
            data += chunk
    return bytes(data)


def filter_pipe(program: bytes) -> int:
    """The read end of a pipe holding the seccomp filter ``program``."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a couple of kilobytes: far below a pipe's buffer
    finally:
        os.close(write_end)
    return read_end


def private_tempdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="openenv-gym-sandbox-")
