"""Spare sandboxes: started ahead by a pool's thread, each handed out once, refilled, and never left behind.

Each test asks for spares of limits of its own, so its pool is its own; every pool is closed after
each test. Nothing here times anything: every wait polls a condition with a generous deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_gym.sandbox import Limits, Sandbox, spares
from openenv_gym.sandbox import sandbox as sandbox_module
from openenv_gym.sandbox.sandbox import SANDBOX_UID_BASE
from tests.utils import REPO_ROOT, UNIT, pid_alive, wait_until

FILL_TIMEOUT = 60 * UNIT  # a pool starts its spares one after another, on a machine that may be busy


def limits(tag: int) -> Limits:
    """Limits no other test uses (``output_limit`` tells them apart): a pool of the test's own."""
    return Limits(wall_time=5 * UNIT, output_limit=4096 + tag)


@pytest.fixture(autouse=True)
def no_pool_outlives_its_test() -> Iterator[None]:
    yield
    spares.close_all()


def wait_for_spares(box: Sandbox, count: int) -> list[Sandbox]:
    """The pool's idle spares once there are ``count`` of them, all running."""
    pool = box._spares
    assert pool is not None

    def ready() -> bool:
        return len([spare for spare in pool.idle() if spare.running]) >= count

    assert wait_until(ready, FILL_TIMEOUT), f"the pool did not reach {count} spares: {len(pool.idle())}"
    return pool.idle()


def spare_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == spares.THREAD_NAME]


def bubblewrap_children(parent: int) -> set[int]:
    """The bubblewrap processes whose parent is ``parent`` (each sandbox's outermost process)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = int(status.split("\nPPid:")[1].split()[0])
            if ppid == parent and status.startswith("Name:\tbwrap") and "State:\tZ" not in status:
                found.add(int(entry.name))
    return found


def test_a_start_adopts_a_ready_spare_and_the_pool_refills():
    box = Sandbox(limits(1), workspace=True, spares=2)
    try:
        ready = {spare.pid for spare in wait_for_spares(box, 2)}
        box.start()
        assert box.pid in ready and box.restarts == 0
        assert box._spares is not None and box.pid not in {spare.pid for spare in box._spares.idle()}
        # The worker's configuration was written for the spare: its uid is its pid's, its paths the sandbox's.
        result = box.run("import os\nprint(os.getuid(), os.getcwd(), os.listdir('.'))")
        uid = SANDBOX_UID_BASE + box.pid if os.geteuid() == 0 else os.getuid()
        assert result.stdout == f"{uid} {box.workspace_dir} []\n", result.stderr
        assert box.run("open('kept', 'w').write('x')").exit_code == 0
        assert box.run("print(open('kept').read())").stdout == "x\n"
        assert len(wait_for_spares(box, 2)) == 2  # one more started in the background
        adopted = box.pid
        box.close()
        assert not pid_alive(adopted)
        box.start()  # a start after a close takes the next spare
        assert box.pid != adopted and box.restarts == 1
    finally:
        box.close()


def test_a_spare_s_worker_has_imported_what_loading_a_workspace_needs():
    """The pool warms a workspace sandbox's spares (``{"warm": true}``); they have run nothing."""
    # A run is a fork of the worker: it sees the worker's modules, and the workspace as it was made.
    probe = "import sys, os\nprint('subprocess' in sys.modules, os.listdir('.'), os.listdir('/tmp'))"
    box, cold = Sandbox(limits(2), workspace=True, spares=1), Sandbox(limits(2), workspace=True)
    try:
        wait_for_spares(box, 1)
        box.start()
        assert box.run(probe).stdout == "True [] ['work']\n"
        assert cold.run(probe).stdout == "False [] ['work']\n"  # started on demand: not warmed
    finally:
        box.close()
        cold.close()


def test_concurrent_starts_never_hand_out_a_spare_twice(monkeypatch):
    """8 sandboxes start at once in 8 threads (a server's 8 restores of a fork): 8 different spares."""
    started: list[int] = []

    def recorded(*args, **kwargs):
        spare = start_spare(*args, **kwargs)
        started.append(spare.pid)
        return spare

    start_spare = sandbox_module._start_spare
    monkeypatch.setattr(sandbox_module, "_start_spare", recorded)
    boxes = [Sandbox(limits(3), workspace=True, spares=8) for _ in range(8)]
    try:
        wait_for_spares(boxes[0], 8)
        barrier = threading.Barrier(len(boxes))
        errors: list[BaseException] = []

        def start(box: Sandbox) -> None:
            try:
                barrier.wait(30 * UNIT)
                box.start()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(box,)) for box in boxes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60 * UNIT)
        assert not errors, errors
        pids = [box.pid for box in boxes]
        assert len(set(pids)) == len(boxes), pids
        assert set(pids) <= set(started), "a sandbox started a worker of its own while spares were ready"
        for index, box in enumerate(boxes):
            assert box.run(f"print({index})").stdout == f"{index}\n"
    finally:
        for box in boxes:
            box.close()


