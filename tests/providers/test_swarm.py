"""The Swarm provider on a real single-node Docker Swarm: equivalence, the token as a secret, faults, cleanup.

The ``swarm`` fixture (tests/conftest.py) turns the test engine into a single-node swarm manager
when it is in no swarm, and leaves the swarm again afterwards, so the engine is left as it was found. Swarm mode is the whole engine's state, so this module runs in
``make test``'s serial part. Without an engine these tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

import openenv_gym  # noqa: F401  (registers the openenv/ ids)
from openenv_gym.async_pool import AsyncEnvPool
from openenv_gym.errors import EnvCreationError, ServerConnectError, ServerStartError
from openenv_gym.providers.docker.owners import OWNER_PID, SWARM_LABEL, owned_services
from openenv_gym.providers.docker.swarm import SECRET_DIR, SwarmProvider
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_lockstep, assert_same
from tests.test_async_env import _echo_episode
from tests.utils import REPO_ROOT, UNIT, assert_restores_elsewhere, run_async, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def ours(client) -> dict[str, list]:
    """This test process's services, secrets and containers on the swarm."""
    label = {"label": f"{OWNER_PID}={os.getpid()}"}
    return {
        "services": client.api.services(filters=label),
        "secrets": client.api.secrets(filters=label),
        "containers": client.api.containers(all=True, filters=label),  # no inspection of a vanishing one
    }


@pytest.fixture(autouse=True)
def nothing_left(swarm):
    yield
    assert wait_until(lambda: not any(ours(swarm).values()), 30 * UNIT), {key: len(v) for key, v in ours(swarm).items()}


def task_container(client, provider: SwarmProvider):
    """The container of the provider's running task (on this node: the swarm has one)."""
    running = client.containers.list(filters={"label": f"com.docker.swarm.service.id={provider.service_id}"})
    assert len(running) == 1, running
    return running[0]


def test_make_vec_on_swarm_equals_a_local_run(swarm):
    """16 sub-envs on swarm services, stepped in lockstep with the same ``make_vec`` run locally
    (Gymnasium's own vector CartPole, which the one server runs): identical."""
    num_envs = 16
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=num_envs, provider="swarm")
    local = gym.make_vec("CartPole-v1", num_envs=num_envs)
    try:
        assert len(ours(swarm)["services"]) == 1
        assert_same(remote.reset(seed=11), local.reset(seed=11), "reset")
        assert assert_lockstep(remote, local, 120, np.random.default_rng(1)) > 0
    finally:
        remote.close()
        local.close()


def test_per_env_sub_envs_on_swarm_equal_a_sync_vector_env(swarm):
    num_envs = 16
    remote = gym.make_vec(
        "openenv/CartPole-v1", num_envs=num_envs, provider="swarm", sessions_per_server=8, vector_backend="per_env"
    )
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(num_envs)])
    try:
        assert len(ours(swarm)["services"]) == 2
        assert_same(remote.reset(seed=11), local.reset(seed=11), "reset")
        assert assert_lockstep(remote, local, 120, np.random.default_rng(1)) > 0
    finally:
        remote.close()
        local.close()


