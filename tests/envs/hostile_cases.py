"""Hostile code for the Coding env, one case each: what it runs, and what the observation must then hold.

The cases run through a server on the host (``test_coding_hostile.py``) and inside the Coding
env's container (``test_coding_docker.py``).
"""

from __future__ import annotations

import dataclasses

from openenv_gym.envs.coding.tasks import BUILTIN_TASKS
from tests.envs.coding_reference import SOLUTIONS
from tests.utils import REPO_ROOT, UNIT

__all__ = ["HOSTILE", "MARKER", "OUTPUT_LIMIT", "SERVER_PORT", "SERVICE_PORT", "SOLUTION", "TASK", "WALL_TIME", "Case"]

TASK = "digit-square-sum"  # easy, 7 hidden tests
SOLUTION = SOLUTIONS[TASK]
WALL_TIME = 2 * UNIT
OUTPUT_LIMIT = 64 * 1024  # Limits.output_limit's default
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
