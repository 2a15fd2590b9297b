"""`Limits`: what one run of untrusted code may use inside a sandbox."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Limits"]

_MiB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resource limits of one run.

    Attributes:
        wall_time: seconds a run may take, from fork to exit; then every process of it is killed.
        cpu_time: seconds of CPU time per process (the kernel sends SIGXCPU then, SIGKILL a second later).
        memory: bytes of address space per process (allocations past it raise ``MemoryError``).
        run_memory: bytes a run may use with all its processes together, counting the files it
            keeps in the sandbox's tmpfs mounts and the kernel memory it causes (the inodes of the
            files it creates...): a memory cgroup, where one can be made (see
            :class:`~openenv_gym.sandbox.cgroup.RunCgroup`; elsewhere only ``memory`` applies).
            Past it the run's processes are killed and the result says so.
        file_size: bytes, the largest file a run may write (writes past it fail with ``EFBIG``).
        scratch_size: bytes of the private writable temporary directory, all files together.
        workspace_size: bytes of the workspace, all files together (only a sandbox made with
            ``workspace=True`` has one: a directory that keeps its files from run to run).
        files: files (inodes: directories and links too) each of the sandbox's tmpfs mounts may
            hold, ``/tmp``, ``/dev/shm`` and the workspace (past it, creating one fails with
            ``ENOSPC``); where the server runs as root (see :mod:`~openenv_gym.sandbox.tmpfs`).
        processes: processes and threads a run may have at once (a fork bomb hits this wall),
            counted per run by the cgroup's pids controller where there is one.
        open_files: file descriptors per process.
        output_limit: bytes of stdout and of stderr kept per run; the rest is counted and dropped.
        result_limit: bytes of function results kept per run.
    """

    wall_time: float = 10.0
    cpu_time: int = 10
    memory: int = 1024 * _MiB
    run_memory: int = 1536 * _MiB
    file_size: int = 16 * _MiB
    scratch_size: int = 64 * _MiB
    workspace_size: int = 64 * _MiB
    files: int = 32768
    processes: int = 32
    open_files: int = 256
    output_limit: int = 64 * 1024
    result_limit: int = 1 * _MiB

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{field.name} must be a positive number, got {value!r}")

    def worker_config(
        self, *, uid: int | None, isolated: bool, workdir: str, workspace: str | None = None
    ) -> dict[str, Any]:
        """The configuration message the sandbox worker starts from."""
        return {
            "uid": uid,
            "isolated": isolated,
            "workdir": workdir,
            "workspace": workspace,
            "cpu_time": int(self.cpu_time),
            "memory": int(self.memory),
            "file_size": int(self.file_size),
            "processes": int(self.processes),
            "open_files": int(self.open_files),
            "output_limit": int(self.output_limit),
            "result_limit": int(self.result_limit),
        }
