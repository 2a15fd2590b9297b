"""The sandbox's seccomp filter, run on a small BPF interpreter: what it denies, what it allows, on each ABI."""

from __future__ import annotations

import errno
import struct

import pytest

from openenv_gym.sandbox.seccomp import CLONE_NEWUSER, seccomp_filter

ALLOW = 0x7FFF0000
EPERM, ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
X86_64, I386, AARCH64 = 0xC000003E, 0x40000003, 0xC00000B7
SIGCHLD = 17


def decide(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """What the classic BPF ``program`` returns for one system call (the subset seccomp filters use)."""
    data = struct.pack("=iI", nr, arch) + struct.pack("=Q", 0) + struct.pack("=6Q", arg0, 0, 0, 0, 0, 0)
    instructions = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, true, false, k = instructions[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            (accumulator,) = struct.unpack_from("=I", data, k)
        elif code == 0x06:  # ret k
            return k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += true if taken else false
        else:
            raise AssertionError(f"unexpected BPF opcode {code:#x}")


@pytest.mark.parametrize(
    ("machine", "arch", "numbers"),
    [
        ("x86_64", X86_64, {"clone": 56, "ptrace": 101, "unshare": 272, "setns": 308, "clone3": 435, "getpid": 39}),
        ("aarch64", AARCH64, {"clone": 220, "ptrace": 117, "unshare": 97, "setns": 268, "clone3": 435, "getpid": 172}),
    ],
)
def test_the_filter_denies_new_user_namespaces_setns_and_ptrace_only(machine, arch, numbers):
    """unshare/clone with CLONE_NEWUSER, setns and ptrace get EPERM, clone3 ENOSYS; other calls and flags pass."""
    program = seccomp_filter(machine)
    assert program is not None
    assert decide(program, arch, numbers["unshare"], CLONE_NEWUSER) == EPERM
    assert decide(program, arch, numbers["clone"], CLONE_NEWUSER | SIGCHLD) == EPERM
    assert decide(program, arch, numbers["setns"]) == EPERM
    assert decide(program, arch, numbers["ptrace"]) == EPERM
    assert decide(program, arch, numbers["clone3"]) == ENOSYS
    assert decide(program, arch, numbers["unshare"], 0x00000200) == ALLOW  # CLONE_FS: not a namespace
    assert decide(program, arch, numbers["clone"], SIGCHLD) == ALLOW  # a fork
    assert decide(program, arch, numbers["getpid"]) == ALLOW


def test_other_abis_are_denied_outright():
    """i386 calls (int 0x80) and x32 calls on x86-64 have other numbers: every one is refused."""
    program = seccomp_filter("x86_64")
    assert program is not None
    assert decide(program, I386, 310, CLONE_NEWUSER) == EPERM  # i386 unshare
    assert decide(program, I386, 20) == EPERM  # i386 getpid: refused too
    assert decide(program, X86_64, 0x40000000 + 272, CLONE_NEWUSER) == EPERM  # x32 unshare
    assert decide(program, AARCH64, 39) == EPERM


def test_machines_without_a_filter_get_none():
    """An architecture without a table gets no filter rather than a wrong one."""
    assert seccomp_filter("riscv64") is None
