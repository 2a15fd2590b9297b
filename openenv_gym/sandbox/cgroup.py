"""`RunCgroup`: a memory and pids cgroup around one sandbox's worker, so a run's bound counts every
process of it and the kernel memory they cause.

``RLIMIT_AS`` bounds each process's address space, not a run: a run of 32 processes may hold 32
times it, and the kernel memory a run causes (the inodes and dentries of files it creates, a
tmpfs's pages, pipe buffers) counts against no rlimit at all. A memory cgroup counts all of it,
whatever process caused it: past its limit the kernel first reclaims, then refuses the charge
(``ENOMEM`` to a system call that needed kernel memory) or kills a process of the cgroup. The
worker makes each run's processes the first to be killed (``oom_score_adj`` 1000), and
:meth:`RunCgroup.oom_kills` tells the sandbox a run hit the bound. Runs of a sandbox are
sequential and each is cleaned up before the next, so a cgroup per sandbox bounds each run,
together with what the sandbox keeps between runs (the workspace).

Made under this process's own cgroup, in cgroup v1's ``memory`` and ``pids`` hierarchies or in
cgroup v2's unified one, where this process may write there (root, or a delegated v2 subtree).
Where none can be made, :meth:`RunCgroup.make` returns ``None`` and says why in
:data:`RunCgroup.unavailable`: runs are then bounded per process only (``Limits.memory``,
``Limits.processes``), as documented in ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid
from pathlib import Path

__all__ = ["CGROUP_ROOT", "RunCgroup"]

#: Where the cgroup file systems are mounted.
CGROUP_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "openenv-gym-sandbox-"


class RunCgroup:
    """The cgroups (one per hierarchy) a sandbox's worker and runs live in; see the module docstring.

    Attributes:
        memory_limit: the bytes its processes and the kernel memory they cause may use.
        directories: the cgroups' directories (v1: a memory and a pids one; v2: one).
    """

    #: Why the last :meth:`make` found no cgroup to make (``None`` once one was made).
    unavailable: str | None = None

    def __init__(self, memory_limit: int, directories: list[Path], version: int) -> None:
        self.memory_limit = memory_limit
        self.directories = directories
        self.version = version

    def __repr__(self) -> str:
        return f"RunCgroup({self.memory_limit} bytes, {[str(d) for d in self.directories]})"

    @classmethod
    def make(cls, memory_limit: int, pids_limit: int, root: Path | None = None) -> RunCgroup | None:
        """A new cgroup of ``memory_limit`` bytes (no swap) and ``pids_limit`` processes and threads,
        under this process's own (in the cgroup file systems at ``root``, default :data:`CGROUP_ROOT`);
        ``None`` where none can be made (:attr:`unavailable` says why)."""
        root = CGROUP_ROOT if root is None else root
        try:
            own = _own_cgroups()
            if "memory" in own and (root / "memory").is_dir():
                made = cls._make_v1(memory_limit, pids_limit, root, own)
            elif "" in own and (root / "cgroup.controllers").is_file():
                made = cls._make_v2(memory_limit, pids_limit, root / own[""].lstrip("/"))
            else:
                raise OSError(errno.ENOENT, "no memory controller is mounted here")
        except OSError as exc:
            RunCgroup.unavailable = (
                f"no memory cgroup could be made ({exc.strerror or exc}): runs are bounded per process"
            )
            return None
        RunCgroup.unavailable = None
        return made

    @classmethod
    def _make_v1(cls, memory_limit: int, pids_limit: int, root: Path, own: dict[str, str]) -> RunCgroup:
        name = f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        parent = root / "memory" / own["memory"].lstrip("/")
        _remove_orphans(parent)
        memory = parent / name
        memory.mkdir()
        made = cls(memory_limit, [memory], 1)
        try:
            (memory / "memory.limit_in_bytes").write_text(str(memory_limit))
            swap = memory / "memory.memsw.limit_in_bytes"
            if swap.exists():  # memory and swap together: no more than the memory limit, so no swap
                swap.write_text(str(memory_limit))
            if "pids" in own and (root / "pids").is_dir():
                pids_parent = root / "pids" / own["pids"].lstrip("/")
                _remove_orphans(pids_parent)
                pids = pids_parent / name
                pids.mkdir()
                made.directories.append(pids)
                (pids / "pids.max").write_text(str(pids_limit))
        except OSError:
            made.remove()
            raise
        return made

    @classmethod
    def _make_v2(cls, memory_limit: int, pids_limit: int, parent: Path) -> RunCgroup:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            raise OSError(errno.EPERM, f"the memory controller is not enabled for {parent}'s children")
        _remove_orphans(parent)
        directory = parent / f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        directory.mkdir()
        made = cls(memory_limit, [directory], 2)
        try:
            (directory / "memory.max").write_text(str(memory_limit))
            with contextlib.suppress(FileNotFoundError):
                (directory / "memory.swap.max").write_text("0")
            if "pids" in enabled:
                (directory / "pids.max").write_text(str(pids_limit))
        except OSError:
            made.remove()
            raise
        return made

    def join(self) -> None:
        """Move the calling process into the cgroups (a ``preexec_fn``: the worker's processes follow)."""
        for directory in self.directories:
            with open(directory / "cgroup.procs", "w") as procs:
                procs.write("0")

    def oom_kills(self) -> int:
        """How many processes the kernel has killed for the memory limit so far."""
        events = self.directories[0] / ("memory.oom_control" if self.version == 1 else "memory.events")
        try:
            for line in events.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak_usage(self) -> int:
        """The most memory the cgroup has held at once, in bytes (0 if the kernel does not say)."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((self.directories[0] / name).read_text())
        except (OSError, ValueError):
            return 0

    def remove(self, timeout: float = 5.0) -> None:
        """Remove the cgroups once their processes are gone (call after killing them); bounded by ``timeout``."""
        deadline = time.monotonic() + timeout
        for directory in reversed(self.directories):
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        break  # left behind, empty or not: the kernel frees it with its last process
                    time.sleep(0.02)


def _remove_orphans(parent: Path) -> None:
    """Remove the empty cgroups left under ``parent`` by sandboxes of processes that died (killed
    before they could remove them): their names carry the pid that made them."""
    try:
        children = list(parent.glob(f"{_PREFIX}*"))
    except OSError:
        return
    for child in children:
        pid = child.name[len(_PREFIX) :].partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):  # not empty yet, or someone else's: left alone
                child.rmdir()


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy, from ``/proc/self/cgroup``: controller name -> path (``""`` for v2)."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own
