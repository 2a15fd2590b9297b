"""The warm worker that runs inside the sandbox: it forks one child per run of untrusted code.

This file is a program as well as a module, and so is :mod:`.worker_run`, the child's half. The
sandbox starts them inside bubblewrap as ``python -c <launcher> <worker_run's source> <this
source>`` (:func:`program`): the launcher loads the child's half as the module of its name, then
runs this one as ``__main__``. So both use the standard library only and nothing else of
openenv_gym; the server side imports this one for the message framing (:func:`write_message`,
:func:`read_message`).

One worker lives per sandbox. It waits for requests on stdin and answers on stdout, one at a
time. For each request it forks a child, so every run starts from the same clean interpreter
state without paying for a new interpreter. The worker is the pid namespace's init, out of the
runs' reach. The child (:func:`~.worker_run.run_child`) gives up its privileges, runs the code,
then calls the requested function on each case and writes the results to a pipe of its own. The
worker reads stdout, stderr and results with caps, enforces the wall-clock limit,
and afterwards kills every process the run left (the whole pid namespace, when it has one),
empties the scratch directory (and, in a sandbox of its own, ``/dev/shm`` and ``/dev/mqueue``,
each made as it was) and destroys every System V IPC object of the run, so nothing leaks into
the next run. A worker configured with a
``workspace`` starts each run there instead: a directory it never empties, so a run's files in it
are the next run's (its processes are killed all the same).

Messages are a 4-byte big-endian length and a UTF-8 JSON object. The first message the worker
gets is its configuration (:data:`CONFIG_KEYS`); it answers ``{"ready": true}``. Then each
request is ``{"code": <base64>, "entry_point": str | null, "cases": [[arg, ...], ...] | null,
"tracebacks": [case index, ...] | null, "timeout": seconds}`` and each reply is ``{"exit_code",
"stdout", "stderr", "results", "timed_out"}``; ``timed_out`` says the run was killed at its
wall-clock or its CPU-time limit; ``results`` holds, per case run, ``{"value": ...}`` or
``{"error": "Type: msg", "exception": [class names of its MRO]}``, with ``"traceback"`` (capped at
:data:`TRACEBACK_LIMIT`) for the cases of ``tracebacks`` and the first case that raised, and
``"missing_entry_point": true`` when the code defines no such function.

Two more requests copy the workspace, for a snapshot of an episode kept there:
``{"save_workspace": true}`` is answered ``{"workspace": <base64 of an uncompressed tar>}`` and
``{"load_workspace": <base64 tar>}`` (into an empty workspace) ``{"loaded": true}``; either
answers ``{"error": str}`` when it cannot. The worker does it itself, between runs, with the
rights it has (root in the sandbox when the server is root: every file whatever its mode, owners
kept; a load is unpacked by GNU tar as the runs' uid); nothing touches a disk, the workspace being
a tmpfs. ``{"warm": true}`` (answered ``{"warm": true}``) has the worker import now what loading a
workspace needs: a spare sandbox's worker, before it is handed out, so that its first load does not
pay for it.
"""

from __future__ import annotations

import base64
import json
import math
import os
import selectors
import shutil
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import IO, Any

# Absolute, for the sandbox: there the launcher has put the module under this name (program()).
from openenv_gym.sandbox.worker_run import TRACEBACK_LIMIT, run_child

__all__ = ["CONFIG_KEYS", "MAX_MESSAGE_BYTES", "TRACEBACK_LIMIT", "program", "read_message", "write_message"]

