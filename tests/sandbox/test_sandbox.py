"""The sandbox confines runs of untrusted code: each limit is hit for real, and nothing is left behind."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from openenv_gym.sandbox import Limits, Sandbox, SandboxUnavailableError
from openenv_gym.sandbox.sandbox import SANDBOX_UID_BASE
from openenv_gym.sandbox.worker import TRACEBACK_LIMIT
from tests.utils import REPO_ROOT, UNIT, pid_alive, sandbox_pids, wait_until

LIMITS = Limits(wall_time=2 * UNIT, processes=16, memory=512 * 1024 * 1024, output_limit=4096)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(LIMITS) as box:
        yield box


def run_uid_processes(box: Sandbox) -> list[int]:
    """Processes running as the sandbox's run uid (the runs' processes) right now."""
    uid = SANDBOX_UID_BASE + box.pid
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            if int(status.split("\nUid:")[1].split()[0]) == uid and "State:\tZ" not in status:
                found.append(int(entry))
    return found


def test_a_run_returns_output_exit_code_and_case_results(sandbox):
    result = sandbox.run(
        "def double(x):\n    return 2 * x\nprint('defined')",
        entry_point="double",
        cases=[[1], ["ab"], [[1, 2]], [None]],
    )
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (0, "defined\n", "", False)
    assert result.results[:3] == [{"value": 2}, {"value": "abab"}, {"value": [1, 2, 1, 2]}]
    assert result.results[3]["error"].startswith("TypeError: unsupported operand")
    assert result.results[3]["exception"] == ["TypeError", "Exception", "BaseException", "object"]


def test_each_run_starts_clean(sandbox):
    """Globals, files (anywhere writable) and monkeypatches of one run are gone in the next."""
    first = sandbox.run(
        "import builtins, os\nX = 1\nopen('left.txt', 'w').write('x')\n"
        "os.makedirs('/dev/shm/kept')\n"
        "os.makedirs('sub/deeper')\nos.chmod('sub', 0o500)\nos.chmod('.', 0o500)\nbuiltins.len = None"
    )
    assert first.exit_code == 0, first.stderr
    second = sandbox.run(
        "import os\nprint(len('abc'), 'X' in globals(), os.listdir('.'), os.listdir('/dev/shm'))\n"
        "open('new.txt', 'w').write('x')"
    )
    assert (second.stdout, second.exit_code) == ("3 False [] []\n", 0), second.stderr


def test_multiprocessing_semaphores_work(sandbox):
    """/dev/shm is world-writable (sticky) even as root, where each run has a uid of its own:
    multiprocessing's locks and queues are POSIX semaphores there."""
    done = sandbox.run(
        "import multiprocessing as mp\nlock, queue = mp.Lock(), mp.Queue()\nwith lock:\n    queue.put(41)\n"
        "print(queue.get(timeout=5) + 1)"
    )
    assert (done.stdout, done.exit_code) == ("42\n", 0), done.stderr


def test_tmp_is_writable_and_emptied_between_runs(sandbox):
    """Runs may write anywhere in their private /tmp; the next run finds only its fresh work directory."""
    first = sandbox.run(
        "import os, tempfile\nopen('/tmp/x', 'w').write('kept?')\nos.mkdir('/tmp/d')\n"
        "with tempfile.NamedTemporaryFile(dir='/tmp', delete=False) as f:\n    f.write(b'y')\n"
        "print(open('/tmp/x').read())"
    )
    assert (first.stdout, first.exit_code) == ("kept?\n", 0), first.stderr
    second = sandbox.run("import os\nprint(sorted(os.listdir('/tmp')), oct(os.stat('/tmp').st_mode & 0o7777))")
    assert second.stdout == "['work'] 0o1777\n", second.stderr
    chmod = sandbox.run("import os\nos.chmod('/tmp', 0)")
    assert sandbox.run("open('/tmp/x', 'w').write('x')").exit_code == 0, chmod.stderr


def test_errors_look_like_pythons_without_sandbox_frames(sandbox):
    result = sandbox.run("def f():\n    raise ValueError('bad')\nf()")
    assert result.exit_code == 1
    assert result.stderr.startswith('Traceback (most recent call last):\n  File "<solution>", line 3')
    assert result.stderr.rstrip().endswith("ValueError: bad")
    assert "worker" not in result.stderr and "<string>" not in result.stderr


