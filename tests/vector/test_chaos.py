"""Chaos: during long rollouts, servers are killed, frozen and cut off at random (tests/chaos.py).

Every fault must come back as truncated sub-envs flagged with ``info["remote_failure"]``, on
exactly the sub-envs it hit, once; the rollout must run all its steps; and afterwards nothing
may be left: no server process or zombie of this process, no container of its label, no entry
in the temp dir it and its servers used (Docker socket directories, sandbox scratch). 150
faults over the process provider and 60 over the Docker provider.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from tests.chaos import Chaos, census, rollout
from tests.utils import UNIT, wait_until

# Long by design: a minute or two each on an idle machine; a busy one may take several times that.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Short enough that a frozen server costs little, long enough that a healthy one on a busy machine
# always answers: a timeout of a server no fault hit is reported as a problem.
CALL_TIMEOUT = 1.5 * UNIT
STARTUP_TIMEOUT = 120 * UNIT  # servers restart while the machine is busy with the others' recoveries


@pytest.fixture
def temp_dir(monkeypatch):
    """A temp dir of the test's own, for this process and the servers it starts: what is left in it
    leaked. Made in the system's temp dir, whose short path leaves room for a Unix socket's."""
    path = tempfile.mkdtemp(prefix="chaos-")
    monkeypatch.setenv("TMPDIR", path)
    monkeypatch.setattr(tempfile, "tempdir", path)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


def run_chaos(envs, *, faults, seed, temp_dir, before, docker=None):
    """The rollout under chaos, then the accounting and the census of what is left (as ``before``
    the env was made); the figures."""
    steps = 12 * faults + 60
    chaos = Chaos(envs, faults=faults, steps=steps, seed=seed, docker=docker, other_children=before["processes"])
    done = 0
    try:
        done = rollout(envs, chaos, seed=seed)
    finally:
        chaos.stop()
        envs.close()
    figures = chaos.figures(done)
    print(f"\nchaos figures: {figures}")
    assert done == steps, "the rollout did not run all its steps"
    assert chaos.check() == []
    assert figures["faults"] == figures["reported"] == faults
    assert before["temp_entries"] == 0
    assert wait_until(lambda: census(docker, str(temp_dir)) == before, 15 * UNIT), (
        f"left behind: {census(docker, str(temp_dir))} against {before} before, temp entries {os.listdir(temp_dir)}"
    )
    return figures


@pytest.mark.parametrize(
    ("options", "faults"),
    [
        ({"vector_backend": "per_env"}, 45),
        ({"vector_backend": "per_env", "autoreset_mode": "SameStep"}, 40),
        ({"vector_backend": "gymnasium"}, 45),
        ({"batched": False}, 20),
    ],
    ids=["batch-next-step", "batch-same-step", "vector-backend", "plain-sessions"],
)
def test_chaos_over_process_servers(options, faults, temp_dir):
    """150 faults in all: SIGKILL, SIGSTOP and cut connections over four servers of two sub-envs each."""
    before = census(temp_dir=str(temp_dir))
    envs = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=8,
        sessions_per_server=2,
        call_timeout=CALL_TIMEOUT,
        startup_timeout=STARTUP_TIMEOUT,
        **options,
    )
    figures = run_chaos(envs, faults=faults, seed=faults, temp_dir=temp_dir, before=before)
    assert set(figures["by_kind"]) == {"kill", "freeze", "cut"}


@pytest.mark.parametrize("network", ["bridge", "none"])
def test_chaos_over_containers(network, docker, temp_dir):
    """60 faults in all: docker kill, SIGSTOP of the container's server and cut connections, over
    published ports and over Unix sockets in private directories (network="none")."""
    before = census(docker, str(temp_dir))
    assert before["containers"] == 0
    envs = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=6,
        sessions_per_server=2,
        call_timeout=CALL_TIMEOUT,
        startup_timeout=STARTUP_TIMEOUT,
        provider="docker",
        network=network,
        vector_backend="per_env",
    )
    figures = run_chaos(envs, faults=30, seed=7, temp_dir=temp_dir, before=before, docker=docker)
    assert set(figures["by_kind"]) == {"kill", "freeze", "cut"}
