"""A run is bounded as a whole: its processes together, and the kernel memory it causes (the inodes of
the files it creates in the sandbox's tmpfs mounts), by the sandbox's memory cgroup (``Limits.run_memory``).

As root (CI) the cgroup must be there; as another user it is made where the cgroup tree is
delegated, and otherwise the sandbox falls back to per-process limits (the last tests).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_gym.sandbox import Limits, Sandbox
from openenv_gym.sandbox.cgroup import RunCgroup
from tests.utils import UNIT

MiB = 2**20
RUN_MEMORY = 160 * MiB
FILES = 20000

# Empty files without end in one of the tmpfs mounts a run can write: each costs no byte of the
# tmpfs's size, but an inode and a dentry of kernel memory the kernel cannot reclaim while it exists.
FILES_WITHOUT_END = """\
import errno, os
made = 0
try:
    while True:
        os.close(os.open(f"{directory}/f{{made}}", os.O_CREAT | os.O_WRONLY, 0o600))
        made += 1
except OSError as exc:
    print(made, errno.errorcode.get(exc.errno, exc.errno), flush=True)
"""

# 32 processes, each under its own address-space limit, touching 48 MiB: 1.5 GiB together (the
# kernel kills some at the bound; the rest finish).
MANY_PROCESSES = """\
import os, time
children = []
for _ in range(32):
    pid = os.fork()
    if pid == 0:
        block = bytearray(48 * 2**20)
        for offset in range(0, len(block), 4096):
            block[offset] = 1
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("all done")
"""


def unreclaimable_kernel_memory() -> int:
    """The host's ``SUnreclaim`` (slab the kernel cannot reclaim), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("SUnreclaim:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no SUnreclaim in /proc/meminfo")


@pytest.fixture
def bounded() -> Iterator[Sandbox]:
    limits = Limits(run_memory=RUN_MEMORY, files=FILES, processes=64, wall_time=60 * UNIT, cpu_time=60)
    with Sandbox(limits, workspace=True) as box:
        if box.cgroup is None:
            assert os.geteuid() != 0, f"as root the sandbox must have its memory cgroup: {RunCgroup.unavailable}"
            pytest.skip(f"not root: {RunCgroup.unavailable}")
        yield box


@pytest.mark.parametrize("directory", ["/tmp", "/dev/shm", "/workspace"])
def test_files_without_end_stop_at_the_run_s_bound_and_pin_less_than_it(bounded, directory):
    """Creating empty files without end stops (the kernel refuses the inodes' memory, or kills the run
    at the bound); the host's unreclaimable kernel memory grows by less than the bound, even while the
    workspace keeps its files, and the sandbox goes on serving."""
    before = unreclaimable_kernel_memory()
    result = bounded.run(FILES_WITHOUT_END.format(directory=directory))
    grown = unreclaimable_kernel_memory() - before  # /tmp and /dev/shm were emptied after the run; /workspace is kept
    assert not result.timed_out, result.stderr
    if result.limit_exceeded is None:  # the kernel refused a file: the run stopped by itself
        made, code = result.stdout.split()
        assert code in ("ENOMEM", "ENOSPC") and int(made) > 1000, result.stdout
        if os.geteuid() == 0:  # as root the tmpfs mounts are the sandbox's own, their inodes capped
            assert (code, int(made) <= FILES) == ("ENOSPC", True), result.stdout
    else:  # or the kernel killed it at the bound, which the result names
        assert result.limit_exceeded == "run_memory" and "Limits.run_memory" in result.stderr
    assert grown < RUN_MEMORY, f"SUnreclaim grew {grown / MiB:.0f} MiB; the run's bound is {RUN_MEMORY / MiB:.0f} MiB"
    assert bounded.cgroup is not None and bounded.cgroup.peak_usage() <= RUN_MEMORY
    if directory == "/workspace":  # kept from run to run: the next one may clear it
        assert bounded.run("import shutil, os\nfor name in os.listdir('.'):\n    os.remove(name)").exit_code == 0
    after = bounded.run("print('still here')")
    assert after.stdout == "still here\n", after.stderr


def test_the_memory_bound_holds_the_files_a_run_creates_when_their_count_would_not():
    """With a cap on files far above what the memory bound allows, the memory cgroup stops the run:
    the inodes' kernel memory counts against ``run_memory``."""
    limits = Limits(run_memory=96 * MiB, files=10_000_000, wall_time=60 * UNIT, cpu_time=60)
    with Sandbox(limits) as box:
        if box.cgroup is None:
            assert os.geteuid() != 0, RunCgroup.unavailable
            pytest.skip(f"not root: {RunCgroup.unavailable}")
        before = unreclaimable_kernel_memory()
        result = box.run(FILES_WITHOUT_END.format(directory="/tmp"))
        assert not result.timed_out, result.stderr
        assert result.limit_exceeded == "run_memory" or result.stdout.split()[1] == "ENOMEM", result.stdout
        assert box.cgroup.peak_usage() <= 96 * MiB
        assert unreclaimable_kernel_memory() - before < 96 * MiB
        assert box.run("print('still here')").stdout == "still here\n"


def test_32_processes_each_allocating_stay_within_one_run_s_bound(bounded):
    """Each process keeps under ``Limits.memory``; together they pass ``run_memory``: the kernel kills
    the run's processes, never more than the bound is held, the result says which limit, and the
    worker serves the next run."""
    result = bounded.run(MANY_PROCESSES)
    assert result.limit_exceeded == "run_memory", (result.exit_code, result.stderr)
    assert "exceeded its memory limit of 160 MiB" in result.stderr
    assert bounded.cgroup is not None and bounded.cgroup.peak_usage() <= RUN_MEMORY
    after = bounded.run("print(sum(range(10)))")
    assert (after.exit_code, after.stdout, after.limit_exceeded) == (0, "45\n", None)
    assert bounded.restarts == 0  # the worker was not the one killed


def test_the_cgroup_is_removed_with_the_sandbox_and_orphans_are_swept():
    box = Sandbox(Limits(run_memory=RUN_MEMORY))
    box.start()
    cgroup = box.cgroup
    if cgroup is None:
        assert os.geteuid() != 0, RunCgroup.unavailable
        pytest.skip(f"not root: {RunCgroup.unavailable}")
    directories = list(cgroup.directories)
    assert all(d.is_dir() for d in directories)
    box.close()
    assert not any(d.exists() for d in directories)
    # A cgroup whose maker died (killed before it could remove it) goes with the next sandbox's start.
    orphan = directories[0].parent / "openenv-gym-sandbox-999999999-deadbeef"
    orphan.mkdir()
    try:
        with Sandbox(Limits(run_memory=RUN_MEMORY)) as again:
            assert again.run("print(1)").stdout == "1\n"
        assert not orphan.exists()
    finally:
        if orphan.exists():
            orphan.rmdir()


def test_without_a_cgroup_the_sandbox_runs_with_per_process_limits(tmp_path, monkeypatch):
    """Where no cgroup can be made (no controller mounted, no right to write there) the sandbox still
    works, bounded per process (``Limits.memory``), and says why."""
    monkeypatch.setattr("openenv_gym.sandbox.cgroup.CGROUP_ROOT", tmp_path)
    with Sandbox(Limits(memory=256 * MiB)) as box:
        assert box.cgroup is None
        assert RunCgroup.unavailable is not None and "runs are bounded per process" in RunCgroup.unavailable
        result = box.run("x = bytearray(512 * 2**20)")
        assert "MemoryError" in result.stderr and result.limit_exceeded is None
        assert box.run("print('ok')").stdout == "ok\n"