HEADER = struct.Struct(">I")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CONFIG_KEYS = (
    "uid",  # the uid runs drop to when the worker is root, or null to keep the worker's
    "isolated",  # whether the worker has a pid namespace of its own (cleanup kills all in it)
    "workdir",  # the scratch directory each run starts in, emptied after it
    "workspace",  # a directory kept from run to run, where runs start instead; or null for none
    "cpu_time",  # seconds of CPU time per process
    "memory",  # bytes of address space per process
    "file_size",  # bytes, the largest file a run may write
    "processes",  # processes a run may have at once (not applied when the worker is not isolated)
    "open_files",  # open file descriptors per process
    "output_limit",  # bytes of stdout and of stderr kept per run
    "result_limit",  # bytes of function results kept per run
)
_GRACE_AFTER_EXIT = 0.2  # how long pipes may stay open after the child exits (a leftover process)
_CPU_TIME_SLACK = 0.05  # seconds: the CPU time the kernel reports may round below the limit it enforced
_MAX_WORKSPACE_COPY = MAX_MESSAGE_BYTES * 3 // 4  # bytes of a workspace's tar: its base64 fits one message
#: Seconds GNU tar may take to unpack a workspace (milliseconds, usually): less than the grace the
#: sandbox gives a reply beyond its wall_time, so a stuck unpack is answered, not waited out.
_WORKSPACE_COPY_TIMEOUT = 4.0
_SHARED_DIRS = ("/dev/shm", "/dev/mqueue")  # the sandbox's other places runs write, mode 1777 as on a host
_SYSV_IPC = {"msg": "msgctl", "shm": "shmctl", "sem": "semctl"}  # /proc/sysvipc's lists, and each one's call

_RUN_MODULE = run_child.__module__
# Loads the child's half (argv[1]) as its module, then runs the worker (argv[2]) as __main__.
_LAUNCHER = f"""\
import sys, types
run = sys.modules[{_RUN_MODULE!r}] = types.ModuleType({_RUN_MODULE!r})
exec(compile(sys.argv[1], "worker_run.py", "exec"), run.__dict__)
exec(compile(sys.argv[2], "worker.py", "exec"), {{"__name__": "__main__", "__builtins__": __builtins__}})
"""


def program() -> list[str]:
    """The interpreter's arguments that run the worker: no ``site``, no user site, no bytecode
    written, and the two halves' sources passed to the launcher (nothing of them is read from a
    file inside the sandbox, where installed packages are hidden)."""
    sources = []
    for name in ("worker_run.py", "worker.py"):
        with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as source:
            sources.append(source.read())
    return ["-S", "-s", "-B", "-c", _LAUNCHER, *sources]


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    """Write one length-prefixed JSON message and flush it."""
    body = json.dumps(message, separators=(",", ":")).encode()
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def read_message(read: Callable[[int], bytes | None]) -> dict[str, Any] | None:
    """Read one length-prefixed JSON message with ``read(n)``; ``None`` if it ends short (or gives ``None``).

    Raises:
        ValueError: the length is above :data:`MAX_MESSAGE_BYTES`, or the body is not JSON.
    """
    header = read(HEADER.size)
    if header is None or len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {size} bytes exceeds {MAX_MESSAGE_BYTES}")
    body = read(size)
    if body is None or len(body) < size:
        return None
    return json.loads(body)


# --- the worker: fork, collect, clean up ------------------------------------------------------


