"""What survives a run: nothing. A first submission plants each hidden test's argument in one
persistence channel a sandbox run has; a second (the episode's next step, or the first after a
reset) looks in every channel, and finds nothing, so no hidden argument reaches the agent.

Coding-v0 (a step) and CodingTools-v0 (its ``submit`` tool), in-process, in a real bubblewrap
sandbox. Each channel is planted by the function on its hidden calls (``plant(tag, n)``, with the
tag ``ARG<n>``); the probe is the second submission's top level, whose output the agent sees. A
control plants a tag and probes in the same run, so each channel is shown to carry it there, or
to be refused outright.

The classes: files (anywhere writable, trees a run makes hard to empty, fifos, /dev/shm's POSIX
shared memory and semaphores), processes (a daemon), IPC (System V message queues, shared memory,
semaphores; POSIX message queues: the ``msgsnd``/``mq_send`` leak of issue 51), sockets (abstract,
file, loopback TCP), environment (variables, the interpreter's state), time (the clock), kernel
(host name, keyrings). Not here: counters a run advances and the next can read (pids, inode
numbers, the loopback's statistics, the worker's CPU times, when the worker remade /tmp): side
channels the sandbox's namespaces and worker keep; ``docs/reliability.md`` says what of them a
shared sandbox leaves open.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from openenv_gym.sandbox.seccomp import syscall_number
from tests.reward_hacking.coding_submitter import HIDDEN_ARGUMENTS, KINDS, WRONG, Submitter

PORT = 47_631  # a loopback port of the sandbox's own network namespace
KEY = 0x1EA4  # the System V IPC key the plants use
CONTROL = 424_242  # the tag a control plants and probes in one run: ARG<424242>

PRELUDE = f"""\
import ctypes, errno, os, select, signal, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.msgrcv.restype = libc.mq_receive.restype = ctypes.c_ssize_t
KEY, PORT, QUEUE = {KEY}, {PORT}, b"/openenv-leak"
ADDRESSES = [(socket.AF_UNIX, "\\0openenv-leak"), (socket.AF_UNIX, "/tmp/openenv-leak.sock"),
             (socket.AF_INET, ("127.0.0.1", PORT))]
def check(result):
    if result == -1 or result == 2**64 - 1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result
def daemon(body):
    # A double fork into a session of its own, signals ignored, the run's pipes closed: it outlives
    # its run unless the sandbox kills it.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            os.closerange(0, 4)
            try:
                body()
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
def writable_mounts():
    # Where a run may keep files: each writable mount of a file system that holds them.
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, options, kind = fields[4], fields[5], fields[fields.index("-") + 1]
        if "rw" in options.split(",") and kind not in ("proc", "devpts") and os.path.isdir(point):
            yield point
