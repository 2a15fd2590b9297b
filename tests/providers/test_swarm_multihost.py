"""The Swarm provider on a real three-node swarm: three Docker Engines in simulated hosts (network
namespaces, tests/swarm_cluster.py), host 0's the manager. Spread over the nodes, a host lost
mid-rollout, nothing left. Needs root; skips without it, except in CI, where it fails."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

import openenv_gym  # noqa: F401  (registers the openenv/ ids)
from openenv_gym.providers.docker.images import RUNTIME_IMAGE, ensure_image, env_image
from openenv_gym.providers.docker.owners import OWNER_PID
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_lockstep, assert_same
from tests.utils import UNIT, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture(scope="module")
def cluster(docker):
    from tests.cluster import namespaces_supported
    from tests.swarm_cluster import SimulatedSwarm

    reason = namespaces_supported()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the multi-host swarm tests: {reason}")
        pytest.skip(reason)
    images = (RUNTIME_IMAGE, env_image("coding"))
    for image in images:  # current with this code on the machine's engine, to be copied to every host
        ensure_image(docker, image)
    with SimulatedSwarm(hosts=3, images=images) as swarm:
        yield swarm
    assert swarm.leftovers() == {}, swarm.leftovers()


@pytest.fixture
def manager(cluster, monkeypatch):
    """The manager's engine, as the trainer's ``DOCKER_HOST``."""
    monkeypatch.setenv("DOCKER_HOST", cluster.docker_host)
    client = cluster.engine(0)
    yield client
    label = {"label": f"{OWNER_PID}={os.getpid()}"}
    assert wait_until(
        lambda: not client.api.services(filters=label) and not client.api.secrets(filters=label), 30 * UNIT
    )
    for index in range(cluster.hosts):
        if cluster.node_states().get(cluster.namespaces[index]) == "Ready":
            engine = cluster.engine(index)
            try:
                assert wait_until(lambda engine=engine: not engine.api.containers(all=True, filters=label), 30 * UNIT)
            finally:
                engine.close()
    client.close()


def task_hosts(cluster, client, envs) -> list[int]:
    """The host each server of the vector env runs on, from its URL's address."""
    return [cluster.host_of(url.split("//")[1].rsplit(":", 1)[0]) for url in envs.unwrapped._fleet.urls]


def test_servers_spread_over_the_hosts_and_step_as_a_local_run(cluster, manager):
    num_envs = 12
    remote = gym.make_vec(
        "openenv/CartPole-v1", num_envs=num_envs, provider="swarm", servers=3, vector_backend="per_env"
    )
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(num_envs)])
    try:
        assert sorted(task_hosts(cluster, manager, remote)) == [0, 1, 2]
        assert_same(remote.reset(seed=4), local.reset(seed=4), "reset")
        assert assert_lockstep(remote, local, 60, np.random.default_rng(2)) > 0
    finally:
        remote.close()
        local.close()


def test_a_host_lost_mid_rollout_truncates_its_sub_envs_which_go_on_on_another_host(cluster, manager):
    envs = gym.make_vec(
        "openenv/CartPole-v1", num_envs=6, provider="swarm", servers=3, vector_backend="per_env", startup_timeout=120
    )
    try:
        envs.reset(seed=0)
        hosts = task_hosts(cluster, manager, envs)
        lost = next(server for server, host in enumerate(hosts) if host != 0)
        cluster.kill_host(hosts[lost])
        _, _, _, truncations, infos = envs.step(np.zeros(6, dtype=np.int64))
        expected = [server == lost for server in range(3) for _ in range(2)]
        assert truncations.tolist() == expected
        assert infos[f"_{FAILURE_INFO_KEY}"].tolist() == expected
        moved = task_hosts(cluster, manager, envs)
        assert moved[lost] != hosts[lost] and moved[:lost] + moved[lost + 1 :] == hosts[:lost] + hosts[lost + 1 :]
        assert cluster.node_states()[cluster.namespaces[hosts[lost]]] == "Down"
        for _ in range(3):
            _, rewards, _, truncations, _ = envs.step(np.zeros(6, dtype=np.int64))
            assert not truncations.any()
        assert (rewards == 1.0).all()
    finally:
        envs.close()


def test_a_sandboxed_env_s_launcher_starts_its_server_on_its_own_host(cluster, manager):
    """Coding-v0 on a worker: its launcher's server container is on that host's engine, not the manager's."""
    from tests.envs.hostile_cases import SOLUTION, TASK
    from tests.swarm_cluster import NODE_SOCKET

    env = gym.make("openenv/Coding-v0", provider="swarm", node_socket=NODE_SOCKET, constraints=["node.role == worker"])
    try:
        host = cluster.host_of(env.unwrapped.provider.node)
        assert host != 0
        engine = cluster.engine(host)
        try:
            servers = engine.api.containers(filters={"label": "openenv-gym.launcher"})
            assert [server["Image"] for server in servers] == [env_image("coding")]
        finally:
            engine.close()
        env.reset(options={"task_id": TASK})
        assert env.step(SOLUTION)[1:4] == (1.0, True, False)
    finally:
        env.close()