def test_the_largest_target_wins_and_taken_spares_are_replaced():
    first = Sandbox(limits(4), spares=1)
    wait_for_spares(first, 1)
    larger = Sandbox(limits(4), spares=3)
    smaller = Sandbox(limits(4), spares=2)
    pool = first._spares
    assert pool is not None and larger._spares is pool and smaller._spares is pool and pool.target == 3
    wait_for_spares(first, 3)
    try:
        first.start()
        larger.start()
        assert len(wait_for_spares(first, 3)) == 3
    finally:
        first.close()
        larger.close()
    assert Sandbox(limits(5), spares=1)._spares is not pool  # other limits, another pool


def test_without_spares_no_thread_and_no_extra_process_is_started():
    spares.close_all()  # whatever an earlier test left
    assert not spare_threads()
    before = bubblewrap_children(os.getpid())
    box = Sandbox(limits(6), workspace=True)
    try:
        box.start()
        assert box._spares is None
        assert box.run("print(1)").stdout == "1\n"
        assert bubblewrap_children(os.getpid()) - before == {box.pid}
        assert not spare_threads() and not spares._pools
    finally:
        box.close()
    assert not bubblewrap_children(os.getpid()) - before


def test_a_spare_that_died_while_idle_is_discarded_never_handed_out():
    box = Sandbox(limits(7), workspace=True, spares=2)
    try:
        killed = wait_for_spares(box, 2)
        cgroups = [directory for spare in killed if spare.cgroup is not None for directory in spare.cgroup.directories]
        for spare in killed:
            os.killpg(spare.pid, signal.SIGKILL)
        assert wait_until(lambda: not any(spare.running for spare in killed), 10 * UNIT)
        box.start()
        assert box.pid not in {spare.pid for spare in killed}
        assert box.run("print('alive')").stdout == "alive\n" and box.restarts == 0
        pool = box._spares
        assert pool is not None
        # Discarded as the pool found them: closed, their cgroups removed.
        assert wait_until(lambda: not set(map(id, killed)) & set(map(id, pool.idle())), 10 * UNIT)
        assert wait_until(lambda: not any(directory.exists() for directory in cgroups), 10 * UNIT)
    finally:
        box.close()


def test_close_all_kills_the_spares_and_stops_the_thread():
    box = Sandbox(limits(8), workspace=True, spares=2)
    idle = wait_for_spares(box, 2)
    pids = [spare.pid for spare in idle]
    cgroups = [directory for spare in idle if spare.cgroup is not None for directory in spare.cgroup.directories]
    spares.close_all()
    assert not any(pid_alive(pid) for pid in pids)
    assert not any(directory.exists() for directory in cgroups)
    assert not spare_threads()
    box.start()  # its pool is closed: it starts a worker of its own
    try:
        assert box.run("print(2)").stdout == "2\n"
    finally:
        box.close()


# --- an owner process that exits, or is killed -------------------------------------------------

OWNER = """
import json, os, sys, time
from openenv_gym.sandbox import Limits, Sandbox

box = Sandbox(Limits(output_limit=4099), workspace=True, spares=3)
deadline = time.monotonic() + {fill_timeout}
while len(box._spares.idle()) < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
box.start()  # one taken: the pool starts another, which may still be starting at the exit
while {refilled} and len(box._spares.idle()) < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
sandboxes = [box, *box._spares.idle()]
print(json.dumps({{
    "pids": [sandbox.pid for sandbox in sandboxes],
    "cgroups": [str(d) for sandbox in sandboxes if sandbox.cgroup for d in sandbox.cgroup.directories],
    "mounts": [os.path.dirname(next(iter(sandbox._mounts.directories.values())))
               for sandbox in sandboxes if sandbox._mounts is not None],
}}), flush=True)
{then}
"""


def start_owner(then: str, *, refilled: bool) -> tuple[subprocess.Popen[bytes], dict[str, list]]:
    """A process with a sandbox (taken from its 3 spares) and its spares; ``refilled``: once there are 3 again."""
    script = OWNER.format(fill_timeout=FILL_TIMEOUT, then=then, refilled=refilled)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=REPO_ROOT)
    assert owner.stdout is not None
    try:
        line = owner.stdout.readline()
        assert line, "the owner process printed nothing"
        made = json.loads(line)
        assert len(made["pids"]) >= 3, made  # the sandbox and its spares
    except BaseException:
        stop_owner(owner)
        raise
    return owner, made