def test_the_token_and_the_snapshot_key_are_secrets_and_a_request_without_the_token_is_refused(swarm):
    from openenv_gym.env import RemoteEnv
    from openenv_gym.providers import ProcessProvider
    from openenv_gym.startup import shared_snapshot_key

    provider = SwarmProvider("CartPole-v1", memory="300m", pids=100, open_files=2048)
    url = provider.start()
    key = shared_snapshot_key()
    try:
        spec = swarm.api.inspect_service(provider.service_id)["Spec"]
        container_spec = spec["TaskTemplate"]["ContainerSpec"]
        seen = " ".join(container_spec.get("Args", []) + container_spec.get("Env", []) + [str(spec)])
        assert provider.token not in seen and key not in seen and "OPENENV_GYM_SNAPSHOT_KEY" not in seen
        token_reference, key_reference = container_spec["Secrets"]
        assert (token_reference["SecretID"], key_reference["SecretID"]) == provider.secret_ids
        assert token_reference["SecretID"] == provider.secret_id
        owned = {"UID": "10001", "GID": "10001", "Mode": 0o400}
        assert token_reference["File"] == {"Name": "openenv-gym-token", **owned}
        assert key_reference["File"] == {"Name": "openenv-gym-snapshot-key", **owned}
        assert container_spec["ReadOnly"] and container_spec["CapabilityDrop"] == ["ALL"]
        limits = spec["TaskTemplate"]["Resources"]["Limits"]
        assert limits["MemoryBytes"] == 300 * 2**20 and limits["Pids"] == 100
        # Inside: the secrets are the server user's alone, and neither is in an environment the engine gave.
        container = task_container(swarm, provider)
        environment = " ".join(container.attrs["Config"]["Env"])
        assert provider.token not in environment and key not in environment
        for name in ("openenv-gym-token", "openenv-gym-snapshot-key"):
            secret_file = f"{SECRET_DIR}/{name}"
            inside = container.exec_run(["sh", "-c", f"stat -c '%u %a' {secret_file}; ulimit -n"], user="10001")
            assert inside.exit_code == 0 and inside.output.decode().split("\n")[:2] == ["10001 400", "2048"]
            other = container.exec_run(["cat", secret_file], user="10002")
            assert other.exit_code != 0 and "Permission denied" in other.output.decode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{url}/schema", timeout=10)
        refused.value.close()  # its response holds the connection
        assert refused.value.code == 401
        request = urllib.request.Request(f"{url}/schema", headers={"Authorization": f"Bearer {provider.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        # The key the server read from its secret is this process's: a local server restores its snapshots.
        local_server = ProcessProvider(target="CartPole-v1")
        remote, local = RemoteEnv(base_url=url, token=provider.token), RemoteEnv(base_url=local_server.start())
        try:
            assert_restores_elsewhere(remote, local, seed=5, action=1)
        finally:
            local.close()
            remote.close()
            local_server.stop()
    finally:
        provider.stop()


def test_a_killed_task_truncates_exactly_its_sub_envs_and_the_rollout_goes_on_on_its_replacement(swarm):
    envs = gym.make_vec(
        "openenv/CartPole-v1", num_envs=4, provider="swarm", sessions_per_server=2, vector_backend="per_env"
    )
    try:
        envs.reset(seed=0)
        victim = envs.unwrapped._providers[0]
        service, before = victim.service_id, envs.unwrapped._fleet.urls[0]
        task_container(swarm, victim).kill()
        _, _, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations.tolist() == [True, True, False, False]
        assert infos[FAILURE_INFO_KEY][0] and infos[f"_{FAILURE_INFO_KEY}"].tolist() == [True, True, False, False]
        # The same service: Swarm replaced its task, on a new port.
        assert victim.service_id == service and envs.unwrapped._fleet.urls[0] != before
        assert len(swarm.api.tasks(filters={"service": service})) == 2
        for _ in range(3):
            _, rewards, _, truncations, _ = envs.step(np.zeros(4, dtype=np.int64))
            assert not truncations.any()
        assert (rewards == 1.0).all()
    finally:
        envs.close()


def test_an_env_that_cannot_be_made_fails_its_start_with_the_server_s_reason(swarm):
    with pytest.raises(EnvCreationError, match="got an unexpected keyword argument 'bogus'"):
        SwarmProvider("CartPole-v1", env_kwargs={"bogus": 1}, startup_timeout=60).start()


def test_a_server_that_keeps_exiting_fails_its_start_early_with_its_output(swarm):
    with pytest.raises(ServerStartError, match=r"tasks of service \w+ failed before they were ready") as raised:
        SwarmProvider("NoSuchEnv-v0", startup_timeout=120).start()
    assert "'NoSuchEnv-v0' is neither 'module:attr' nor a registered Gymnasium id" in raised.value.output


def test_a_task_no_node_can_take_times_out_saying_why(swarm):
    provider = SwarmProvider(
        "CartPole-v1", constraints=["node.labels.openenv-gym-test == absent"], startup_timeout=10 * UNIT
    )
    with pytest.raises(ServerConnectError, match="no suitable node"):
        provider.start()
    assert provider.service_id is None


_OWNER = """
import sys, time
sys.path.insert(0, {root!r})
from openenv_gym.providers.docker.swarm import SwarmProvider
provider = SwarmProvider("CartPole-v1")
provider.start()
print(provider.service_id, ",".join(provider.secret_ids), flush=True)
if sys.argv[1] == "hang":
    time.sleep(600)
"""


def run_owner(mode: str) -> tuple[subprocess.Popen, str, list[str]]:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER.format(root=str(REPO_ROOT)), mode], stdout=subprocess.PIPE, text=True
    )
    service, secrets = owner.stdout.readline().split()
    assert len(secrets.split(",")) == 2  # the token's and the snapshot key's
    return owner, service, secrets.split(",")


