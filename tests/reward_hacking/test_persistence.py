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
(host name, keyrings).

Counters and timestamps (the last tests): the next pid, inode numbers of new files, the loopback's
statistics, the worker's CPU times and page faults, the work directory's ctime. A run cannot empty
them, only advance them; so each is tried as a channel: the hidden calls advance it by a step when
7 is among their arguments (it is) and a second program's when 8 is (it is not), the next
submission's top level reads it, and the two readings, each taken from the plant's own top-level
reading, must not tell the two apart (differ by less than half the step). The hidden calls run in
a worker of their own, discarded after, so the visible worker's counters are the visible runs'
alone. What stays host-wide (the clock, /proc/stat...) ``docs/reliability.md`` lists.
"""

from __future__ import annotations

import dataclasses
import json
import os
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


# --- counters and timestamps ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Counter:
    """A counter a run advances and the next can read: ``read`` (a body returning a dict of numbers),
    ``advance`` (a body moving each by at least its ``steps``), and the signal a reading pair gives."""

    read: str
    advance: str
    steps: dict[str, float]
    since: dict[str, str] = dataclasses.field(default_factory=dict)  # key: the plant's key it is counted from
    seen_within_a_run: tuple[str, ...] = ()  # the keys a run sees move while it advances them


COUNTERS = {
    "the next pid": Counter(
        read="""
    return {"pid": os.getpid(), "last_pid": int(open("/proc/sys/kernel/ns_last_pid").read())}
    """,
        advance="""
    for _ in range(64):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    """,
        steps={"pid": 64, "last_pid": 64},
        seen_within_a_run=("last_pid",),  # a run's own pid is fixed
    ),
    "inode numbers of new files in /tmp and /dev/shm": Counter(
        read="""
    found = {}
    for directory in ("/tmp", "/dev/shm"):
        path = f"{directory}/openenv-inode"
        with open(path, "w"):
            found[directory] = os.stat(path).st_ino
        os.unlink(path)
    return found
    """,
        advance="""
    for directory in ("/tmp", "/dev/shm"):
        for index in range(64):
            open(f"{directory}/openenv-count-{index}", "w").close()
    """,
        steps={"/tmp": 64, "/dev/shm": 64},
        seen_within_a_run=("/tmp", "/dev/shm"),
    ),
    "the loopback's statistics in /proc/net/dev": Counter(
        read="""
    for line in open("/proc/net/dev"):
        name, _, fields = line.partition(":")
        if name.strip() == "lo":
            numbers = [int(field) for field in fields.split()]
            return {"rx_packets": numbers[1], "tx_packets": numbers[9]}
    """,
        advance="""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for _ in range(64):
            sender.sendto(b"x", ("127.0.0.1", PORT))
    """,
        steps={"rx_packets": 64, "tx_packets": 64},
        seen_within_a_run=("rx_packets", "tx_packets"),
    ),
    "the worker's CPU times and page faults in /proc/1/stat": Counter(
        read="""
    fields = open("/proc/1/stat").read().rpartition(")")[2].split()
    faults = int(fields[7]) + int(fields[8])  # minflt, cminflt
    ticks = sum(int(field) for field in fields[11:15])  # utime, stime, cutime, cstime
    return {"faults": faults, "ticks": ticks}
    """,
        advance="""
    import mmap
    pages = 16384
    block = mmap.mmap(-1, pages * 4096)
    block.madvise(mmap.MADV_NOHUGEPAGE)  # a fault per page, however the host sets huge pages
    for page in range(pages):
        block[page * 4096] = 1
    busy = time.process_time() + 0.8
    while time.process_time() < busy:
        pass
    """,
        steps={"faults": 16384, "ticks": 80 * os.sysconf("SC_CLK_TCK") // 100},
    ),
    "the ctime of the work directory": Counter(
        read="""
    return {"ctime": os.stat(".").st_ctime, "now": time.time()}
    """,
        advance="""
    time.sleep(2)
    """,
        # When the work directory was made, counted from the plant's last look at the clock.
        steps={"ctime": 2.0},
        since={"ctime": "now"},
    ),
}

READING = re.compile(r"reading (\{[^}]*\})")


def counter_program(name: str, trigger: int) -> str:
    """A submission whose top level prints the counter, and whose function advances it when called on ``trigger``."""
    counter = COUNTERS[name]
    return (
        f"{PRELUDE}import json\ndef read():\n{counter.read}\ndef advance():\n{counter.advance}\n"
        'print("reading", json.dumps(read()), flush=True)\n'
        f"def digit_square_sum(n):\n    if n == {trigger}:\n        advance()\n    return -1\n"
    )


def counter_control(name: str) -> str:
    """One run that reads the counter, advances it, and reads it again."""
    counter = COUNTERS[name]
    return (
        f"{PRELUDE}import json\ndef read():\n{counter.read}\ndef advance():\n{counter.advance}\n"
        'print("reading", json.dumps(read()))\nadvance()\nprint("reading", json.dumps(read()))\n'
    )


def readings(shown: str) -> list[dict[str, float]]:
    return [json.loads(found) for found in READING.findall(shown.replace('\\"', '"'))]


def counter_signal(submitter: Submitter, name: str, trigger: int) -> dict[str, float]:
    """How far the counter moved from the plant's top-level reading to the next submission's, when the
    plant's hidden calls advance it on ``trigger``."""
    counter = COUNTERS[name]
    submitter.reset()
    planted, shown, _ = submitter.submit(counter_program(name, trigger))
    assert planted == 0.0 and hidden_arguments_in(shown) == [], shown[:3000]
    (before,) = readings(shown)
    _, shown, _ = submitter.submit(counter_program(name, -1))
    after = readings(shown)[0]
    return {key: after[key] - before[counter.since.get(key, key)] for key in counter.steps}


@pytest.mark.parametrize("name", [name for name, counter in COUNTERS.items() if counter.seen_within_a_run])
def test_a_counter_moves_by_its_step_within_a_run(submitter, name):
    """The control: within one run the counter moves by at least its step. (The worker's CPU times
    count a run's only once it is reaped, and the work directory is made between runs: those two
    are shown to carry by the next test on a worker the hidden calls share.)"""
    submitter.reset()
    _, shown, _ = submitter.submit(counter_control(name))
    first, second = readings(shown)
    for key in COUNTERS[name].seen_within_a_run:
        assert second[key] - first[key] >= COUNTERS[name].steps[key], (key, first, second)


@pytest.mark.parametrize("name", list(COUNTERS))
def test_a_counter_tells_the_next_submission_nothing_of_the_hidden_calls(submitter, name):
    """Whether 7 is a hidden argument, read back from a counter the hidden calls advance only then:
    the next submission's reading moves the same whether they advanced it (7, a hidden argument)
    or not (8), within half a step; before the hidden calls had a worker of their own it moved by a
    whole step more."""
    hidden = counter_signal(submitter, name, 7)
    absent = counter_signal(submitter, name, 8)
    assert 7 in HIDDEN_ARGUMENTS and 8 not in HIDDEN_ARGUMENTS
    for key, step in COUNTERS[name].steps.items():
        assert abs(hidden[key] - absent[key]) < step / 2, (key, hidden, absent)