def test_missing_entry_point_is_reported_per_case(sandbox):
    """Each case of an entry point the code does not define is a NameError marked missing_entry_point."""
    result = sandbox.run("x = 1", entry_point="solve", cases=[[1], [2]])
    assert [item["error"] for item in result.results] == ["NameError: the code defines no function named 'solve'"] * 2
    assert all(item["missing_entry_point"] for item in result.results)


def test_raising_cases_carry_a_capped_traceback_of_the_codes_own_frames(sandbox):
    """The first case to raise and the cases asked for get a traceback without the worker's frames; others do not."""
    code = "def f(x):\n    if x == 'long':\n        raise ValueError('y' * 10000)\n    return 1 / x\n"
    result = sandbox.run(code, entry_point="f", cases=[[1], [0], [0], [0], ["long"]], tracebacks=[3, 4])
    assert [("traceback" in item) for item in result.results] == [False, True, False, True, True]
    first = result.results[1]["traceback"]
    assert first.startswith('Traceback (most recent call last):\n  File "<solution>", line 4, in f\n')
    assert first.endswith("ZeroDivisionError: division by zero\n") and "worker" not in first
    long = result.results[4]["traceback"]
    assert long.startswith("[... ") and long.endswith("y" * 100 + "\n") and len(long) <= TRACEBACK_LIMIT + 40


def test_results_that_are_not_json_are_errors(sandbox):
    result = sandbox.run("def f():\n    return {1, 2}", entry_point="f", cases=[[]])
    assert result.results[0]["error"].startswith("TypeError: Object of type set is not JSON serializable")


# --- hostile code: each case, then a normal run, and no process of the run left ---------------

HOSTILE = {
    "infinite loop": ("while True:\n    pass", "wall-clock limit"),
    "sleep": ("import time\ntime.sleep(60)", "wall-clock limit"),
    "fork bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "wall-clock",
    ),
    "allocate 10 GB": ("x = bytearray(10 * 1024 ** 3)", "MemoryError"),
    "write a 10 GB file": (
        "with open('big', 'wb') as f:\n    for _ in range(10 * 1024):\n        f.write(b'x' * 1024 * 1024)",
        "File too large",
    ),
    "fill the scratch directory": (
        "for i in range(1000):\n    open(f'f{i}', 'wb').write(b'x' * 8 * 1024 * 1024)",
        "No space left on device",
    ),
    "read /etc/shadow": ("print(open('/etc/shadow').read())", "FileNotFoundError"),
    "read the project": (f"print(open({str(REPO_ROOT / 'pyproject.toml')!r}).read())", "FileNotFoundError"),
    "write outside the scratch directory": ("open('/usr/evil', 'w')", "Read-only file system"),
    "kill the parent": ("import os\nos.kill(os.getppid(), 9)", "PermissionError"),
    "write to the worker's reply pipe": ("import os\nos.open('/proc/1/fd/1', os.O_WRONLY)", "PermissionError"),
    # The worker is the namespace's init: no signal from inside reaches it, so there is nothing to kill.
    "kill everything": ("import os, signal\nos.kill(-1, signal.SIGKILL)", "ProcessLookupError"),
    "sys.exit": ("import sys\nprint('exiting', flush=True)\nsys.exit(3)", "exiting"),
    "segfault": ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
    "close stdout": ("import os\nos.close(1)\nprint('lost')", "Exception ignored on flushing sys.stdout"),
    "null byte": ("print(1)\x00", "source code string cannot contain null bytes"),
    "invalid UTF-8": ("print('\udcff')", "can't decode byte 0xff"),
    "escape the session": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nprint('forked', flush=True)",
        "forked",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_code_is_contained(sandbox, name):
    code, expected = HOSTILE[name]
    result = sandbox.run(code)
    assert expected in result.stdout + result.stderr
    assert result.exit_code != 0 or name == "escape the session"
    assert run_uid_processes(sandbox) == [], "a process of the run outlived it"
    after = sandbox.run("print(sum(range(10)))")
    assert (after.exit_code, after.stdout) == (0, "45\n")