def stop_owner(owner: subprocess.Popen[bytes]) -> None:
    owner.kill()
    owner.wait(10)
    assert owner.stdout is not None
    owner.stdout.close()


def owners_cgroups(owner: int, made: dict[str, list]) -> list[Path]:
    """Every cgroup the owner made, the one of a spare it was starting at its end too (their names carry its pid)."""
    parents = {Path(directory).parent for directory in made["cgroups"]}
    return [path for parent in parents for path in parent.glob(f"openenv-gym-sandbox-{owner}-*")]


def processes_in(cgroup: Path) -> str:
    """The pids in ``cgroup`` (none once it is removed: another sandbox's start may sweep it)."""
    try:
        return (cgroup / "cgroup.procs").read_text().strip()
    except FileNotFoundError:
        return ""


def test_spares_are_killed_and_removed_when_their_process_exits():
    owner, made = start_owner("sys.exit(0)", refilled=False)  # a spare may be starting at the exit
    try:
        assert owner.wait(60 * UNIT) == 0
        assert wait_until(lambda: not any(pid_alive(pid) for pid in made["pids"]), 10 * UNIT)
        assert not [path for path in owners_cgroups(owner.pid, made)], "a cgroup outlived its sandbox"
        assert not [path for path in made["mounts"] if os.path.exists(path)], "mount points outlived their sandbox"
    finally:
        stop_owner(owner)


def test_spares_die_with_their_process_killed_with_sigkill():
    # Refilled: the mount points of every sandbox are known (a SIGKILLed owner's stay on the host, empty).
    owner, made = start_owner("time.sleep(120)", refilled=True)
    try:
        owner.kill()
        owner.wait(10)
        assert wait_until(lambda: not any(pid_alive(pid) for pid in made["pids"]), 10 * UNIT), "a spare outlived it"
        # Every process of its sandboxes was in a cgroup it made (named with its pid): all empty now.
        cgroups = owners_cgroups(owner.pid, made)
        assert wait_until(lambda: not any(processes_in(path) for path in cgroups), 10 * UNIT)
        # The tmpfs mounts went with the sandboxes' mount namespaces: nothing is mounted or kept on the host.
        for path in made["mounts"]:
            for directory in Path(path).iterdir():
                assert not os.path.ismount(directory) and not list(directory.iterdir())
        # The empty cgroups go with the next sandbox's start, as any SIGKILLed owner's do.
        with Sandbox(limits(9)) as box:
            assert box.run("print(3)").stdout == "3\n"
        assert not [path for path in cgroups if path.exists()]
    finally:
        stop_owner(owner)
        for path in made["mounts"]:  # left on the host, empty, as any SIGKILLed sandbox owner's are
            shutil.rmtree(path, ignore_errors=True)


def test_the_pool_refills_only_once_takes_have_stopped_for_a_while(monkeypatch):
    """Spares are taken in bursts (a fork's 8 restores): their successors start once the burst is
    over, not beside the restores that took them."""
    started: list[int] = []

    def recorded(*args, **kwargs):
        started.append(1)
        return start_spare(*args, **kwargs)

    start_spare = sandbox_module._start_spare
    monkeypatch.setattr(sandbox_module, "_start_spare", recorded)
    monkeypatch.setattr(spares, "QUIET", 3600.0)  # a burst that never ends, as far as this test can see
    monkeypatch.setattr(spares, "QUIET_AT_MOST", 3600.0)
    box = Sandbox(limits(11), spares=1)
    try:
        wait_for_spares(box, 1)  # the first fill has no take before it to wait for
        box.start()
        assert not wait_until(lambda: len(started) > 1, 1.0), "a spare started right after a take"
        monkeypatch.setattr(spares, "QUIET", 0.0)
        assert box._spares is not None
        with box._spares._changed:  # wake the pool's thread, which waits out the old quiet period
            box._spares._changed.notify_all()
        assert len(wait_for_spares(box, 1)) == 1
    finally:
        box.close()


def test_a_pool_taken_from_without_pause_still_refills_after_quiet_at_most(monkeypatch):
    """A steady stream of takes (resets, one after another) never leaves a quiet moment: the pool
    refills all the same once it has been short for QUIET_AT_MOST."""
    monkeypatch.setattr(spares, "QUIET", 3600.0)
    monkeypatch.setattr(spares, "QUIET_AT_MOST", 0.0)
    box = Sandbox(limits(12), spares=1)
    try:
        wait_for_spares(box, 1)
        box.start()
        assert len(wait_for_spares(box, 1)) == 1
    finally:
        box.close()
