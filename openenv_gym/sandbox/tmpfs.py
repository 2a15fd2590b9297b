"""`TmpfsMounts`: the sandbox's writable tmpfs mounts with a cap on their files, not only their bytes.

A tmpfs's ``size=`` counts bytes of file data: an empty file costs none, yet its inode and dentry
are kernel memory the kernel cannot reclaim while the file exists, and a tmpfs allows about as
many inodes as half the machine's pages. Bubblewrap's ``--tmpfs`` takes a size only, so where the
server runs as root the sandbox makes its tmpfs mounts itself, with ``nr_inodes=``, in a mount
namespace of its own (made in the child that becomes bubblewrap, before it runs): bubblewrap binds
them in at ``/tmp``, ``/dev/shm`` and ``/workspace``, and they go with that namespace when the
sandbox's last process ends, whatever ended it. Nothing is mounted in the server's own namespace.

As another user, bubblewrap makes the mounts in its user namespace, and only their size is
capped (the memory cgroup, where there is one, still bounds the inodes' memory: see
:mod:`.cgroup`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import tempfile

__all__ = ["TmpfsMounts"]

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000


class TmpfsMounts:
    """Host directories (empty on the host) on which :meth:`mount` makes capped tmpfs mounts.

    Args:
        sizes: per mount point in the sandbox (``/tmp``...), its size in bytes and its mode.
        files: inodes each mount may hold (files, directories, links).

    Attributes:
        directories: per mount point in the sandbox, the host directory bubblewrap binds there.
    """

    def __init__(self, sizes: dict[str, tuple[int, int]], files: int) -> None:
        self.sizes = sizes
        self.files = files
        self._root = tempfile.mkdtemp(prefix="openenv-gym-mounts-")
        self.directories = {}
        for index, target in enumerate(sizes):
            directory = os.path.join(self._root, str(index))
            os.mkdir(directory, 0o700)
            self.directories[target] = directory
        # Resolved now: the child that mounts runs between fork and exec, where loading is unsafe.
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._options = {
            target: f"size={size},nr_inodes={files},mode={mode:o}".encode() for target, (size, mode) in sizes.items()
        }

    @staticmethod
    @functools.cache
    def available() -> bool:
        """Whether this process may make a mount namespace of its own (root with ``CAP_SYS_ADMIN``;
        not, say, root in a container without it): asked once, in a forked child."""
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only asks and exits
            os._exit(0 if libc.unshare(_CLONE_NEWNS) == 0 else 1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    def mount(self) -> None:
        """In a new mount namespace of the calling process (root), mount each tmpfs on its directory.

        Meant for ``preexec_fn``: the child that runs bubblewrap calls it, so the mounts exist in
        its namespace only. Raises ``OSError`` when the kernel refuses.
        """
        libc = self._libc
        if libc.unshare(_CLONE_NEWNS) != 0:
            raise _error("unshare(CLONE_NEWNS)")
        # Private: the mounts below must not propagate back to the server's namespace.
        if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            raise _error("mount --make-rprivate /")
        for target, directory in self.directories.items():
            if libc.mount(b"tmpfs", directory.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, self._options[target]) != 0:
                raise _error(f"mount tmpfs for {target}")

    def remove(self) -> None:
        """Remove the (empty, on the host) directories."""
        shutil.rmtree(self._root, ignore_errors=True)


def _error(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")