def test_cpu_time_kills_are_reported_as_time_outs():
    """A run killed at its CPU-time limit is a time-out, and the message names that limit and its value."""
    with Sandbox(Limits(wall_time=20 * UNIT, cpu_time=1)) as box:
        result = box.run("while True:\n    pass")
        assert result.timed_out and result.exit_code < 0
        assert result.stderr.endswith("[sandbox] killed: the run exceeded its CPU-time limit of 1 s")
        ignoring = box.run("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass")
        assert ignoring.timed_out and "CPU-time limit of 1 s" in ignoring.stderr
        killed = box.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        assert not killed.timed_out and killed.stderr.endswith("killed by signal SIGKILL")


def test_printing_100_mb_is_capped_and_counted(sandbox):
    result = sandbox.run("import sys\nfor _ in range(100):\n    sys.stdout.write('y' * 1024 * 1024)")
    assert result.exit_code == 0
    assert result.stdout.startswith("y" * LIMITS.output_limit)
    assert result.stdout.endswith(f"[... output truncated: {100 * 1024 * 1024 - LIMITS.output_limit} more bytes]")


def test_installed_packages_and_hidden_paths_cannot_be_read(tmp_path):
    """Installed packages may hold data agent code must not see (an env's hidden tests): all are hidden."""
    import sysconfig

    from openenv_gym.sandbox.bubblewrap import site_directories

    python = os.path.realpath(sys.executable)
    sites = site_directories(os.path.dirname(os.path.dirname(python)))
    assert sites and any(os.listdir(site) for site in sites)
    secret = os.path.join(sysconfig.get_paths()["stdlib"], "this.py")  # a file the sandbox would see
    with Sandbox(LIMITS, hidden_paths=[secret]) as box:
        listing = box.run(f"import os\nprint([os.listdir(p) for p in {sites!r}])")
        assert listing.stdout == repr([[] for _ in sites]) + "\n"
        assert "PermissionError" in box.run(f"print(open({secret!r}).read())").stderr
        assert box.run("open('/usr/hidden-file', 'w')").exit_code == 1  # still read-only


def test_no_network_not_even_the_hosts_loopback(sandbox):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        result = sandbox.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)")
    assert "ConnectionRefusedError" in result.stderr
    result = sandbox.run("import socket\nsocket.getaddrinfo('pypi.org', 443)")
    assert "gaierror" in result.stderr


