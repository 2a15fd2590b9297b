"""The seccomp filter bubblewrap loads for the sandbox: no new user namespaces, no setns, no ptrace.

Inside a user namespace of its own, code holds every capability over the namespaces it creates
there (mounts, network, pids), the first step of many kernel exploits. Run as root, bubblewrap
gives the sandbox no user namespace (runs drop to an unprivileged uid instead), so its
``--disable-userns``, which works by limiting a user namespace of the sandbox's, cannot apply:
this filter denies the system calls instead, in either mode.

It is a classic BPF program (``struct sock_filter`` records), built here without libseccomp and
passed to ``bwrap --seccomp FD``, which installs it just before it runs the worker; every process
of the sandbox inherits it. Denied:

- ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` in their flags (``EPERM``);
- ``clone3``, whose flags are in memory a filter cannot read (``ENOSYS``, so the C library falls
  back to ``clone``, as under Docker's default profile);
- ``setns`` and ``ptrace`` (``EPERM``): there is no namespace to join and no process to trace;
- any system call of another ABI (i386 via ``int 0x80``, x32), whose numbers differ (``EPERM``).

Only x86-64 and AArch64 have a filter (:func:`seccomp_filter` is ``None`` elsewhere).
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["seccomp_filter"]

CLONE_NEWUSER = 0x10000000

# audit architecture, the first x32 number (0 if none), and the numbers of the denied calls.
_ARCHITECTURES = {
    "x86_64": (0xC000003E, 0x40000000, {"clone": 56, "ptrace": 101, "unshare": 272, "setns": 308, "clone3": 435}),
    "aarch64": (0xC00000B7, 0, {"clone": 220, "ptrace": 117, "unshare": 97, "setns": 268, "clone3": 435}),
}

# BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K, _JGE_K, _JSET_K = 0x15, 0x35, 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# Offsets in struct seccomp_data: nr, arch, then the arguments (the low 32 bits first on both).
_NR, _ARCH, _ARG0 = 0, 4, 16


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one's) as bytes for ``bwrap --seccomp``; ``None`` if unsupported.

    Example:
        >>> program = seccomp_filter("x86_64")
        >>> len(program) % 8, seccomp_filter("riscv64")
        (0, None)
    """
    found = _ARCHITECTURES.get(machine or platform.machine())
    if found is None:
        return None
    audit_arch, x32_base, numbers = found
    deny, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    # A string is a label; a jump names its target label (0: the next instruction), resolved
    # to an offset once the program is laid out.
    program: list[str | tuple[int, str | int, str | int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "deny", audit_arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if x32_base:
        program.append((_JGE_K, "deny", 0, x32_base))
    program += [
        (_JEQ_K, "enosys", 0, numbers["clone3"]),
        (_JEQ_K, "deny", 0, numbers["setns"]),
        (_JEQ_K, "deny", 0, numbers["ptrace"]),
        (_JEQ_K, "flags", 0, numbers["unshare"]),
        (_JEQ_K, "flags", 0, numbers["clone"]),
        (_RET_K, 0, 0, _ALLOW),
        "flags",
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JSET_K, "deny", 0, CLONE_NEWUSER),
        (_RET_K, 0, 0, _ALLOW),
        "deny",
        (_RET_K, 0, 0, deny),
        "enosys",
        (_RET_K, 0, 0, enosys),
    ]
    labels: dict[str, int] = {}
    instructions: list[tuple[int, str | int, str | int, int]] = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)

    def offset(target: str | int, index: int) -> int:
        return 0 if isinstance(target, int) else labels[target] - index - 1

    return b"".join(
        struct.pack("=HBBI", code, offset(true, index), offset(false, index), k)
        for index, (code, true, false, k) in enumerate(instructions)
    )
