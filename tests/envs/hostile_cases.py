"""Hostile code for the Coding env, one case each: what it runs, and what the observation must then hold.

The cases run through a server on the host (``test_coding_hostile.py``) and inside the Coding
env's container (``test_coding_docker.py``).
"""

from __future__ import annotations

import dataclasses
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from openenv_gym.envs.coding.tasks import BUILTIN_TASKS
from openenv_gym.sandbox.sandbox import SANDBOX_UID_BASE
from tests.envs.coding_reference import SOLUTIONS
from tests.utils import REPO_ROOT, UNIT, wait_until

__all__ = [
    "HOSTILE",
    "MARKER",
    "OUTPUT_LIMIT",
    "PROCESSES_PER_SESSION",
    "SERVER_PORT",
    "SERVICE_PORT",
    "SOLUTION",
    "TASK",
    "WALL_TIME",
    "Case",
    "assert_contained",
    "assert_runs_cleaned_up",
    "run_case",
    "run_processes",
]

TASK = "digit-square-sum"  # easy, 7 hidden tests
SOLUTION = SOLUTIONS[TASK]
WALL_TIME = 2 * UNIT
OUTPUT_LIMIT = 64 * 1024  # Limits.output_limit's default
PROCESSES_PER_SESSION = 2  # a session's sandbox: bubblewrap, and the warm worker (the init of its pid namespace)
MARKER = "openenv-gym-hostile-test"  # the name of files the write cases try to create

# Placeholders a case's code may hold, filled in when the case runs.
SERVER_PORT, SERVICE_PORT = "SERVER_PORT", "SERVICE_PORT"


@dataclasses.dataclass(frozen=True)
class Case:
    """Code to run, text its stdout + stderr must hold, its exit code, and whether it ran out of time."""

    code: str
    expected: str
    exit_code: int
    timed_out: bool = False


HOSTILE = {
    "infinite loop": Case("while True:\n    pass", f"wall-clock limit of {WALL_TIME:g} s", -9, timed_out=True),
    "fork bomb": Case("import os\nwhile True:\n    os.fork()", "BlockingIOError: [Errno 11]", 1),
    "fork bomb that ignores errors": Case(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "wall-clock limit",
        -9,
        timed_out=True,
    ),
    "allocate 10 GB": Case("x = bytearray(10 * 1024 ** 3)", "MemoryError", 1),
    "write a 10 GB file": Case(
        "with open('big', 'wb') as f:\n    for _ in range(10 * 1024):\n        f.write(b'x' * 1024 * 1024)",
        "OSError: [Errno 27] File too large",
        1,
    ),
    "print 100 MB": Case(
        "import sys\nfor _ in range(100):\n    sys.stdout.write('y' * 1024 * 1024)",
        f"[... output truncated: {100 * 1024 * 1024 - OUTPUT_LIMIT} more bytes]",
        0,
    ),
    "write to /dev": Case(
        "try:\n    open('/dev/x', 'w').write('kept?')\nexcept OSError as e:\n    print('refused', e.errno in (13, 30))",
        "refused True",
        0,
    ),
    "read /etc/shadow": Case("print(open('/etc/shadow').read())", "FileNotFoundError", 1),
    "read the project's files": Case(
        f"print(open({str(REPO_ROOT / 'pyproject.toml')!r}).read())", "FileNotFoundError", 1
    ),
    "read the hidden tests": Case(f"print(open({str(BUILTIN_TASKS.resolve())!r}).read())", "FileNotFoundError", 1),
    "write to /usr": Case(f"open('/usr/{MARKER}', 'w').write('x')", "Read-only file system", 1),
    "write to /": Case(f"open('/{MARKER}', 'w').write('x')", "Read-only file system", 1),
    "write into the project": Case(f"open({str(REPO_ROOT / MARKER)!r}, 'w').write('x')", "FileNotFoundError", 1),
    "connect to the env server's port": Case(
        f"import socket\nsocket.create_connection(('127.0.0.1', {SERVER_PORT}), timeout=1)",
        "ConnectionRefusedError",
        1,
    ),
    "connect to another loopback service": Case(
        f"import socket\nsocket.create_connection(('127.0.0.1', {SERVICE_PORT}), timeout=1)",
        "ConnectionRefusedError",
        1,
    ),
    "kill the parent": Case("import os\nos.kill(os.getppid(), 9)", "PermissionError", 1),
    "forge the worker's reply": Case(
        "import os\nos.write(os.open('/proc/1/fd/1', os.O_WRONLY), (10**7).to_bytes(4, 'big'))", "PermissionError", 1
    ),
    "create a user namespace": Case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.unshare(0x10000000) != 0:\n    raise OSError(ctypes.get_errno(), 'unshare(CLONE_NEWUSER)')",
        "PermissionError: [Errno 1] unshare(CLONE_NEWUSER)",
        1,
    ),
    "sys.exit": Case("import sys\nprint('exiting', flush=True)\nsys.exit(3)", "exiting", 3),
    "segfault via ctypes": Case("import ctypes\nctypes.string_at(0)", "killed by signal SIGSEGV", -11),
    "close stdout": Case("import os\nos.close(1)\nprint('lost', flush=True)", "Bad file descriptor", 1),
    "null byte": Case("print(1)\x00", "source code string cannot contain null bytes", 1),
    "leave a process behind": Case(
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(60)\n"
        "print('forked')",
        "forked",
        0,
    ),
}