def test_runs_cannot_see_host_processes(sandbox):
    result = sandbox.run("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    pids = eval(result.stdout)  # a list of ints we printed
    assert len(pids) == 2 and 1 in pids  # the worker (the namespace's init) and the run


def test_runs_cannot_create_user_namespaces_join_namespaces_or_ptrace(sandbox):
    """unshare(CLONE_NEWUSER), setns and ptrace fail with EPERM, clone3 with ENOSYS; threads, forks and programs still run."""
    code = (
        "import ctypes, os, subprocess, threading\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def errno_of(result):\n    return 0 if result == 0 else ctypes.get_errno()\n"
        "pid = os.fork()\nif pid == 0:\n    os._exit(libc.unshare(0x10000000) == 0)\n"
        "print('child', os.waitpid(pid, 0)[1])\n"
        "thread = threading.Thread(target=print, args=('thread',))\nthread.start()\nthread.join()\n"
        "print(subprocess.run(['/bin/echo', 'program'], capture_output=True, text=True).stdout, end='')\n"
        "print(errno_of(libc.ptrace(0, 0, 0, 0)), errno_of(libc.setns(0, 0x10000000)),"
        " errno_of(libc.syscall(435, 0, 0)), errno_of(libc.unshare(0x10000000)))"
    )
    result = sandbox.run(code)
    assert result.stdout == f"child 0\nthread\nprogram\n{errno.EPERM} {errno.EPERM} {errno.ENOSYS} {errno.EPERM}\n", (
        result.stderr
    )


def test_runs_have_an_unprivileged_uid_of_their_own(sandbox):
    """As root, each sandbox's runs drop to a uid of their own; otherwise they keep the user's."""
    result = sandbox.run("import os\nprint(os.getuid(), os.getgid(), os.getgroups())")
    uid = SANDBOX_UID_BASE + sandbox.pid if os.geteuid() == 0 else os.getuid()
    assert result.stdout.split()[:2] == [str(uid), str(uid if os.geteuid() == 0 else os.getgid())]


def test_a_worker_that_dies_is_replaced(sandbox):
    """If the worker is killed from outside, the next run starts a new one."""
    box = Sandbox(LIMITS)
    try:
        box.start()
        inner = [pid for pid in sandbox_pids() if pid != box.pid and _parent(pid) == box.pid]
        assert inner, "no worker process under bubblewrap"
        os.kill(inner[0], signal.SIGKILL)
        result = box.run("print('again')")
        if result.stdout != "again\n":  # the kill raced the run: it is reported, and the next one works
            assert "replaced" in result.stderr
            result = box.run("print('again')")
        assert result.stdout == "again\n" and box.restarts == 1
    finally:
        box.close()


def test_a_worker_outlives_the_thread_that_started_it():
    """A server may start a sandbox in a thread that then ends (a session's worker thread, replaced after
    a tool call overran): bubblewrap's --die-with-parent follows that thread, yet the worker lives on."""
    box = Sandbox(LIMITS)
    try:
        starter = threading.Thread(target=box.start)
        starter.start()
        starter.join()
        pid = box.pid
        assert pid is not None
        assert not wait_until(lambda: not pid_alive(pid), 0.5 * UNIT), "the worker died with its starting thread"
        assert box.run("print('still here')").stdout == "still here\n"
        assert (box.pid, box.restarts) == (pid, 0)
    finally:
        box.close()


def test_a_forked_child_starts_sandboxes_of_its_own():
    """After os.fork the child has no spawner thread: its sandboxes still start (none would, waiting on the parent's)."""
    with Sandbox(LIMITS) as box:  # this process has a spawner thread now, which the child will lack
        assert box.run("print(1)").stdout == "1\n"
    with warnings.catch_warnings():
        # Python 3.12+ warns about forking a threaded process; the child only starts a sandbox and exits.
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            with Sandbox(LIMITS) as box:
                code = 0 if box.run("print('child')").stdout == "child\n" else 2
        finally:
            os._exit(code)
    reaped: list[int] = []  # the child's wait status, once it has exited

    def reap() -> bool:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            reaped.append(status)
        return bool(reaped)

    if not wait_until(reap, 30 * UNIT):  # it waits for a thread it does not have: do not leave it behind
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    assert reaped, "the forked child's sandbox never started"
    assert os.waitstatus_to_exitcode(reaped[0]) == 0


def test_close_leaves_no_process_and_is_idempotent():
    box = Sandbox(LIMITS)
    box.start()
    box.run("import os, time\nif os.fork() == 0:\n    time.sleep(60)", timeout=0.5 * UNIT)
    pid = box.pid
    box.close()
    box.close()
    assert not pid_alive(pid)
    assert wait_until(lambda: not [p for p in sandbox_pids() if _uid(p) == SANDBOX_UID_BASE + pid], 5 * UNIT)


@pytest.mark.serial  # counts every sandbox process on the machine
def test_an_owner_killed_with_sigkill_leaves_no_sandbox_behind():
    script = (
        "import sys, time\n"
        "from openenv_gym.sandbox import Sandbox\n"
        "box = Sandbox()\n"
        "box.start()\n"
        "print(box.pid, flush=True)\n"
        "box.run('import time\\ntime.sleep(60)', timeout=60)\n"
    )
    before = sandbox_pids()
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=REPO_ROOT)
    try:
        worker_pid = int(owner.stdout.readline())
        assert wait_until(lambda: len(sandbox_pids() - before) >= 3, 5 * UNIT)  # bwrap, worker, run
        owner.kill()
        owner.wait(10)
        assert wait_until(lambda: not (sandbox_pids() - before), 5 * UNIT), "a sandbox outlived its owner"
        assert not pid_alive(worker_pid)
    finally:
        owner.kill()
        owner.stdout.close()
        owner.wait(10)


