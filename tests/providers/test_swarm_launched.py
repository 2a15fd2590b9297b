"""A sandboxed env on a real single-node Docker Swarm: Coding-v0's task is a launcher that starts
its server in a container of the node's own (``providers/docker/swarm_launcher.py``), since a
Swarm service cannot be given the ``security_opt`` bubblewrap needs. It scores a task; agent code
reaches neither the token's nor the snapshot key's secret, nor the node's Docker socket, nor the
network (and neither secret is in what ``docker inspect`` shows of the server or the launcher); a launcher
killed outright has its server's container removed by the next launcher. Runs in the serial part
(``swarm`` fixture, tests/conftest.py)."""

from __future__ import annotations

import json
import os

import gymnasium as gym
import pytest

import openenv_gym.errors  # also registers the openenv/ ids
from openenv_gym.providers.docker.owners import OWNER_PID
from openenv_gym.providers.docker.swarm import SECRET_DIR, SwarmProvider
from openenv_gym.providers.docker.swarm_launcher import LAUNCHER_LABEL
from openenv_gym.startup import shared_snapshot_key
from tests.envs.hostile_cases import SOLUTION, TASK, WALL_TIME
from tests.utils import UNIT, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def ours(client) -> dict[str, int]:
    """How many services, secrets and containers of this test process are on the swarm."""
    label = {"label": f"{OWNER_PID}={os.getpid()}"}
    return {
        "services": len(client.api.services(filters=label)),
        "secrets": len(client.api.secrets(filters=label)),
        "containers": len(client.api.containers(all=True, filters=label)),
    }


def task_container(client, provider: SwarmProvider):
    running = client.containers.list(filters={"label": f"com.docker.swarm.service.id={provider.service_id}"})
    assert len(running) == 1, running
    return running[0]


@pytest.fixture(scope="module")
def coding(swarm):
    """Coding-v0 on swarm: its task a launcher, its server in a container of the node's own."""
    env = gym.make("openenv/Coding-v0", provider="swarm", env_kwargs={"limits": {"wall_time": WALL_TIME}})
    try:
        env.reset(options={"task_id": TASK})
        yield env
    finally:
        env.close()
    assert wait_until(lambda: not any(ours(swarm).values()), 30 * UNIT), ours(swarm)


def launched_server(client, provider: SwarmProvider):
    """The container the provider's launcher started, and the launcher's."""
    launcher = task_container(client, provider)
    (server,) = client.containers.list(filters={"label": f"{LAUNCHER_LABEL}={launcher.id}"})
    return server, launcher


def test_the_coding_env_scores_a_task_on_swarm(swarm, coding):
    obs, reward, terminated, truncated, _ = coding.step(SOLUTION)
    assert (reward, terminated, truncated) == (1.0, True, False), obs["stderr"]
    coding.reset(options={"task_id": TASK})


def test_the_launched_server_is_locked_down_and_holds_neither_socket_nor_secret(swarm, coding):
    provider = coding.unwrapped.provider
    server, launcher = launched_server(swarm, provider)
    config = server.attrs["HostConfig"]
    assert config["ReadonlyRootfs"] and config["CapDrop"] == ["ALL"] and "no-new-privileges" in config["SecurityOpt"]
    assert config["NetworkMode"] == f"container:{launcher.id}" and not server.attrs["Mounts"]
    assert server.attrs["Config"]["User"] == "10001:10001"
    key = shared_snapshot_key()
    for container in (server, launcher):  # the secrets went by the launcher's files and the server's stdin
        shown = json.dumps(swarm.api.inspect_container(container.id))
        assert provider.token not in shown and key not in shown and "OPENENV_GYM_SNAPSHOT_KEY" not in shown
    assert config["Memory"] == 2 * 2**30  # the manifest's limits are the server's


# Agent code in the sandbox, in the launched server's container, reaches nothing of the deployment.
REACHES = {
    "the token's secret": (f"print(open('{SECRET_DIR}/openenv-gym-token').read())", "FileNotFoundError"),
    "the snapshot key's secret": (
        f"print(open('{SECRET_DIR}/openenv-gym-snapshot-key').read())",
        "FileNotFoundError",
    ),
    "the node's Docker socket": ("import os\nprint(os.stat('/var/run/docker.sock'))", "FileNotFoundError"),
    "the network": ("import socket\nsocket.create_connection(('198.18.0.1', 80), timeout=1)", "Network is unreachable"),
}


@pytest.mark.parametrize("name", list(REACHES))
def test_agent_code_reaches_nothing_of_the_swarm(swarm, coding, name):
    code, expected = REACHES[name]
    obs, reward, terminated, _, _ = coding.step(code)
    assert expected in obs["stderr"] and (reward, terminated) == (0.0, False), obs["stderr"][-2000:]


def test_a_killed_launcher_s_server_is_removed_and_the_env_serves_on_the_replacement(swarm, coding):
    provider = coding.unwrapped.provider
    server, launcher = launched_server(swarm, provider)
    launcher.kill()  # SIGKILL: no chance to remove its server
    with pytest.raises(openenv_gym.errors.OpenEnvGymError):
        coding.step(SOLUTION)
    assert wait_until(lambda: not swarm.api.containers(all=True, filters={"id": server.id}), 60 * UNIT)
    again = gym.make("openenv/Coding-v0", base_url=provider.start(), token=provider.token)
    try:
        again.reset(options={"task_id": TASK})
        assert again.step(SOLUTION)[1] == 1.0
    finally:
        again.close()