def exists(client, service: str, secrets: list[str]) -> dict[str, bool | int]:
    return {
        "service": bool(client.api.services(filters={"id": service})),
        "secrets": sum(bool(client.api.secrets(filters={"id": secret})) for secret in secrets),
        "containers": bool(
            client.containers.list(all=True, filters={"label": f"com.docker.swarm.service.id={service}"})
        ),
    }


def test_an_owner_that_exits_removes_its_service_and_secret(swarm):
    owner, service, secret = run_owner("exit")
    owner.stdout.close()
    assert owner.wait(120) == 0
    assert wait_until(lambda: not any(exists(swarm, service, secret).values()), 30 * UNIT)


def test_the_service_of_a_sigkilled_owner_is_listed_then_cleaned(swarm):
    owner, service, secret = run_owner("hang")
    try:
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
    finally:
        owner.kill()
        owner.stdout.close()
    assert exists(swarm, service, secret) == {"service": True, "secrets": 2, "containers": True}
    ps = subprocess.run([sys.executable, "-m", "openenv_gym", "ps"], capture_output=True, text=True, timeout=60)
    assert ps.returncode == 0 and service[:12] in ps.stdout and f":{owner.pid} (gone)" in ps.stdout
    clean = subprocess.run([sys.executable, "-m", "openenv_gym", "clean"], capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0 and service[:12] in clean.stdout
    assert wait_until(lambda: not any(exists(swarm, service, secret).values()), 30 * UNIT)
    assert all(item.owner_alive for item in owned_services(swarm))


def test_services_are_labelled_for_ps(swarm):
    provider = SwarmProvider("CartPole-v1")
    provider.start()
    try:
        (listed,) = [item for item in owned_services(swarm) if provider.service_id.startswith(item.id)]
        assert listed.target == "CartPole-v1" and listed.owner_alive and "1 running" in listed.tasks
        labels = swarm.api.inspect_secret(provider.secret_id)["Spec"]["Labels"]
        assert labels[SWARM_LABEL] == listed.name
    finally:
        provider.stop()
    assert not provider.is_alive()


def test_gym_make_on_swarm_plays_an_episode(swarm):
    env = gym.make("openenv/CartPole-v1", provider="swarm")
    local = gym.make("CartPole-v1")
    try:
        assert_same(env.reset(seed=5), local.reset(seed=5), "reset")
        for step in range(20):
            assert_same(env.step(step % 2), local.step(step % 2), f"step {step}")
    finally:
        env.close()
        local.close()


def test_an_async_pool_plays_tool_episodes_on_swarm(swarm):
    """Echo-v0 (its own image) in an AsyncEnvPool of 4 sessions on 2 swarm services."""

    async def run():
        async with AsyncEnvPool("openenv/Echo-v0", size=4, servers=2, provider="swarm", tool_calls=True) as pool:
            assert len(ours(swarm)["services"]) == 2

            return await asyncio.gather(*(_echo_episode(pool, index) for index in range(8)))

    assert run_async(run(), 300 * UNIT) == [[f"{i}.{turn}" for turn in range(3)] for i in range(8)]


def test_from_env_fns_sends_its_factories_to_swarm_services(swarm):
    from openenv_gym.vector import RemoteVectorEnv

    remote = RemoteVectorEnv.from_env_fns([lambda: gym.make("CartPole-v1")] * 4, provider="swarm", servers=2)
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4)
    try:
        assert len(ours(swarm)["services"]) == 2
        assert_same(remote.reset(seed=8), local.reset(seed=8), "reset")
        assert_lockstep(remote, local, 40, np.random.default_rng(3))
    finally:
        remote.close()
        local.close()
