"""The Ray provider across simulated hosts: network namespaces on a private bridge, 1 ms links.

Three hosts (``tests/cluster.py``): a Ray head on host 0, Ray worker nodes on hosts 1 and 2, and
this process as the trainer on a Ray node of its own, every connection it opens to a host
delayed 1 ms each way by that host's link proxy. Needs root (CI runs as root, and there a
missing capability is a failure, not a skip).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.parse

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.client import http_get_json
from openenv_gym.errors import OpenEnvGymError
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.cluster import Link, SimulatedCluster, leftovers, namespaces_supported
from tests.equivalence import assert_lockstep, assert_same
from tests.utils import REPO_ROOT, UNIT, wait_until

ray = pytest.importorskip("ray")

UNSUPPORTED = namespaces_supported()
if UNSUPPORTED is not None and os.environ.get("CI"):
    raise RuntimeError(f"CI runs the multi-host tests as root, but: {UNSUPPORTED}")
# serial: the trainer's Ray node and its namespaces' cleanup are machine-wide (see test_ray.py)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(UNSUPPORTED is not None, reason=str(UNSUPPORTED)),
]

HOSTS = 3
NUM_ENVS = 24


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    cluster = SimulatedCluster(HOSTS, cpus_per_host=4, link=Link(delay=0.001))
    with cluster:
        cluster.connect()
        yield cluster
    assert cluster.leftovers() == {}, "the cluster leaves no namespace, bridge, process or file"


def hosts_of(envs, cluster) -> list[int]:
    return [cluster.host_of(entry["node"]) for entry in envs.unwrapped.placement]


def test_spread_places_a_server_on_every_host_and_matches_a_local_run(cluster):
    """make_vec(provider="ray", placement="spread") puts one server on each host, reached over its
    1 ms link with the run's token, and steps exactly as the same env run locally."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=NUM_ENVS, provider="ray", placement="spread")
    local = gym.make_vec("openenv/CartPole-v1", num_envs=NUM_ENVS, servers=HOSTS)  # the same blocks, here
    try:
        placement = remote.unwrapped.placement
        assert [entry["sub_envs"] for entry in placement] == [(0, 8), (8, 16), (16, 24)]
        assert sorted(hosts_of(remote, cluster)) == list(range(HOSTS)), placement
        providers = remote.unwrapped._providers
        for entry, provider in zip(placement, providers):
            assert urllib.parse.urlsplit(entry["url"]).hostname == entry["node"]
            host = cluster.host_of(entry["node"])
            assert provider.server_pid in cluster.processes(host), "the server runs inside its host"
        assert len({provider.token for provider in providers}) == 1 and providers[0].token
        with pytest.raises(OpenEnvGymError, match="401"):
            http_get_json(placement[0]["url"], "/schema", timeout=10)  # no token: refused
        assert remote.unwrapped.metadata["vector_backend"] == local.unwrapped.metadata["vector_backend"]
        assert_same(remote.reset(seed=5), local.reset(seed=5), "reset")
        assert assert_lockstep(remote, local, 150, np.random.default_rng(1)) > 20
    finally:
        remote.close()
        local.close()


def test_a_lost_host_truncates_exactly_its_sub_envs_which_go_on_elsewhere(cluster):
    """Every process of one host killed mid-rollout: its block comes back truncated with
    remote_failure on a remaining host, the others are untouched, and the host, once back, takes
    servers again."""
    envs = gym.make_vec(
        "openenv/CartPole-v1", num_envs=NUM_ENVS, provider="ray", placement="spread", startup_timeout=60
    )
    try:
        envs.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(5):
            envs.step(rng.integers(0, 2, NUM_ENVS))
        hosts = hosts_of(envs, cluster)
        block = next(index for index, host in enumerate(hosts) if host != 0)  # host 0 runs the head
        victim = hosts[block]
        lost = np.zeros(NUM_ENVS, dtype=bool)
        start, stop = envs.unwrapped.placement[block]["sub_envs"]
        lost[start:stop] = True
        cluster.kill_host(victim)
        assert cluster.processes(victim) == []
        _, rewards, _, truncations, infos = envs.step(rng.integers(0, 2, NUM_ENVS))
        assert truncations[lost].all() and not truncations[~lost].any()
        assert infos[f"_{FAILURE_INFO_KEY}"].tolist() == lost.tolist()
        assert (rewards[lost] == 0).all() and (rewards[~lost] == 1).all()
        now = hosts_of(envs, cluster)
        assert now[block] != victim and now[:block] + now[block + 1 :] == hosts[:block] + hosts[block + 1 :]
        _, rewards, _, _, _ = envs.step(rng.integers(0, 2, NUM_ENVS))  # NextStep: the moved block resets here
        assert (rewards[lost] == 0).all()
        for _ in range(20):
            _, _, _, truncations, infos = envs.step(rng.integers(0, 2, NUM_ENVS))
            assert not truncations.any() and FAILURE_INFO_KEY not in infos
    finally:
        envs.close()
    cluster.restore_host(victim)
    cluster.wait_for_nodes(HOSTS + 1, 60 * UNIT)
    again = gym.make_vec("openenv/CartPole-v1", num_envs=NUM_ENVS, provider="ray", placement="spread")
    try:
        assert sorted(hosts_of(again, cluster)) == list(range(HOSTS)), "the host is back in use"
        again.reset(seed=1)
        again.step(np.zeros(NUM_ENVS, dtype=np.int64))
    finally:
        again.close()


def test_a_killed_owner_leaves_no_namespace_process_or_file():
    """The owner of a cluster killed with SIGKILL: its guardian removes every host, the bridge, the
    trainer's Ray node and the temp dir."""
    script = (
        "import time\n"
        "from tests.cluster import SimulatedCluster\n"
        "cluster = SimulatedCluster(2)\n"
        "cluster.start()\n"
        "print(cluster.tag, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        tag = owner.stdout.readline().strip()
        assert tag, "the owner started a cluster"
        found = leftovers(tag)
        assert len(found["namespaces"]) == 2 and found["processes"] and found["bridge"]
        assert wait_until(lambda: leftovers(tag).get("trainer node processes"), 30 * UNIT)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        owner.stdout.close()
    assert wait_until(lambda: leftovers(tag) == {}, 60 * UNIT), leftovers(tag)