def test_missing_bubblewrap_is_a_clear_error(monkeypatch):
    monkeypatch.setattr("openenv_gym.sandbox.sandbox.find_bwrap", lambda: None)
    with pytest.raises(SandboxUnavailableError, match=r"bubblewrap is not installed.*sandbox='none'"):
        Sandbox()


def test_a_bubblewrap_that_cannot_start_is_a_clear_error(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr("openenv_gym.sandbox.sandbox.find_bwrap", lambda: str(fake))
    with pytest.raises(SandboxUnavailableError, match="No permissions to create new namespace"):
        Sandbox(startup_timeout=5 * UNIT).start()


def test_unsandboxed_mode_runs_code_with_the_limits_but_no_confinement(tmp_path):
    with Sandbox(LIMITS, mechanism="none") as box:
        result = box.run(f"print(open({str(REPO_ROOT / 'pyproject.toml')!r}).read()[:9])")
        assert result.stdout == "[build-sy\n"
        assert "MemoryError" in box.run("x = bytearray(10 * 1024 ** 3)").stderr
        assert box.run("while True:\n    pass", timeout=0.5 * UNIT).timed_out


def test_unsandboxed_runs_killed_before_they_start_leave_nothing():
    """A zero timeout can kill a run before it has a process group of its own: it is killed all the same."""
    with Sandbox(LIMITS, mechanism="none") as box:
        for _ in range(8):
            result = box.run("import time\ntime.sleep(30)", timeout=0.0)
            assert result.timed_out and result.duration < 3 * UNIT
        assert box.run("print('ok')").stdout == "ok\n" and box.restarts == 0


def test_a_workspace_keeps_its_files_from_run_to_run_and_ends_with_the_sandbox():
    """Runs start in the workspace and find the last run's files there (scratch is still emptied); a new worker's is empty."""
    with Sandbox(LIMITS, workspace=True) as box:
        assert (box.scratch_dir, box.workspace_dir) == ("/tmp/work", "/workspace")
        first = box.run(
            "import os\nos.makedirs('d/e')\nopen('d/e/f', 'w').write('kept')\nopen('/tmp/x', 'w').write('gone')"
        )
        assert first.exit_code == 0, first.stderr
        second = box.run(
            "import os\nprint(os.getcwd(), open('d/e/f').read(), os.listdir('/tmp'), oct(os.stat('.').st_mode & 0o777))"
        )
        assert second.stdout == "/workspace kept ['work'] 0o700\n", second.stderr
        box.close()
        assert box.workspace_dir is None
        box.start()
        assert box.run("import os\nprint(os.listdir('.'))").stdout == "[]\n"


def test_the_workspace_is_a_tmpfs_of_its_own_size():
    """Writing past ``workspace_size`` fails with ENOSPC in the workspace; the scratch directory keeps its own room."""
    limits = Limits(wall_time=2 * UNIT, workspace_size=2 * 1024 * 1024, file_size=8 * 1024 * 1024)
    with Sandbox(limits, workspace=True) as box:
        full = box.run("open('big', 'wb').write(b'x' * 4 * 1024 * 1024)")
        assert "OSError: [Errno 28] No space left on device" in full.stderr
        assert box.run("open('/tmp/big', 'wb').write(b'x' * 4 * 1024 * 1024)").exit_code == 0
        assert box.run("import os\nos.remove('big')\nopen('small', 'w').write('x')").exit_code == 0


def test_without_a_workspace_runs_start_in_scratch():
    """A sandbox without a workspace has no /workspace; runs start in their scratch directory."""
    with Sandbox(LIMITS) as box:
        assert box.workspace_dir is None and box.scratch_dir == "/tmp/work"
        assert box.run("import os\nprint(os.getcwd(), os.path.exists('/workspace'))").stdout == "/tmp/work False\n"


def test_an_unconfined_workspace_is_a_private_directory_removed_at_close():
    """Unconfined, the workspace is a directory beside the scratch one in a private 0700 directory, removed at close."""
    with Sandbox(LIMITS, mechanism="none", workspace=True) as box:
        workspace, scratch = box.workspace_dir, box.scratch_dir
        assert workspace is not None and scratch is not None
        assert oct(os.stat(os.path.dirname(workspace)).st_mode & 0o777) == "0o700"
        box.run("open('kept', 'w').write('x')")
        assert box.run("print(open('kept').read())").stdout == "x\n" and os.getcwd() != workspace
        assert os.listdir(scratch) == []
    assert not os.path.exists(workspace) and not os.path.exists(os.path.dirname(workspace))


def test_bad_limits_are_refused():
    with pytest.raises(ValueError, match=re.escape("Limits.memory must be a positive number")):
        Limits(memory=0)
    with pytest.raises(ValueError, match="unknown sandbox mechanism 'docker'"):
        Sandbox(mechanism="docker")  # type: ignore[arg-type]


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _uid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[0])
    except (OSError, ValueError, IndexError):
        return None


