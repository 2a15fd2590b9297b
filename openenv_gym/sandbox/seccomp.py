"""The seccomp filter bubblewrap loads for the sandbox: the system calls agent code never needs are refused.

Agent code needs files, memory, processes, threads, pipes and sockets (of its own network
namespace, which has only a loopback). What it never needs is the kernel's machinery for
administering a machine, debugging other processes or building containers, and that machinery is
where most kernel exploits start. Bubblewrap already keeps a run from most of it through
capabilities (a run has none) and namespaces; the filter refuses it outright, so a kernel bug
behind a capability check, or a capability gained in a namespace of the run's own, is out of
reach as well. Run as root, bubblewrap gives the sandbox no user namespace (runs drop to an
unprivileged uid instead), so its ``--disable-userns`` cannot apply: the filter is what keeps
runs from making user namespaces of their own, in either mode.

The program is built with libseccomp (through ``pyseccomp``, a ctypes binding with the API of
libseccomp's own Python bindings), exported as classic BPF and passed to ``bwrap --seccomp FD``,
which installs it just before it runs the worker; every process of the sandbox inherits it. The
default is to allow; refused (:data:`DENIED` lists each call with the reason):

- the calls of :data:`DENIED`, whatever their arguments (``EPERM``);
- ``unshare`` and ``clone`` with any ``CLONE_NEW*`` flag, a new namespace (``EPERM``); ``clone``
  without one (a thread, a fork) is allowed;
- ``clone3``, whose flags are in memory a filter cannot read (``ENOSYS``, so the C library falls
  back to ``clone``, as under Docker's default profile);
- the calls of :data:`IPC_OBJECT_CALLS`, System V message queues, shared memory and semaphores and
  POSIX message queues (``ENOSYS``, as from a kernel built without them), unless the sandbox
  allows them (``ipc_objects``): they make kernel objects that outlive their process, kept by the
  sandbox's IPC namespace from one run to the next, which is how one run would hand the next what
  it must not see (a hidden test's arguments). POSIX shared memory and semaphores are files in
  ``/dev/shm``, which :mod:`multiprocessing` uses, and stay allowed;
- ``personality`` but for the values Docker's default profile allows: ``PER_LINUX`` (0),
  ``PER_LINUX32`` (8), ``UNAME26`` (0x20000), both (0x20008), and the query (0xffffffff)
  (``EPERM``): the other flags turn off address-space randomisation, make readable memory
  executable or map page zero;
- ``socket`` of any address family but :data:`SOCKET_FAMILIES` (``AF_UNIX``, and ``AF_INET`` and
  ``AF_INET6`` for the run's own loopback), and ``socketpair`` of any but ``AF_UNIX``
  (``EAFNOSUPPORT``, as a kernel built without the family answers): a network namespace has
  only a loopback for IP, but it does not separate ``AF_VSOCK`` (the host of a virtual machine
  and its other guests), and the other families (netlink, packet, crypto, Bluetooth, CAN,
  TIPC, RDS, XDP...) are kernel code no run needs and where many kernel bugs have been found;
- any system call of another ABI (i386 through ``int 0x80``, x32), whose numbers differ (``EPERM``).

Only x86-64 and AArch64 have a filter (:func:`seccomp_filter` is ``None`` elsewhere). Building it
needs the libseccomp shared library (Debian/Ubuntu: ``libseccomp2``, which ``apt`` itself needs).
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import platform
from types import ModuleType

from ..errors import SandboxUnavailableError

__all__ = [
    "CLONE_NEWUSER",
    "DENIED",
    "IPC_OBJECT_CALLS",
    "PERSONALITIES",
    "SOCKET_FAMILIES",
    "seccomp_filter",
    "syscall_number",
]

# The namespace flags of clone(2) and unshare(2) (linux/sched.h). CLONE_NEWTIME shares its bit
# with clone's exit signal (CSIGNAL), so only unshare and clone3 take it.
CLONE_NEWTIME = 0x00000080
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_CLONE_NAMESPACES = (
    CLONE_NEWNS,
    CLONE_NEWCGROUP,
    CLONE_NEWUTS,
    CLONE_NEWIPC,
    CLONE_NEWUSER,
    CLONE_NEWPID,
    CLONE_NEWNET,
)
_UNSHARE_NAMESPACES = (*_CLONE_NAMESPACES, CLONE_NEWTIME)

#: The address families ``socket`` may open (linux/socket.h): AF_UNIX, AF_INET, AF_INET6.
SOCKET_FAMILIES = (1, 2, 10)
_AF_UNIX = 1
_AF_MAX = 64  # above every family Linux has (AF_MAX is 46 in 6.x): one rule covers the rest

# The personality(2) values allowed: PER_LINUX, PER_LINUX32, UNAME26, both, and the query.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)

_PTRACE = "reaches into another process, which a run has no business with"
_MOUNTS = "the file-system layout is bubblewrap's, fixed before any run starts"
_KEYS = "the kernel's keyrings are not namespaced: other processes' keys, and many kernel bugs"
_MODULES = "loads or removes kernel code"
_CLOCK = "the clock is the host's"
_IO_URING = "a second way into the kernel that seccomp cannot see, behind many recent kernel exploits"

# Every system call refused whatever its arguments, with the reason. A name the machine's ABI
# lacks (iopl on AArch64, umount on both) is skipped by libseccomp.
DENIED: dict[str, str] = {
    "ptrace": "debugs other processes: their memory, registers and system calls",
    "process_vm_readv": f"reads another process's memory: {_PTRACE}",
    "process_vm_writev": f"writes another process's memory: {_PTRACE}",
    "process_madvise": f"acts on another process's memory: {_PTRACE}",
    "kcmp": f"compares other processes' kernel objects (a kernel-address oracle): {_PTRACE}",
    "pidfd_getfd": f"copies a file descriptor out of another process: {_PTRACE}",
    "mount": _MOUNTS,
    "umount": _MOUNTS,
    "umount2": _MOUNTS,
    "pivot_root": _MOUNTS,
    "chroot": _MOUNTS,
    "fsopen": f"the new mount API: {_MOUNTS}",
    "fsconfig": f"the new mount API: {_MOUNTS}",
    "fsmount": f"the new mount API: {_MOUNTS}",
    "fspick": f"the new mount API: {_MOUNTS}",
    "move_mount": f"the new mount API: {_MOUNTS}",
    "open_tree": f"the new mount API: {_MOUNTS}",
    "mount_setattr": f"the new mount API: {_MOUNTS}",
    "setns": "joins another namespace: the run's are the sandbox's, and there are none of its own",
    "keyctl": _KEYS,
    "add_key": _KEYS,
    "request_key": _KEYS,
    "bpf": "loads programs into the kernel",
    "perf_event_open": "performance counters: side channels on other processes, and many kernel bugs",
    "userfaultfd": "stalls the kernel's page faults at will, the staple of kernel race exploits",
    "io_uring_setup": _IO_URING,
    "io_uring_enter": _IO_URING,
    "io_uring_register": _IO_URING,
    "init_module": _MODULES,
    "finit_module": _MODULES,
    "delete_module": _MODULES,
    "kexec_load": "boots another kernel",
    "kexec_file_load": "boots another kernel",
    "reboot": "reboots or halts the machine",
    "swapon": "the machine's swap",
    "swapoff": "the machine's swap",
    "acct": "process accounting, written to a file of the caller's choice",
    "iopl": "raw access to I/O ports",
    "ioperm": "raw access to I/O ports",
    "open_by_handle_at": "opens a file by its handle, past every path's permissions (the 'shocker' escape)",
    "name_to_handle_at": "a file's handle, the other half of open_by_handle_at",
    "lookup_dcookie": "kernel profiling's path lookup",
    "quotactl": "disk quotas of the host's file systems",
    "quotactl_fd": "disk quotas of the host's file systems",
    "syslog": "the kernel's log: kernel addresses, other processes' messages",
    "settimeofday": _CLOCK,
    "clock_settime": _CLOCK,
    "clock_adjtime": _CLOCK,
    "adjtimex": _CLOCK,
    "vhangup": "hangs up the terminal",
    "uselib": "an obsolete way to load a library, kept by few kernels",
}

#: The calls that make and use IPC objects: refused unless a sandbox allows them (``ipc_objects``).
IPC_OBJECT_CALLS = (
    *("msgget", "msgsnd", "msgrcv", "msgctl"),
    *("shmget", "shmat", "shmdt", "shmctl"),
    *("semget", "semop", "semtimedop", "semctl"),
    *("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
)

# platform.machine() -> libseccomp's architecture token (SCMP_ARCH_*), AUDIT_ARCH_* of linux/audit.h.
_ARCHITECTURES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SCMP_ERROR = -1  # what libseccomp resolves a name it does not know to (__NR_SCMP_ERROR)


def seccomp_filter(machine: str | None = None, *, ipc_objects: bool = False) -> bytes | None:
    """The filter for ``machine`` (default: this one's) as classic BPF for ``bwrap --seccomp``; ``None`` if unsupported.

    ``ipc_objects``: allow the calls of :data:`IPC_OBJECT_CALLS` (refused by default). Built once
    per machine and choice (a few milliseconds) and cached.

    Raises:
        SandboxUnavailableError: libseccomp is not installed, or is too old to know one of the
            system calls to refuse.

    Example:
        >>> program = seccomp_filter("x86_64")
        >>> len(program) % 8, seccomp_filter("riscv64")
        (0, None)
    """
    arch = _ARCHITECTURES.get(machine or platform.machine())
    return None if arch is None else _build(arch, ipc_objects)


def syscall_number(name: str, machine: str | None = None) -> int:
    """The number of system call ``name`` on ``machine`` (default: this one's), as libseccomp knows it.

    Negative for a call the machine's ABI lacks.

    Raises:
        SandboxUnavailableError: libseccomp is not installed.
        ValueError: an unknown machine, or a name libseccomp does not know.

    Example:
        >>> syscall_number("ptrace", "x86_64"), syscall_number("ptrace", "aarch64")
        (101, 117)
    """
    machine = machine or platform.machine()
    if machine not in _ARCHITECTURES:
        raise ValueError(f"no seccomp filter for {machine!r}; known: {sorted(_ARCHITECTURES)}")
    number = int(_libseccomp().resolve_syscall(_ARCHITECTURES[machine], name))
    if number == _SCMP_ERROR:
        raise ValueError(f"libseccomp knows no system call {name!r}")
    return number


def _libseccomp() -> ModuleType:
    """The ``pyseccomp`` module, which loads libseccomp when imported."""
    try:  # imported by name: it ships no type information, and what it gives is a ModuleType to us
        pyseccomp = importlib.import_module("pyseccomp")
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: it found no libseccomp
        raise SandboxUnavailableError(
            f"no sandbox: its seccomp filter needs libseccomp, which could not be loaded ({exc}). Install "
            "it (Debian/Ubuntu: `apt-get install libseccomp2`; Fedora: `dnf install libseccomp`), or pass "
            "sandbox='none' to run agent code without a sandbox (only for trusted code or inside a container)."
        ) from exc
    return pyseccomp


@functools.cache
def _build(arch: int, ipc_objects: bool) -> bytes:
    seccomp = _libseccomp()
    deny, enosys = seccomp.ERRNO(errno.EPERM), seccomp.ERRNO(errno.ENOSYS)
    program = seccomp.SyscallFilter(seccomp.ALLOW)
    # The filter knows one ABI: a call of any other (x32's numbers, i386's) is refused whole.
    program.set_attr(seccomp.Attr.ACT_BADARCH, deny)
    try:  # a binary search over the numbers: an allowed call takes ~12 instructions, not ~60
        program.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)
    except OSError:  # libseccomp before 2.5: the same decisions, in a list
        pass
    if arch != seccomp.system_arch():
        program.add_arch(arch)
        program.remove_arch(seccomp.Arch.NATIVE)

    def rule(action: int, name: str, *comparisons: object) -> None:
        if seccomp.resolve_syscall(arch, name) == _SCMP_ERROR:
            raise SandboxUnavailableError(
                f"no sandbox: this libseccomp is too old to know the system call {name!r} its filter refuses "
                "(2.5.4, Debian 12's, knows them all)"
            )
        # Names resolve to the native ABI's numbers; libseccomp translates them for `arch`.
        program.add_rule(action, seccomp.resolve_syscall(seccomp.Arch.NATIVE, name), *comparisons)

    for name in DENIED:
        rule(deny, name)
    rule(enosys, "clone3")
    for name in () if ipc_objects else IPC_OBJECT_CALLS:
        rule(enosys, name)
    # One rule per flag: a rule compares each argument once, and any one flag is a namespace.
    for flag in _CLONE_NAMESPACES:
        rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for flag in _UNSHARE_NAMESPACES:
        rule(deny, "unshare", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for comparison in _personality_denials(seccomp):
        rule(deny, "personality", comparison)
    no_family = seccomp.ERRNO(errno.EAFNOSUPPORT)
    for comparison in _family_denials(seccomp, SOCKET_FAMILIES):
        rule(no_family, "socket", comparison)
    for comparison in _family_denials(seccomp, (_AF_UNIX,)):
        rule(no_family, "socketpair", comparison)
    with os.fdopen(os.memfd_create("openenv-gym-seccomp", os.MFD_CLOEXEC), "w+b") as exported:
        program.export_bpf(exported)
        exported.seek(0)
        return exported.read()


def _family_denials(seccomp: ModuleType, allowed: tuple[int, ...]) -> list[object]:
    """Comparisons of a socket call's first argument, one per rule, that together match every
    address family but ``allowed``: each other family below ``_AF_MAX``, and anything above it
    (a negative ``int`` included, which the filter sees as a large 64-bit value)."""
    comparisons: list[object] = [
        seccomp.Arg(0, seccomp.EQ, family) for family in range(_AF_MAX) if family not in allowed
    ]
    comparisons.append(seccomp.Arg(0, seccomp.GE, _AF_MAX))
    return comparisons


def _personality_denials(seccomp: ModuleType) -> list[object]:
    """Comparisons of personality's argument, one per rule, that together match all but :data:`PERSONALITIES`.

    A rule can compare an argument once only, so "not one of these five values" is spelt as a
    union. With ``free`` the bits outside ``PER_LINUX32 | UNAME26``, an allowed value has all its
    free bits clear (the four flag values) or all set (the query). Any other value has a free bit
    set and one clear, so walking the free bits round in a circle there is a set bit followed by
    a clear one: one rule per pair of neighbours matches it. What is left are the three values
    with every free bit set but not the query, and anything past 32 bits (the kernel reads 32;
    the C library's wrapper sends no more).
    """
    kept = 0x20008
    free = [bit for bit in range(32) if not kept >> bit & 1]
    comparisons: list[object] = []
    for index, bit in enumerate(free):
        after = free[(index + 1) % len(free)]
        comparisons.append(seccomp.Arg(0, seccomp.MASKED_EQ, (1 << bit) | (1 << after), 1 << bit))
    all_free = 0xFFFFFFFF & ~kept
    comparisons += [seccomp.Arg(0, seccomp.EQ, all_free | extra) for extra in (0x0, 0x8, 0x20000)]
    comparisons.append(seccomp.Arg(0, seccomp.GT, 0xFFFFFFFF))
    return comparisons
