"""What the sandbox undoes between runs beyond files and processes: IPC objects (refused by default,
destroyed after each run where a sandbox allows them) and the writable places' own directories.

Each is checked where the server runs as root (a :class:`Sandbox`: runs drop to a uid of their own)
and, for what only a run that owns the sandbox's directories can do, with the worker under the
unprivileged command line (a user namespace, as in the Coding env's container; simulated here).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_gym.sandbox import Limits, Sandbox, worker
from openenv_gym.sandbox.bubblewrap import bwrap_command, find_bwrap
from openenv_gym.sandbox.seccomp import seccomp_filter
from tests.utils import UNIT

LIMITS = Limits(wall_time=10 * UNIT)
PRELUDE = """\
import ctypes, json, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
def made(result):
    return ctypes.get_errno() if result == -1 else 0
"""
# Every kind of IPC object, by key and private, a shared memory segment of 8 MiB held attached
# by a process that outlives the run, and a POSIX message queue with a message.
MAKE = (
    PRELUDE
    + """\
results = {}
for key in (0x1EA4, 0):  # 0: IPC_PRIVATE
    queue = libc.msgget(key, 0o1666)
    results[f"msg {key}"] = made(queue) or made(libc.msgsnd(queue, struct.pack("l", 1) + b"left", 4, 0o4000))
    results[f"sem {key}"] = made(libc.semget(key, 4, 0o1666))
    segment = libc.shmget(key, 8 << 20, 0o1666)
    results[f"shm {key}"] = made(segment)
if os.fork() == 0:
    libc.shmat(segment, None, 0)
    os.setsid()
    os.closerange(0, 4)
    os.kill(os.getpid(), 19)  # SIGSTOP: attached until the sandbox kills it
    os._exit(0)
queue = libc.mq_open(b"/left", os.O_CREAT | os.O_RDWR, 0o600, None)
results["mq"] = made(queue) or made(libc.mq_send(queue, b"left", 4, 0))
print(json.dumps(results))
"""
)
LOOK = (
    PRELUDE
    + """\
