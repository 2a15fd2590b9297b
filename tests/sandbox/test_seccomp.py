"""The sandbox's seccomp filter: what its program decides (on a small BPF interpreter, on each ABI), what
hostile code gets in a real sandbox, and what ordinary code can still do there."""

from __future__ import annotations

import errno
import json
import os
import platform
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openenv_gym.sandbox import Limits, Sandbox
from openenv_gym.sandbox.bubblewrap import bwrap_command, find_bwrap
from openenv_gym.sandbox.seccomp import (
    CLONE_NEWUSER,
    DENIED,
    IPC_OBJECT_CALLS,
    PERSONALITIES,
    SOCKET_FAMILIES,
    seccomp_filter,
    syscall_number,
)
from tests.utils import REPO_ROOT, UNIT

ALLOW = 0x7FFF0000
EPERM, ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
EAFNOSUPPORT = 0x00050000 | errno.EAFNOSUPPORT
AF_UNIX, AF_INET, AF_INET6, AF_VSOCK = 1, 2, 10, 40
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
MACHINES = {"x86_64": X86_64, "aarch64": AARCH64}
SIGCHLD = 17
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": CLONE_NEWUSER,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
CLONE_NEWTIME = 0x80  # unshare only: in clone's flags that bit is the exit signal's
THREAD_FLAGS = 0x003D0F00  # what the C library's pthread_create passes to clone (VM|FS|FILES|SIGHAND|THREAD|...)
HERE = platform.machine()
pytestmark = pytest.mark.skipif(HERE not in MACHINES, reason="the filter exists for x86-64 and AArch64 only")