def test_message_framing_round_trips_and_refuses_forged_lengths():
    """write_message/read_message over bytes: a message comes back; short input is the end; a forged length is refused."""
    import io
    import struct

    from openenv_gym.sandbox import worker

    buffer = io.BytesIO()
    worker.write_message(buffer, {"exit_code": 0, "stdout": "hi"})
    framed = buffer.getvalue()
    assert worker.read_message(io.BytesIO(framed).read) == {"exit_code": 0, "stdout": "hi"}
    assert worker.read_message(io.BytesIO(framed[:-1]).read) is None  # the body ends short
    assert worker.read_message(lambda size: None) is None  # a reader that timed out
    forged = io.BytesIO(struct.pack(">I", worker.MAX_MESSAGE_BYTES + 1) + b"{}")
    with pytest.raises(ValueError, match="exceeds"):
        worker.read_message(forged.read)


@pytest.mark.parametrize("privileged", [False, True])
def test_dev_is_read_only_but_dev_shm(tmp_path, privileged):
    """/dev is a tmpfs of its own (out of --remount-ro /'s reach): read-only all the same, but /dev/shm.

    Without root, bubblewrap's /dev belongs to the sandbox's user: the unprivileged command line
    (run here as root, in a user namespace) must not leave it writable.
    """
    from openenv_gym.sandbox.bubblewrap import bwrap_command, find_bwrap

    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("no bubblewrap")
    if privileged and os.geteuid() != 0:
        pytest.skip("the privileged command line needs root")
    code = (
        "import os\nfor path in ('/dev/x', '/dev/shm/y'):\n    try:\n        open(path, 'w').write('x')\n"
        "        print(path, 'written')\n    except OSError as exc:\n        print(path, exc.errno)\n"
    )
    argv = bwrap_command(
        bwrap, os.path.realpath(sys.executable), ["-S", "-c", code], scratch_size=2**20, privileged=privileged
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"/dev/x {errno.EROFS}", done.stdout
    assert lines[1] == "/dev/shm/y written", done.stdout


def test_a_snapshot_copies_what_a_run_made_unreadable_where_the_worker_can():
    """``snapshot=``: the worker copies the workspace before the run, as root where the server is, so a
    file an earlier run made mode 000 is in the copy (which is the run's to chmod); elsewhere there is
    no copy and the run must make its own."""
    with Sandbox(Limits(wall_time=10 * UNIT), workspace=True) as box:
        made = box.run("import os\nopen('hidden', 'w').write('secret')\nos.chmod('hidden', 0)\nprint(os.getcwd())")
        workspace = made.stdout.strip()
        assert box.run("print(open('hidden').read())").exit_code != 0  # unreadable to the runs' own uid
        copy = f"{box.scratch_dir}/copy"
        read = box.run(
            "import os\n"
            f"copy = {copy!r}\n"
            "if not os.path.isdir(copy):\n    print('no copy')\nelse:\n"
            "    os.chmod(os.path.join(copy, 'hidden'), 0o600)\n    print(open(os.path.join(copy, 'hidden')).read())",
            snapshot=(workspace, copy),
        )
        assert read.exit_code == 0, read.stderr
        assert read.stdout == ("secret\n" if os.geteuid() == 0 else "no copy\n")
        assert box.run(f"import os\nprint(os.path.exists({copy!r}))").stdout == "False\n"  # emptied after its run