T = TypeVar("T")


def run_case(case: Case, server_port: int, run: Callable[[str], T]) -> T:
    """Run ``case``'s code through ``run``, its ports filled in; nothing may reach the loopback service it targets.

    ``server_port`` is the env server's; the other is a listening socket of this test's own.
    """
    with socket.create_server(("127.0.0.1", 0)) as service:
        service.setblocking(False)
        code = case.code.replace(SERVER_PORT, str(server_port))
        code = code.replace(SERVICE_PORT, str(service.getsockname()[1]))
        outcome = run(code)
        with pytest.raises(BlockingIOError):
            service.accept()  # nothing got through to the test's own loopback service
    return outcome


def assert_contained(case: Case, stdout: str, stderr: str, exit_code: int, timed_out: bool) -> None:
    """The run's output holds the case's clear error, its exit code and time-out flag; it is capped; nothing was written."""
    output = stdout + stderr
    assert case.expected in output, output[-2000:]
    assert exit_code == case.exit_code, output[-2000:]
    assert timed_out is case.timed_out
    assert len(stdout) <= OUTPUT_LIMIT + 256 and len(stderr) <= OUTPUT_LIMIT + 256
    for written in (Path("/usr") / MARKER, Path("/") / MARKER, REPO_ROOT / MARKER):
        assert not written.exists(), f"the run wrote {written} on the host"


def run_processes() -> dict[int, bool]:
    """Live processes with a run's uid, each with whether a SIGKILL is pending for it.

    As root, each sandbox's runs use the uid SANDBOX_UID_BASE + its bubblewrap pid.
    """
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
                uid = int(status.split("\nUid:")[1].split()[0])
                pending = int(status.split("\nSigPnd:")[1].split()[0], 16)
                pending |= int(status.split("\nShdPnd:")[1].split()[0], 16)
            except (OSError, IndexError, ValueError):
                continue
            if uid >= SANDBOX_UID_BASE and "State:\tZ" not in status:
                found[int(entry.name)] = bool(pending & (1 << (signal.SIGKILL - 1)))
    return found


def assert_runs_cleaned_up(sandboxes: Callable[[], set[int]], expected: set[int]) -> None:
    """No process of a run is left, and ``sandboxes()`` (the sandbox processes in question) are ``expected``: the very processes of setup.

    The worker answers once it has sent SIGKILL to every process of the run, not once they are
    gone: when the reply arrives, a few may still be exiting (seen after a fork bomb). So right
    after a run every process of it must already be killed, and soon none may exist.
    """
    survivors = [pid for pid, killed in run_processes().items() if not killed]
    assert survivors == [], "a process of the run outlived it, and no SIGKILL is on its way"
    assert wait_until(lambda: not run_processes(), 1 * UNIT), f"processes of the run left: {run_processes()}"
    assert wait_until(lambda: sandboxes() == expected, 1 * UNIT), (
        f"sandbox processes were added, lost or replaced: {sandboxes() ^ expected}"
    )