def decide(program: bytes, arch: int, nr: int, *args: int) -> int:
    """What the classic BPF ``program`` returns for one system call (the instructions libseccomp emits)."""
    padded = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(arg & 0xFFFFFFFFFFFFFFFF for arg in padded))
    instructions = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    for _ in range(len(instructions)):  # classic BPF only jumps forward
        code, true, false, k = instructions[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            (accumulator,) = struct.unpack_from("=I", data, k)
        elif code == 0x54:  # and #k
            accumulator &= k
        elif code == 0x06:  # ret #k
            return k
        elif code == 0x05:  # ja
            pc += k
        elif code in (0x15, 0x25, 0x35, 0x45):  # jeq, jgt, jge, jset
            taken = {0x15: accumulator == k, 0x25: accumulator > k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}
            pc += true if taken[code] else false
        else:
            raise AssertionError(f"unexpected BPF opcode {code:#x}")
    raise AssertionError("the program ran off its end")


# --- the program, decision by decision, on both ABIs -------------------------------------------


@pytest.mark.parametrize("machine", list(MACHINES))
def test_every_denied_call_is_refused_whatever_its_arguments(machine):
    program, arch = seccomp_filter(machine), MACHINES[machine]
    assert program is not None
    present = {name: syscall_number(name, machine) for name in DENIED}
    present = {name: nr for name, nr in present.items() if nr >= 0}  # iopl and friends are x86's only
    assert len(present) >= len(DENIED) - 5
    for name, nr in present.items():
        for args in [(), (0xFFFFFFFF, 1, 2), (2**63, 2**32)]:
            assert decide(program, arch, nr, *args) == EPERM, (machine, name, args)
    assert decide(program, arch, syscall_number("clone3", machine), 0, 88) == ENOSYS
    for name in ("read", "write", "openat", "mmap", "futex", "getpid", "execve", "wait4", "socket", "prctl"):
        assert decide(program, arch, syscall_number(name, machine), 1, 2, 3) == ALLOW, name


@pytest.mark.parametrize("machine", list(MACHINES))
def test_namespace_flags_are_refused_and_threads_and_forks_are_not(machine):
    program, arch = seccomp_filter(machine), MACHINES[machine]
    assert program is not None
    clone, unshare = syscall_number("clone", machine), syscall_number("unshare", machine)
    for name, flag in NAMESPACE_FLAGS.items():
        assert decide(program, arch, clone, flag | SIGCHLD) == EPERM, name
        assert decide(program, arch, clone, flag | THREAD_FLAGS | 2**40) == EPERM, name
        assert decide(program, arch, unshare, flag) == EPERM, name
    assert decide(program, arch, unshare, CLONE_NEWTIME) == EPERM
    assert decide(program, arch, clone, SIGCHLD) == ALLOW  # fork
    assert decide(program, arch, clone, THREAD_FLAGS) == ALLOW  # a thread
    assert decide(program, arch, clone, 0x4000 | 0x100 | SIGCHLD) == ALLOW  # vfork, as posix_spawn makes
    assert decide(program, arch, clone, 0x80 | SIGCHLD) == ALLOW  # exit signal bits, not CLONE_NEWTIME
    assert decide(program, arch, unshare, 0x200 | 0x400) == ALLOW  # CLONE_FS | CLONE_FILES: not namespaces


@pytest.mark.parametrize("machine", list(MACHINES))
def test_ipc_objects_are_refused_unless_the_sandbox_allows_them(machine):
    """System V IPC and POSIX message queues: ENOSYS whatever the arguments, by default; allowed with
    ``ipc_objects``, and nothing else changes."""
    refusing, allowing = seccomp_filter(machine), seccomp_filter(machine, ipc_objects=True)
    assert refusing is not None and allowing is not None
    arch = MACHINES[machine]
    assert len(IPC_OBJECT_CALLS) == 18
    for name in IPC_OBJECT_CALLS:
        nr = syscall_number(name, machine)
        for args in [(), (0, 0o1666, 0), (2**63, 2**32, 1)]:
            assert decide(refusing, arch, nr, *args) == ENOSYS, (machine, name, args)
            assert decide(allowing, arch, nr, *args) == ALLOW, (machine, name, args)
    for name in ("ptrace", "keyctl", "mount"):
        assert decide(allowing, arch, syscall_number(name, machine)) == EPERM, name
    assert decide(allowing, arch, syscall_number("clone3", machine)) == ENOSYS
    for name in ("read", "openat", "futex", "memfd_create"):
        assert decide(refusing, arch, syscall_number(name, machine), 1, 2) == ALLOW, name


@pytest.mark.parametrize("machine", list(MACHINES))
def test_personality_takes_only_dockers_values(machine):
    """0, PER_LINUX32, UNAME26, both, and the query pass; everything else, checked bit by bit, is refused."""
    program, arch = seccomp_filter(machine), MACHINES[machine]
    assert program is not None
    nr = syscall_number("personality", machine)
    for value in PERSONALITIES:
        assert decide(program, arch, nr, value) == ALLOW, hex(value)
    candidates = {1 << a | 1 << b for a in range(32) for b in range(32)}  # one or two bits set
    candidates |= {value ^ (1 << bit) for value in PERSONALITIES for bit in range(32)}  # one bit off each allowed
    candidates |= {0xFFFFFFFF ^ (1 << a | 1 << b) for a in range(32) for b in range(32)}
    candidates |= {0x0040000, 0x0400000, 0x0100000, 2**32, 2**32 | 0xFFFFFFFF, 2**64 - 1, 0xFFFFFFF7}
    for value in candidates - set(PERSONALITIES):
        assert decide(program, arch, nr, value) == EPERM, hex(value)


@pytest.mark.parametrize("machine", list(MACHINES))
def test_sockets_open_only_unix_and_ip_families(machine):
    """socket: AF_UNIX, AF_INET, AF_INET6 pass, every other family (AF_VSOCK among them) and any value
    past them is refused with EAFNOSUPPORT; socketpair: AF_UNIX only."""
    program, arch = seccomp_filter(machine), MACHINES[machine]
    assert program is not None
    assert SOCKET_FAMILIES == (AF_UNIX, AF_INET, AF_INET6)
    socket_nr, pair_nr = syscall_number("socket", machine), syscall_number("socketpair", machine)
    for family in range(256):
        allowed = family in SOCKET_FAMILIES
        assert decide(program, arch, socket_nr, family, 1, 0) == (ALLOW if allowed else EAFNOSUPPORT), family
        assert decide(program, arch, pair_nr, family, 1, 0) == (ALLOW if family == AF_UNIX else EAFNOSUPPORT), family
    for sneaky in (2**32 | AF_VSOCK, 2**32 | AF_UNIX, 2**64 - 1, 2**63 | AF_INET, 0xFFFFFFFF):
        assert decide(program, arch, socket_nr, sneaky, 1, 0) == EAFNOSUPPORT, hex(sneaky)


def test_other_abis_are_refused_outright():
    """i386 calls (int 0x80) and x32 calls on x86-64 have other numbers, AArch32 on AArch64: every one is refused."""
    x86, arm = seccomp_filter("x86_64"), seccomp_filter("aarch64")
    assert x86 is not None and arm is not None
    assert decide(x86, I386, 20) == EPERM  # i386 getpid
    assert decide(x86, I386, 310, CLONE_NEWUSER) == EPERM  # i386 unshare
    assert decide(x86, X86_64, 0x40000000 + 39) == EPERM  # x32 getpid
    assert decide(x86, AARCH64, 172) == EPERM
    assert decide(arm, ARM, 20) == EPERM  # AArch32 getpid
    assert decide(arm, X86_64, 39) == EPERM


def test_machines_without_a_filter_get_none():
    """An architecture without a table gets no filter rather than a wrong one."""
    assert seccomp_filter("riscv64") is None
    with pytest.raises(ValueError, match="riscv64"):
        syscall_number("ptrace", "riscv64")
    with pytest.raises(ValueError, match="no system call 'no_such_call'"):
        syscall_number("no_such_call")


# --- hostile code in a real sandbox ---------------------------------------------------------------

# Helpers the hostile programs run with: sc() makes a raw system call and gives its errno (0 if it
# worked); child() makes it in a forked child, so one that worked changes only that child.
PRELUDE = """\
import ctypes, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    return ctypes.get_errno() if result == -1 else 0
def child(nr, *args):
    pid = os.fork()
    if pid == 0:
        os._exit(sc(nr, *args))
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
def buffer(size=4096):
    return ctypes.create_string_buffer(size)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def vm(nr):
    ours, theirs = buffer(16), buffer(16)
    local, remote = iovec(ctypes.addressof(ours), 16), iovec(ctypes.addressof(theirs), 16)
    return sc(nr, os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
def handle():
    found = buffer(8 + 128)
    ctypes.c_uint.from_buffer(found).value = 128
    return found
def int80(number):
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(b"\\xb8" + number.to_bytes(4, "little") + b"\\xcd\\x80\\xc3")  # mov eax, number; int 0x80; ret
    result = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
    return -result if -4096 < result < 0 else 0
def in_child(call):
    pid = os.fork()
    if pid == 0:
        os._exit(call())
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
"""


def _opens(family: int, kind: int, protocol: int) -> bool:
    """Whether this process, outside any sandbox, can open a socket of ``family`` (the kernel has it)."""
    import socket

    try:
        socket.socket(family, kind, protocol).close()
    except OSError:
        return False
    return True


# Family -> call -> (Python expression, whether an unprivileged process could make it without the
# filter: the arguments are valid, or the kernel would refuse them with another errno). The
# others need a capability the sandbox drops anyway: for them the filter is a second wall, and
# the program's own decisions are checked above. {name} is the number of system call `name`.
AT_FDCWD = -100
HOSTILE: dict[str, dict[str, tuple[str, bool]]] = {
    "trace other processes": {
        "ptrace(PTRACE_TRACEME)": ("child({ptrace}, 0, 0, 0, 0)", True),
        "process_vm_readv(itself)": ("vm({process_vm_readv})", True),
        "process_vm_writev(itself)": ("vm({process_vm_writev})", True),
        "process_madvise": ("sc({process_madvise}, -1, 0, 0, 0, 0)", True),
        "kcmp(itself, itself)": ("sc({kcmp}, os.getpid(), os.getpid(), 0, 0, 0)", True),
        "pidfd_getfd": ("sc({pidfd_getfd}, -1, 0, 0)", True),
    },
    "mount file systems": {
        "mount(tmpfs)": ('sc({mount}, b"none", b"/tmp", b"tmpfs", 0, 0)', False),
        "umount2": ('sc({umount2}, b"/tmp", 0)', False),
        "pivot_root": ('sc({pivot_root}, b"/tmp", b"/tmp")', False),
        "chroot": ('sc({chroot}, b"/tmp")', False),
        "fsopen": ('sc({fsopen}, b"tmpfs", 0)', False),
        "fsconfig": ("sc({fsconfig}, -1, 0, 0, 0, 0)", True),
        "fsmount": ("sc({fsmount}, -1, 0, 0)", False),
        "fspick": (f'sc({{fspick}}, {AT_FDCWD}, b"/tmp", 0)', False),
        "move_mount": ('sc({move_mount}, -1, b"", -1, b"", 0)', False),
        "open_tree(/tmp)": (f'sc({{open_tree}}, {AT_FDCWD}, b"/tmp", 0)', True),
        "mount_setattr": ('sc({mount_setattr}, -1, b"", 0, 0, 0)', True),
    },
    "make or join namespaces": {
        **{
            f"unshare({name})": (f"child({{unshare}}, {flag})", name == "CLONE_NEWUSER")
            for name, flag in {**NAMESPACE_FLAGS, "CLONE_NEWTIME": CLONE_NEWTIME}.items()
        },
        **{
            f"clone({name} | SIGCHLD)": (f"child({{clone}}, {flag | SIGCHLD}, 0, 0, 0, 0)", name == "CLONE_NEWUSER")
            for name, flag in NAMESPACE_FLAGS.items()
        },
        "setns": ("sc({setns}, -1, 0)", True),
        "clone3": ("sc({clone3}, 0, 0)", True),
    },
    "use the kernel's keyrings": {
        "keyctl(KEYCTL_GET_KEYRING_ID)": ("sc({keyctl}, 0, -2, 1)", True),
        "add_key(user)": ('sc({add_key}, b"user", b"openenv-gym-test", b"x", 1, -2)', True),
        "request_key(user)": ('sc({request_key}, b"user", b"openenv-gym-missing", 0, 0)', True),
    },
    "load code into the kernel": {
        "bpf(BPF_PROG_LOAD)": ("sc({bpf}, 5, buffer(), 128)", False),
        "perf_event_open": ("sc({perf_event_open}, buffer(128), 0, -1, -1, 0)", True),
        "userfaultfd(UFFD_USER_MODE_ONLY)": ("sc({userfaultfd}, 1)", True),
        "io_uring_setup": ("sc({io_uring_setup}, 1, buffer(120))", True),
        "io_uring_enter": ("sc({io_uring_enter}, -1, 0, 0, 0, 0, 0)", True),
        "io_uring_register": ("sc({io_uring_register}, -1, 0, 0, 0)", True),
        "init_module": ('sc({init_module}, 0, 0, b"")', False),
        "finit_module": ('sc({finit_module}, -1, b"", 0)', False),
        "delete_module": ('sc({delete_module}, b"openenv_gym_none", 0)', False),
        "kexec_load": ("sc({kexec_load}, 0, 0, 0, 0)", False),
        "kexec_file_load": ('sc({kexec_file_load}, -1, -1, 0, b"", 0)', False),
    },
    "run the machine": {
        # Never the reboot magic numbers: even a call that got through would do nothing.
        "reboot(no magic)": ("sc({reboot}, 0, 0, 0, 0)", False),
        "swapon": ('sc({swapon}, b"/nonexistent", 0)', False),
        "swapoff": ('sc({swapoff}, b"/nonexistent")', False),
        "acct": ('sc({acct}, b"/nonexistent")', False),
        "iopl(0)": ("sc({iopl}, 0)", True),
        "ioperm(off)": ("sc({ioperm}, 0, 0, 0)", True),
        "quotactl": ("sc({quotactl}, 0, 0, 0, 0)", True),
        "quotactl_fd": ("sc({quotactl_fd}, -1, 0, 0, 0)", True),
        "syslog(SYSLOG_ACTION_SIZE_BUFFER)": ("sc({syslog}, 10, 0, 0)", False),
        "lookup_dcookie": ("sc({lookup_dcookie}, 0, 0, 0)", True),
        "settimeofday(NULL, NULL)": ("sc({settimeofday}, 0, 0)", False),
        "clock_settime": ("sc({clock_settime}, 0, 0)", True),
        "clock_adjtime": ("sc({clock_adjtime}, 0, 0)", True),
        "adjtimex": ("sc({adjtimex}, 0)", True),
        "vhangup": ("sc({vhangup})", False),
        "uselib": ("sc({uselib}, 0)", True),
    },
    "open files by handle": {
        "name_to_handle_at(/tmp)": (
            f'sc({{name_to_handle_at}}, {AT_FDCWD}, b"/tmp", handle(), ctypes.byref(ctypes.c_int()), 0)',
            True,
        ),
        "open_by_handle_at": ("sc({open_by_handle_at}, -1, handle(), 0)", False),
    },
    "change the personality": {
        f"personality({value:#x})": (f"child({{personality}}, {value})", True)
        for value in (0x0040000, 0x0400000, 0x0100000, 0xFFFFFFF7, 0x20009)  # no ASLR, READ_IMPLIES_EXEC, page 0
    },
    "open sockets of other families": {
        # Whether the call gets through without the filter depends on the kernel's modules: asked at import.
        f"socket({name})": (f"sc({{socket}}, {family}, {kind}, {protocol})", _opens(family, kind, protocol))
        for name, (family, kind, protocol) in {
            "AF_VSOCK": (AF_VSOCK, 1, 0),
            "AF_NETLINK": (16, 3, 0),
            "AF_PACKET": (17, 3, 0),
            "AF_ALG": (38, 5, 0),
            "AF_KEY": (15, 3, 2),
            "AF_CAN": (29, 3, 1),
            "AF_TIPC": (30, 4, 0),
            "AF_RDS": (21, 5, 0),
            "AF_XDP": (44, 3, 0),
            "AF_BLUETOOTH": (31, 3, 0),
        }.items()
    },
    "make IPC objects": {
        # Each would make an object the sandbox's IPC namespace keeps from run to run, or use one.
        "msgget(IPC_PRIVATE)": ("sc({msgget}, 0, 0o600)", True),
        "msgsnd": ("sc({msgsnd}, -1, buffer(), 1, 0)", True),
        "msgrcv": ("sc({msgrcv}, -1, buffer(), 1, 0, 0o4000)", True),
        "msgctl(IPC_RMID)": ("sc({msgctl}, -1, 0, 0)", True),
        "shmget(IPC_PRIVATE)": ("sc({shmget}, 0, 4096, 0o600)", True),
        "shmat": ("sc({shmat}, -1, 0, 0)", True),
        "shmdt": ("sc({shmdt}, 0)", True),
        "shmctl(IPC_RMID)": ("sc({shmctl}, -1, 0, 0)", True),
        "semget(IPC_PRIVATE)": ("sc({semget}, 0, 1, 0o600)", True),
        "semop": ("sc({semop}, -1, buffer(), 1)", True),
        "semtimedop": ("sc({semtimedop}, -1, buffer(), 1, 0)", True),
        "semctl(IPC_RMID)": ("sc({semctl}, -1, 0, 0)", True),
        "mq_open(O_CREAT)": ('sc({mq_open}, b"openenv-gym-test", 0o100 | 2, 0o600, 0)', True),
        "mq_unlink": ('sc({mq_unlink}, b"openenv-gym-missing")', True),
        "mq_timedsend": ("sc({mq_timedsend}, -1, buffer(), 1, 0, 0)", True),
        "mq_timedreceive": ("sc({mq_timedreceive}, -1, buffer(), 1, 0, 0)", True),
        "mq_notify": ("sc({mq_notify}, -1, 0)", True),
        "mq_getsetattr": ("sc({mq_getsetattr}, -1, 0, 0)", True),
    },
    "call another ABI": {
        "x32 getpid": ("sc(0x40000000 | {getpid})", True),
        "i386 getpid (int 0x80)": ("in_child(lambda: int80(20))", True),
    },
}
if HERE != "x86_64":  # AArch64 runs no AArch32 code here; its ABI lacks the x86 calls
    del HOSTILE["call another ABI"]
    for family in HOSTILE.values():
        for call in [call for call in family if call.split("(")[0] in ("iopl", "ioperm", "lookup_dcookie", "uselib")]:
            del family[call]
EXPECTED = {
    "clone3": errno.ENOSYS,
    **{call: errno.EAFNOSUPPORT for call in HOSTILE["open sockets of other families"]},
    **{call: errno.ENOSYS for call in HOSTILE["make IPC objects"]},
}
# the rest: EPERM


def hostile_program(calls: dict[str, tuple[str, bool]]) -> str:
    """A program that makes ``calls`` and prints a JSON object of their errnos."""
    names = {"getpid", *DENIED, *IPC_OBJECT_CALLS, "clone", "clone3", "unshare", "personality", "socket"}
    numbers = {name: syscall_number(name) for name in names}
    lines = [f"results[{label!r}] = {expression.format(**numbers)}" for label, (expression, _) in calls.items()]
    return PRELUDE + "results = {}\n" + "\n".join(lines) + "\nprint(json.dumps(results))\n"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(Limits(wall_time=10 * UNIT)) as box:
        yield box


@pytest.mark.parametrize("family", list(HOSTILE))
def test_hostile_calls_are_refused_in_the_sandbox(sandbox, family):
    result = sandbox.run(hostile_program(HOSTILE[family]))
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert got == {call: EXPECTED.get(call, errno.EPERM) for call in HOSTILE[family]}, got
    after = sandbox.run("print(sum(range(10)))")
    assert (after.exit_code, after.stdout) == (0, "45\n")


def run_confined(code: str, *, privileged: bool, seccomp: bool) -> subprocess.CompletedProcess[str]:
    """``code`` run once under the sandbox's bubblewrap command line, with or without the filter."""
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("no bubblewrap")
    if privileged and os.geteuid() != 0:
        pytest.skip("the privileged command line needs root")
    program = seccomp_filter() if seccomp else None
    read_end = None
    if program is not None:
        read_end, write_end = os.pipe()
        os.write(write_end, program)
        os.close(write_end)
    python = os.path.realpath(sys.executable)
    argv = bwrap_command(
        bwrap, python, ["-S", "-c", code], scratch_size=2**24, privileged=privileged, seccomp_fd=read_end
    )
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60 * UNIT,
            check=False,
            pass_fds=() if read_end is None else (read_end,),
        )
    finally:
        if read_end is not None:
            os.close(read_end)