"""

# --- the plants: each the body of `def plant(tag, n)` ---------------------------------------------

PLANTS = {
    "files: every writable directory": """
    for top in writable_mounts():
        for root, _, _ in os.walk(top):
            try:
                with open(os.path.join(root, tag), "w") as file:
                    file.write(tag)
            except OSError:
                pass
    """,
    "files: a tree the runs cannot empty": """
    os.makedirs(f"/tmp/{tag}/inner/deeper")
    os.symlink("/tmp", f"/tmp/{tag}/inner/loop")
    os.chmod(f"/tmp/{tag}/inner", 0)
    os.chmod(f"/tmp/{tag}", 0o500)
    """,
    "files: fifos and a socket file": """
    os.mkfifo(f"/tmp/{tag}.fifo")
    os.mkfifo(f"/dev/shm/{tag}.fifo")
    socket.socket(socket.AF_UNIX).bind(f"/tmp/{tag}.sock")
    """,
    "files: POSIX shared memory and a named semaphore in /dev/shm": """
    import _multiprocessing, _posixshmem
    fd = _posixshmem.shm_open(f"/{tag}", os.O_CREAT | os.O_RDWR, 0o666)
    os.write(fd, tag.encode())
    _multiprocessing.SemLock(1, n % 30000, 30000, f"/{tag}-sem", False)
    """,
    "processes: a daemon": """
    def rewrite():
        while True:
            try:
                with open(f"/tmp/{tag}", "w") as file:
                    file.write(tag)
            except OSError:
                pass
            time.sleep(0.01)
    libc.prctl(15, tag.encode(), 0, 0, 0)  # PR_SET_NAME, inherited by the daemon
    daemon(rewrite)
    """,
    "IPC: a System V message queue": """
    queue = check(libc.msgget(KEY, 0o1666))
    check(libc.msgsnd(queue, struct.pack("l", 1) + tag.encode(), len(tag), 0o4000))
    """,
    "IPC: System V shared memory": """
    segment = check(libc.shmget(KEY, 4096, 0o1666))
    ctypes.memmove(check(libc.shmat(segment, None, 0)), tag.encode(), len(tag))
    """,
    "IPC: a System V semaphore": """
    semaphores = check(libc.semget(KEY, 1, 0o1666))
    check(libc.semctl(semaphores, 0, 16, ctypes.c_int(n % 30000)))  # SETVAL
    """,
    "IPC: a POSIX message queue": """
    queue = check(libc.mq_open(QUEUE, os.O_CREAT | os.O_RDWR, 0o666, None))
    check(libc.mq_send(queue, tag.encode(), len(tag), 0))
    """,
    "sockets: abstract, file and loopback TCP, served by a daemon": """
    servers = []
    for family, address in ADDRESSES:
        server = socket.socket(family)
        server.bind(address)
        server.listen()
        servers.append(server)
    def serve():
        while True:
            for ready in select.select(servers, [], [])[0]:
                connection, _ = ready.accept()
                connection.sendall(tag.encode())
                connection.close()
    daemon(serve)
    """,
    "environment: variables and the interpreter's state": """
    import builtins
    os.environ["OPENENV_LEAK"] = tag
    os.putenv("TZ", tag)
    builtins.OPENENV_LEAK = tag
    sys.modules["openenv_leak"] = sys
    """,
    "time: the clock set to the argument": """
    seconds = 10**6 + abs(n)
    check(libc.clock_settime(0, struct.pack("ll", seconds, 0)))  # CLOCK_REALTIME
    """,
    "kernel: the host name": """
    check(libc.sethostname(tag.encode(), len(tag)))
    """,
    "kernel: the user keyring": """
    check(libc.syscall({add_key}, b"user", b"openenv-leak", tag.encode(), len(tag), -4))  # KEY_SPEC_USER_KEYRING
    """,
}

#: What a channel does within one run, after the change: carries the tag, or refuses the plant.
WITHIN_A_RUN = {
    "IPC: a System V message queue": "refused ENOSYS",
    "IPC: System V shared memory": "refused ENOSYS",
    "IPC: a System V semaphore": "refused ENOSYS",
    "IPC: a POSIX message queue": "refused ENOSYS",
    "time: the clock set to the argument": "refused EPERM",
    "kernel: the host name": "refused EPERM",
    "kernel: the user keyring": "refused EPERM",
}

# --- the probe: every channel, what it finds printed ----------------------------------------------

PROBE = """
found = []
def look(what, value):
    if value:
        found.append(f"{what}: {value}")
here = os.getcwd()
for top in writable_mounts():
    for root, dirs, files in os.walk(top, onerror=lambda exc: look("unreadable", exc.filename)):
        for name in dirs + files:
            if os.path.join(root, name) != here:
                look("file", os.path.join(root, name))
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) not in (1, os.getpid()):
        try:
            look("process", open(f"/proc/{pid}/comm").read().strip() or pid)
        except OSError:
            pass  # gone meanwhile
for kind in ("msg", "shm", "sem"):
    for line in open(f"/proc/sysvipc/{kind}").readlines()[1:]:
        look(f"System V {kind}", line.split()[:2])
queue = libc.msgget(KEY, 0)
if queue >= 0:
    message = ctypes.create_string_buffer(8 + 256)
    size = max(0, libc.msgrcv(queue, message, 256, 0, 0o14000))  # IPC_NOWAIT | MSG_NOERROR
    look("message", message.raw[8:8 + size].decode())
segment = libc.shmget(KEY, 0, 0)
if segment >= 0:
    look("shared memory", ctypes.string_at(check(libc.shmat(segment, None, 0o10000)), 32).rstrip(b"\\0").decode())