found = {kind: open(f"/proc/sysvipc/{kind}").read().splitlines()[1:] for kind in ("msg", "shm", "sem")}
found["mqueue"] = sorted(os.listdir("/dev/mqueue")) if os.path.isdir("/dev/mqueue") else None
found["msgget"] = made(libc.msgget(0x1EA4, 0))
found["mq_open"] = made(libc.mq_open(b"/left", os.O_RDONLY, 0, None))
print(json.dumps(found))
"""
)
NOTHING_LEFT = {"msg": [], "shm": [], "sem": [], "mqueue": [], "msgget": errno.ENOENT, "mq_open": errno.ENOENT}
ALL_MADE = {**{f"{kind} {key}": 0 for kind in ("msg", "sem", "shm") for key in (0x1EA4, 0)}, "mq": 0}


def test_ipc_objects_are_refused_by_default():
    """The Coding envs' sandbox, as every sandbox by default: no run can make an IPC object to leave
    for the next, nor open one (there is none)."""
    with Sandbox(LIMITS) as box:
        made = box.run(MAKE)
        assert made.exit_code == 0, made.stderr
        assert set(json.loads(made.stdout).values()) == {errno.ENOSYS}, made.stdout
        left = box.run(LOOK)
        assert json.loads(left.stdout) == {
            **NOTHING_LEFT,
            "mqueue": None,
            "msgget": errno.ENOSYS,
            "mq_open": errno.ENOSYS,
        }


def test_allowed_ipc_objects_are_destroyed_with_their_run():
    """Allowed, a run makes every kind (System V shared memory of 8 MiB among them, held attached by a
    process left behind); after it the namespace holds none, and the next run finds nothing."""
    with Sandbox(LIMITS, ipc_objects=True) as box:
        for _ in range(2):  # and again: the worker serves on
            made = box.run(MAKE)
            assert (made.exit_code, json.loads(made.stdout or "null")) == (0, ALL_MADE), made.stderr
            left = box.run(LOOK)
            assert json.loads(left.stdout or "null") == NOTHING_LEFT, left.stderr


def test_a_link_in_scratch_does_not_change_what_it_points_to():
    """Emptying /tmp makes each directory of a run's tree removable: a link to a directory among them
    is not followed (it once made /tmp itself mode 0700, so the next run could not read it)."""
    with Sandbox(LIMITS) as box:
        planted = box.run(
            "import os\nos.makedirs('/tmp/d')\nfor target in ('/tmp', '/dev/shm'):\n"
            "    os.symlink(target, f'/tmp/d/link{len(target)}')\nos.chmod('/tmp/d', 0o500)"
        )
        assert planted.exit_code == 0, planted.stderr
        after = box.run(
            "import os\nprint(*(oct(os.stat(place).st_mode) for place in ('/tmp', '/dev/shm')), os.listdir('/tmp'))"
        )
        assert after.stdout == "0o41777 0o41777 ['work']\n", after.stderr


# --- the worker under the unprivileged command line -------------------------------------------------


class UnprivilegedWorker:
    """The sandbox's worker under bubblewrap's command line for a server that is not root (a user
    namespace; runs keep the worker's uid and own the sandbox's directories), spoken to directly."""

    def __init__(self, ipc_objects: bool) -> None:
        bwrap = find_bwrap()
        if bwrap is None:
            pytest.skip("no bubblewrap")
        program = seccomp_filter(ipc_objects=ipc_objects)
        read_end, write_end = os.pipe()
        os.write(write_end, program or b"")
        os.close(write_end)
        argv = bwrap_command(
            bwrap,
            os.path.realpath(sys.executable),
            worker.program(),
            scratch_size=2**24,
            privileged=False,
            seccomp_fd=read_end if program else None,
            mqueue=ipc_objects,
        )
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(read_end,)
        )
        os.close(read_end)
        ready = self.ask(LIMITS.worker_config(uid=None, isolated=True, workdir="/tmp/work"))
        assert ready.get("ready"), ready

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        worker.write_message(self.process.stdin, message)
        reply = worker.read_message(self.process.stdout.read)
        assert reply is not None, self.process.stderr.read().decode() if self.process.stderr else ""
        return reply

    def run(self, code: str) -> dict[str, Any]:
        request = {"code": base64.b64encode(code.encode()).decode(), "entry_point": None, "cases": None}
        return self.ask({**request, "tracebacks": [], "timeout": 10 * UNIT})

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def unprivileged() -> Iterator[UnprivilegedWorker]:
    box = UnprivilegedWorker(ipc_objects=True)
    yield box
    box.close()


def test_allowed_ipc_objects_are_destroyed_unprivileged_too(unprivileged):
    """Where runs have the worker's uid the worker removes their objects itself."""
    made = unprivileged.run(MAKE)
    assert (made["exit_code"], json.loads(made["stdout"] or "null")) == (0, ALL_MADE), made["stderr"]
    left = unprivileged.run(LOOK)
    assert json.loads(left["stdout"] or "null") == NOTHING_LEFT, left["stderr"]


def test_the_writable_places_are_as_made_for_each_run(unprivileged):
    """A run that owns /tmp, /dev/shm and /dev/mqueue changes their mode, extended attributes, ACL and
    times; the next run finds each as the sandbox made it."""
    places = ("/tmp", "/dev/shm", "/dev/mqueue")
    changed = unprivileged.run(
        "import os, struct\n"
        f"for place in {places!r}:\n"
        "    os.chmod(place, 0o700)\n"
        "    os.utime(place, (12345, 12345))\n"
        "for place in ('/tmp', '/dev/shm'):\n"
        "    os.setxattr(place, 'user.left', b'x')\n"
        # An access ACL naming a user (uid 0, the one the namespace maps): kept as an attribute.
        "acl = struct.pack('<I' + 'HHI' * 5, 2, 1, 7, 0, 2, 7, 0, 4, 7, 0, 0x10, 7, 0, 0x20, 0, 0)\n"
        "os.setxattr('/tmp', 'system.posix_acl_access', acl)\n"
        "print('changed', sorted(os.listxattr('/tmp')))"
    )
    assert changed["stdout"] == "changed ['system.posix_acl_access', 'user.left']\n", changed["stderr"]
    looked = unprivileged.run(
        f"import os\nfor place in {places!r}:\n"
        "    print(place, oct(os.stat(place).st_mode), os.listxattr(place), os.stat(place).st_mtime > 10**9)"
    )
    assert looked["stdout"].splitlines() == [f"{place} 0o41777 [] True" for place in places], looked["stderr"]