@pytest.mark.parametrize("privileged", [True, False], ids=["as root", "in a user namespace"])
def test_both_command_lines_refuse_every_hostile_call(privileged):
    """Run as root the sandbox has no user namespace; as any other user it has one (simulated here):
    the filter refuses the same calls on both command lines."""
    calls = {
        f"{family}: {call}": spec for family, family_calls in HOSTILE.items() for call, spec in family_calls.items()
    }
    done = run_confined(hostile_program(calls), privileged=privileged, seccomp=True)
    assert done.returncode == 0, done.stderr
    expected = {label: EXPECTED.get(label.split(": ", 1)[1], errno.EPERM) for label in calls}
    assert json.loads(done.stdout) == expected


def test_without_the_filter_the_unprivileged_hostile_calls_get_through():
    """The control: the same command line without the filter, no capabilities, the calls an unprivileged
    process can make. None is refused with the filter's errno, so in the sandbox the filter is what
    refuses them."""
    calls = {
        f"{family}: {call}": spec
        for family, family_calls in HOSTILE.items()
        for call, spec in family_calls.items()
        if spec[1] and not (call.startswith("io_uring") and _io_uring_disabled())
    }
    done = run_confined(hostile_program(calls), privileged=os.geteuid() == 0, seccomp=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    refused = {label: code for label, code in got.items() if code == EXPECTED.get(label.split(": ", 1)[1], errno.EPERM)}
    assert refused == {}, got
    assert got["make or join namespaces: unshare(CLONE_NEWUSER)"] == 0  # a user namespace, without the filter
    assert got["trace other processes: ptrace(PTRACE_TRACEME)"] == 0


def _io_uring_disabled() -> bool:
    """Whether this machine's kernel.io_uring_disabled sysctl refuses io_uring to unprivileged processes."""
    try:
        return Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() != "0"
    except OSError:
        return False


# --- ordinary code is unaffected ------------------------------------------------------------------

ORDINARY = """\
import asyncio, ctypes, mmap, multiprocessing, os, socket, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
libc = ctypes.CDLL(None, use_errno=True)
out = []
def square(x):
    return x * x
threads = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("threads", sorted(out))
with ThreadPoolExecutor(4) as pool:
    print("thread pool", sum(pool.map(square, range(10))))
print("subprocess", subprocess.run(["/bin/echo", "hi"], capture_output=True, text=True).stdout.strip())
pid = os.posix_spawn("/bin/true", ["true"], {})
print("posix_spawn", os.waitpid(pid, 0)[1])
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
for method in ("fork", "spawn", "forkserver"):  # the target is a builtin: spawn pickles it by name
    process = multiprocessing.get_context(method).Process(target=sys.exit, args=(9,))
    process.start()
    process.join(30)
    print("multiprocessing", method, process.exitcode)
async def main():
    process = await asyncio.create_subprocess_exec("/bin/echo", "async", stdout=asyncio.subprocess.PIPE)
    return (await process.communicate())[0].decode().strip()
print("asyncio", asyncio.run(main()))
with socket.create_server(("127.0.0.1", 0)) as server:
    client = socket.create_connection(server.getsockname())
    connection, _ = server.accept()
    client.sendall(b"ping")
    print("loopback", connection.recv(4))
    client.close()
    connection.close()
a, b = socket.socketpair()
a.sendall(b"pair")
print("socketpair", b.recv(4))
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
print("mmap exec", len(page))
print("personality query", libc.personality(ctypes.c_ulong(0xFFFFFFFF)), libc.personality(ctypes.c_ulong(0)))
print("unshare(CLONE_FS | CLONE_FILES)", libc.unshare(0x200 | 0x400))
print("clock", time.clock_gettime(time.CLOCK_MONOTONIC) > 0, time.time() > 0)
print("affinity", len(os.sched_getaffinity(0)) > 0)
print("prctl(PR_SET_NAME)", libc.prctl(15, b"openenv", 0, 0, 0))
print("seccomp", [line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp")])
print("done")
"""
ORDINARY_OUTPUT = [
    "threads [0, 1, 2, 3, 4, 5, 6, 7]",
    "thread pool 285",
    "subprocess hi",
    "posix_spawn 0",
    "fork 7",
    "multiprocessing fork 9",
    "multiprocessing spawn 9",
    "multiprocessing forkserver 9",
    "asyncio async",
    "loopback b'ping'",
    "socketpair b'pair'",
    "mmap exec 4096",
    "personality query 0 0",
    "unshare(CLONE_FS | CLONE_FILES) 0",
    "clock True True",
    "affinity True",
    "prctl(PR_SET_NAME) 0",
    "seccomp ['2', '1']",  # filter mode, one filter: the sandbox's
    "done",
]


def test_ordinary_code_runs_as_before(sandbox):
    """Threads, pools, subprocesses, every multiprocessing start method, asyncio, sockets on the sandbox's
    own loopback, executable memory, the personality query: none is touched by the filter."""
    result = sandbox.run(ORDINARY)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ORDINARY_OUTPUT, result.stderr


@pytest.mark.parametrize("privileged", [True, False], ids=["as root", "in a user namespace"])
def test_ordinary_code_runs_under_both_command_lines(privileged):
    done = run_confined(ORDINARY, privileged=privileged, seccomp=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ORDINARY_OUTPUT, done.stderr


def test_a_missing_libseccomp_is_a_clear_error():
    """Without libseccomp there is no filter, so no bubblewrap sandbox: the error says what to install."""
    code = textwrap.dedent(
        """
        import ctypes.util
        found = ctypes.util.find_library
        ctypes.util.find_library = lambda name: None if name == "seccomp" else found(name)  # as on a machine without it
        from openenv_gym.sandbox import Sandbox, SandboxUnavailableError
        try:
            Sandbox()
        except SandboxUnavailableError as exc:
            print(exc)
        print(Sandbox(mechanism="none").run("print(6 * 7)").stdout, end="")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * UNIT, check=False, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    message, unconfined = done.stdout.splitlines()
    assert "needs libseccomp" in message and "apt-get install libseccomp2" in message and "sandbox='none'" in message
    assert unconfined == "42"