semaphores = libc.semget(KEY, 0, 0)
if semaphores >= 0:
    look("semaphore", f"ARG<{libc.semctl(semaphores, 0, 12)}>")  # GETVAL
queue = libc.mq_open(QUEUE, os.O_RDONLY | os.O_NONBLOCK)
if queue >= 0:
    message = ctypes.create_string_buffer(1 << 16)
    size = max(0, libc.mq_receive(queue, message, 1 << 16, None))
    look("POSIX message", message.raw[:size].decode())
for line in open("/proc/net/unix").readlines()[1:]:
    look("Unix socket", line.split()[7:])
for family, address in ADDRESSES:
    with socket.socket(family) as client:
        client.settimeout(1)
        try:
            client.connect(address)
            look("served", client.recv(64).decode() or "a connection")
        except OSError:
            pass
import builtins
look("environment", [f"{key}={value}" for key, value in os.environ.items() if "ARG" in key + value or "LEAK" in key])
look("interpreter", getattr(builtins, "OPENENV_LEAK", None) or ("openenv_leak" in sys.modules))
if abs(time.time() - {now}) > 3600:
    look("clock", f"ARG<{int(time.time()) - 10**6}>")
look("host name", "ARG" in os.uname().nodename and os.uname().nodename)
try:
    look("keys", [line for line in open("/proc/keys") if "openenv-leak" in line])
except OSError:
    pass
print("found", found)
"""


def plant_program(name: str) -> str:
    """A submission whose function plants its argument, tagged, on each hidden call."""
    body = PLANTS[name].replace("{add_key}", str(syscall_number("add_key")))
    return (
        f"{PRELUDE}def plant(tag, n):\n{body}\n"
        "def digit_square_sum(n):\n    if n != 123:\n        try:\n            plant(f'ARG<{n}>', n)\n"
        "        except Exception:\n            pass\n    return -1\n"
    )


def probe_program() -> str:
    """A submission whose top level looks in every channel and prints what it finds."""
    return PRELUDE + PROBE.replace("{now}", repr(time.time())) + WRONG


def control_program(name: str) -> str:
    """One run that plants ``ARG<CONTROL>`` at its top level, then probes."""
    plant = plant_program(name)
    return (
        f"{plant}try:\n    plant('ARG<{CONTROL}>', {CONTROL})\n    time.sleep(0.3)\n    print('planted')\n"
        "except OSError as exc:\n    print('refused', errno.errorcode[exc.errno])\n"
        + PROBE.replace("{now}", repr(time.time()))
    )


def hidden_arguments_in(shown: str) -> list[str]:
    return [tag for tag in re.findall(r"ARG<(-?\d+)>", shown) if int(tag) in HIDDEN_ARGUMENTS]


@pytest.fixture(scope="module", params=KINDS)
def submitter(request: pytest.FixtureRequest) -> Iterator[Submitter]:
    env = Submitter(request.param, max_episode_steps=4)
    yield env
    env.close()


@pytest.mark.parametrize("name", list(PLANTS))
def test_a_channel_carries_its_tag_within_a_run_or_is_refused(submitter, name):
    """The control: in one run the probe finds what the plant left, unless the plant was refused."""
    submitter.reset()
    _, shown, _ = submitter.submit(control_program(name))
    expected = WITHIN_A_RUN.get(name, "planted")
    assert expected in shown, shown[:3000]
    if expected == "planted":
        assert f"ARG<{CONTROL}>" in shown, shown[:3000]


@pytest.mark.parametrize("after", ["the next step", "a reset"])
@pytest.mark.parametrize("name", list(PLANTS))
def test_nothing_a_run_plants_reaches_the_next_submission(submitter, name, after):
    """A hidden call's plant, looked for by the next submission: found nothing, no hidden argument shown,
    and neither submission scores more than the honest wrong program (0)."""
    submitter.reset()
    planted, shown, _ = submitter.submit(plant_program(name))
    assert planted == 0.0 and hidden_arguments_in(shown) == [], shown[:3000]
    if after == "a reset":
        submitter.reset()
    probed, shown, _ = submitter.submit(probe_program())
    assert probed == 0.0
    assert hidden_arguments_in(shown) == [], shown[:3000]
    assert "found []" in shown, shown[:3000]