class _Capped:
    """The first ``limit`` bytes of a stream, and how many more there were."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.data.decode("utf-8", "replace")
        if self.dropped:
            text += f"\n[... output truncated: {self.dropped} more bytes]"
        return text


def _snapshot(source: str, target: str, config: dict[str, Any], timeout: float) -> None:
    """Copy ``source`` to ``target`` as the worker, before the run that reads it: root in the sandbox
    when the server is, so every file the runs left is copied whatever its mode (what a run made
    unreadable, a grader still sees), with its owner and mode kept. A copy that fails is removed:
    the run then finds none, and makes its own (and fails closed when that one is short)."""
    if config["uid"] is None or os.getuid() != 0:  # no rights beyond the runs': nothing to add
        return
    import subprocess  # here: only a grader's run needs it

    try:
        done = subprocess.run(
            ["cp", "-a", "--", source.rstrip("/") + "/.", target],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        ).returncode
    except (OSError, subprocess.TimeoutExpired):
        done = -1
    if done != 0 and os.path.isdir(target):
        _make_removable(target)
        shutil.rmtree(target, ignore_errors=True)


def _save_workspace(config: dict[str, Any]) -> dict[str, Any]:
    """The workspace as a tar (links kept as links, sockets left out), or why it cannot be made."""
    import io
    import tarfile

    buffer = io.BytesIO()

    def no_sockets(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return info if (info.isreg() or info.isdir() or info.issym() or info.islnk() or info.isfifo()) else None

    try:
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(os.listdir(config["workspace"])):
                archive.add(os.path.join(config["workspace"], name), arcname=name, filter=no_sockets)
    except (OSError, tarfile.TarError) as exc:
        return {"error": f"the workspace cannot be copied: {type(exc).__name__}: {exc}"}
    if buffer.tell() > _MAX_WORKSPACE_COPY:
        return {"error": f"the workspace's copy is {buffer.tell()} bytes, over {_MAX_WORKSPACE_COPY}"}
    return {"workspace": base64.b64encode(buffer.getvalue()).decode()}


def _load_workspace(data: str, config: dict[str, Any]) -> dict[str, Any]:
    """Unpack a tar :func:`_save_workspace` made into the (emptied) workspace.

    GNU tar unpacks it, as the runs' uid (where the worker is root): every file is then theirs,
    whichever sandbox's the copy was, with its mode and times as they were, in a few milliseconds
    (Python's tarfile takes three times as long, which a fork of 8 pays 8 times). A crafted
    archive cannot write beside the workspace: tar refuses a name with ``..``, takes an absolute
    one as relative, and makes a link that points outside only after every other member, so
    nothing is written through it; and it runs with no more rights than the runs.
    """
    import subprocess

    workspace, uid = config["workspace"], config["uid"]
    _empty(workspace)
    as_runs = {"user": uid, "group": uid, "extra_groups": []} if uid is not None and os.getuid() == 0 else {}
    try:
        done = subprocess.run(
            ["tar", "--extract", "--file=-", "--directory", workspace, "--preserve-permissions", "--no-same-owner"],
            input=base64.b64decode(data),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=_WORKSPACE_COPY_TIMEOUT,
            check=False,
            **as_runs,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        _empty(workspace)
        return {"error": f"the workspace cannot be restored: {type(exc).__name__}: {exc}"}
    if done.returncode != 0:
        _empty(workspace)
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return {"error": f"the workspace cannot be restored: {why[0]}"}
    return {"loaded": True}


def _warm(config: dict[str, Any]) -> dict[str, Any]:
    """Import what :func:`_load_workspace` needs (``subprocess``, much of a first load's time)."""
    if config["workspace"]:
        import subprocess  # noqa: F401 - imported for the loads to come
    return {"warm": True}


def _run(request: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + float(request["timeout"])  # the snapshot's time is the run's
    if request.get("snapshot"):
        source, target = request["snapshot"]
        _snapshot(source, target, config, float(request["timeout"]) / 2)
    pipes = [os.pipe() for _ in range(3)]
    pid = os.fork()
    if pid == 0:
        try:
            for read_end, _ in pipes:
                os.close(read_end)
            run_child(request, config, *(write_end for _, write_end in pipes))
        finally:
            os._exit(70)
    for _, write_end in pipes:
        os.close(write_end)
    streams = {
        pipes[0][0]: _Capped(config["output_limit"]),
        pipes[1][0]: _Capped(config["output_limit"]),
        pipes[2][0]: _Capped(config["result_limit"]),
    }
    status, wall_time_out, cpu_seconds = _collect(pid, streams, deadline)
    _kill_leftovers(pid, config)
    for fd in streams:
        os.close(fd)
    _reset_scratch(config)
    stdout, stderr, results = streams.values()
    # The kernel ends a process at RLIMIT_CPU with SIGXCPU, or with SIGKILL a grace second later
    # when it ignored that; its CPU time (past the soft limit) tells that kill from any other.
    cpu_time_out = not wall_time_out and (
        status == -signal.SIGXCPU or (status == -signal.SIGKILL and cpu_seconds >= config["cpu_time"] - _CPU_TIME_SLACK)
    )
    if wall_time_out:
        status = -signal.SIGKILL
    message = stderr.text()
    if wall_time_out:
        message += f"\n[sandbox] killed: the run exceeded its wall-clock limit of {float(request['timeout']):g} s"
    elif cpu_time_out:
        message += f"\n[sandbox] killed: the run exceeded its CPU-time limit of {config['cpu_time']:g} s"
    elif status < 0:
        message += f"\n[sandbox] the program was killed by signal {signal.Signals(-status).name}"
    timed_out = wall_time_out or cpu_time_out
    return {
        "exit_code": status,
        "stdout": stdout.text(),
        "stderr": message,
        "results": _parse_results(results),
        "timed_out": timed_out,
    }


def _collect(pid: int, streams: dict[int, _Capped], deadline: float) -> tuple[int, bool, float]:
    """Read the child's pipes until it exits (and they close) or the deadline passes.

    Returns its exit status, whether the deadline passed first, and the CPU seconds it used.
    """
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ)
    status: int | None = None
    cpu_seconds = 0.0
    exited_at = math.inf  # set with status, when the child exits
    try:
        while True:
            now = time.monotonic()
            if status is not None and (len(selector.get_map()) == 0 or now >= exited_at + _GRACE_AFTER_EXIT):
                return status, False, cpu_seconds
            if now >= deadline:
                return (status if status is not None else -signal.SIGKILL), status is None, cpu_seconds
            limit = deadline if status is None else min(deadline, exited_at + _GRACE_AFTER_EXIT)
            for key, _ in selector.select(max(0.0, limit - now)):
                if key.fd == pidfd:
                    selector.unregister(pidfd)
                    _, wait_status, usage = os.wait4(pid, 0)
                    status = os.waitstatus_to_exitcode(wait_status)
                    cpu_seconds = usage.ru_utime + usage.ru_stime
                    exited_at = time.monotonic()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    streams[key.fd].add(chunk)
                else:
                    selector.unregister(key.fd)
    finally:
        selector.close()
        os.close(pidfd)


def _kill_leftovers(pid: int, config: dict[str, Any]) -> None:
    """Kill every process of the run, including ones that left its session."""
    if config["isolated"]:
        # The worker is the pid namespace's init: every other process in it is the run's.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:
        for kill in (os.killpg, os.kill):  # the group; and the child, in case it had no group yet
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # already reaped by _collect
    if config["isolated"]:
        _wait_until_alone()


def _wait_until_alone(timeout: float = 2.0) -> None:
    """Reap the killed processes (orphans are the init's to reap) until none is left, zombies too.

    So none of them counts against the next run's process limit, and none is there for the next
    run to list (a zombie keeps its name and exit status: a message from the run before).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap_orphans()
        if not [name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]:
            return
        time.sleep(0.001)


def _reap_orphans() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _reset_scratch(config: dict[str, Any]) -> None:
    """Give the next run a clean slate: every writable place emptied and as it was made, every IPC
    object of the run destroyed, the work directory made anew."""
    workdir = config["workdir"]
    scratch = os.path.dirname(workdir)  # the whole scratch tmpfs, not only the work directory
    # In a sandbox of its own: its /tmp, /dev/shm and /dev/mqueue, and its IPC namespace.
    for directory in (scratch, *_SHARED_DIRS) if config["isolated"] else (scratch,):
        if os.path.isdir(directory):
            _empty(directory)
            if config["isolated"]:
                _as_made(directory)
    if config["isolated"]:
        _remove_ipc_objects(config)
    os.mkdir(workdir, 0o700)
    if config["uid"] is not None and os.getuid() == 0:
        os.chown(workdir, config["uid"], config["uid"])


def _as_made(directory: str) -> None:
    """Undo what a run may have changed of a writable place's own directory, for the next to read:
    its mode (a /tmp's usual, 1777) and, where runs own it (bubblewrap unprivileged), the extended
    attributes, ACL and times they set."""
    os.chmod(directory, 0o1777)
    try:
        names = os.listxattr(directory)
    except OSError:  # a file system without extended attributes
        names = []
    for name in names:
        try:
            os.removexattr(directory, name)
        except OSError:
            pass  # one only the kernel sets
    os.utime(directory)


def _remove_ipc_objects(config: dict[str, Any]) -> None:
    """Destroy every System V message queue, shared memory segment and semaphore set of the
    sandbox's IPC namespace: runs made them all (where the seccomp filter lets them; the worker
    makes none). POSIX message queues are files of ``/dev/mqueue``, emptied with it."""
    found: list[tuple[str, int]] = []
    for kind, call in _SYSV_IPC.items():
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as listing:
                found += [(call, int(line.split()[1])) for line in listing.readlines()[1:]]
        except (OSError, ValueError, IndexError):
            pass  # a kernel without System V IPC
    if not found:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    uid = config["uid"]
    # IPC_RMID (0) takes the object's creator or owner, or CAP_SYS_ADMIN, which the worker has not:
    # as root it removes them as the runs' uid, in a child. The three calls take (id, 0, IPC_RMID)
    # or (id, IPC_RMID, NULL) alike.
    child = os.fork() if uid is not None and os.getuid() == 0 else None
    if child:
        os.waitpid(child, 0)
        return
    try:
        if child == 0:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        for call, ident in found:
            getattr(libc, call)(ident, 0, 0)
    finally:
        if child == 0:
            os._exit(0)


def _make_workspace(config: dict[str, Any]) -> None:
    """Make the workspace the runs' own: theirs alone to read and write, never emptied by the worker."""
    workspace = config["workspace"]
    os.makedirs(workspace, exist_ok=True)
    os.chmod(workspace, 0o700)
    if config["uid"] is not None and os.getuid() == 0:
        os.chown(workspace, config["uid"], config["uid"])


def _empty(directory: str) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _make_removable(path)
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _make_removable(directory: str) -> None:
    """Undo a run's chmod of its directories (0o500 and the like), so they can be emptied."""
    for root, dirs, _ in os.walk(directory):
        for name in dirs:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue  # a run's link to a directory: chmod would follow it (to /tmp itself, say)
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
    try:
        os.chmod(directory, 0o700)
    except OSError:
        pass


def _parse_results(results: _Capped) -> list[dict[str, Any]]:
    parsed = []
    for line in bytes(results.data).splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            break  # a cut-off last line, or bytes the code wrote itself
        if not isinstance(item, dict):
            break
        parsed.append(item)
    return parsed


def _set_dumpable(dumpable: bool) -> None:
    import ctypes

    pr_set_dumpable = 4
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, int(dumpable), 0, 0, 0)


def main() -> None:
    """Serve requests from stdin until it closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # As the pid namespace's init, the worker gets only the signals it handles: none, so a run
    # cannot kill it (SIGKILL from inside the namespace does not reach an init).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Not dumpable: a run with the worker's uid cannot open /proc/1/fd/* (the reply pipe) or its memory.
    _set_dumpable(False)
    config = read_message(stdin.read)
    if config is None:
        return
    os.makedirs(os.path.dirname(config["workdir"]), exist_ok=True)
    _reset_scratch(config)
    if config["workspace"]:
        _make_workspace(config)
    write_message(stdout, {"ready": True, "python": sys.version.split()[0]})
    while (request := read_message(stdin.read)) is not None:
        if request.get("save_workspace") and config["workspace"]:
            write_message(stdout, _save_workspace(config))
        elif "load_workspace" in request and config["workspace"]:
            write_message(stdout, _load_workspace(str(request["load_workspace"]), config))
        elif request.get("warm"):
            write_message(stdout, _warm(config))
        else:
            write_message(stdout, _run(request, config))


if __name__ == "__main__":
    main()
