"""The Docker provider on a real Docker Engine: equivalence, lock-down seen from inside, faults, cleanup.

The README's test command starts an engine (scripts/docker-engine.sh) and builds the images
before pytest runs. Without an engine these tests skip, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

import openenv_gym
import openenv_gym.urls
from openenv_gym.client import http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.env import RemoteEnv
from openenv_gym.errors import ProviderError, ServerConnectError
from openenv_gym.providers.docker.images import RUNTIME_IMAGE, SERVER_UID, ImageBuildError
from openenv_gym.providers.docker.owners import owned_containers
from openenv_gym.providers.docker.provider import DockerProvider
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_lockstep, assert_same, assert_same_trajectory, checker_warnings, gym_check, play
from tests.utils import REPO_ROOT, UNIT, assert_restores_elsewhere, our_containers, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def no_container_left(docker):
    yield
    assert wait_until(lambda: not our_containers(docker), 10 * UNIT), "a container outlived its test"


@pytest.mark.parametrize(("gym_id", "steps"), [("CartPole-v1", 300), ("Pendulum-v1", 250)])
def test_episodes_match_gymnasium_in_a_container(gym_id, steps):
    """Same seeds and actions, same observations, rewards and flags as the local env, exactly."""
    local = gym.make(gym_id)
    remote = gym.make(f"openenv/{gym_id}", provider="docker")
    try:
        expected = play(local, seed=42, steps=steps, action_seed=7)
        actual = play(remote, seed=42, steps=steps, action_seed=7)
    finally:
        remote.close()
        local.close()
    assert_same_trajectory(actual, expected)


def test_check_env_passes_in_a_container():
    """Gymnasium's checker passes, warning about nothing the local env does not."""
    env = gym.make("openenv/CartPole-v1", provider="docker")
    try:
        remote_warnings = checker_warnings(gym_check, env.unwrapped)
    finally:
        env.close()
    assert remote_warnings <= checker_warnings(gym_check, gym.make("CartPole-v1").unwrapped)


def test_check_env_passes_on_the_echo_env_in_its_own_image(docker):
    env = gym.make("openenv/Echo-v0", provider="docker")
    try:
        image = docker.containers.get(env.unwrapped.provider.container_id).image.tags
        assert checker_warnings(gym_check, env.unwrapped) == set()
    finally:
        env.close()
    assert image == ["openenv-gym/echo:0.1.0"]


INSIDE = r"""
import json, os, resource
def read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None
try:
    open("/etc/probe", "w")
    root_writable = True
except OSError as exc:
    root_writable = exc.strerror
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(),
    "root_writable": root_writable,
    "cap_eff": status["CapEff"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
    "memory": read("/sys/fs/cgroup/memory/memory.limit_in_bytes") or read("/sys/fs/cgroup/memory.max"),
    "pids": read("/sys/fs/cgroup/pids/pids.max") or read("/sys/fs/cgroup/pids.max"),
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
    "interfaces": sorted(os.listdir("/sys/class/net")),
    "tmp_writable": os.access("/tmp", os.W_OK),
}))
"""


def inside(docker, provider: DockerProvider) -> dict:
    """What a process in the provider's container sees (run with docker exec, as the container's user)."""
    result = docker.containers.get(provider.container_id).exec_run(["python3", "-c", INSIDE])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_container_is_locked_down_as_seen_from_inside(docker):
    provider = DockerProvider("CartPole-v1", memory="300m", pids=100, open_files=2048)
    try:
        url = provider.start()
        seen = inside(docker, provider)
        ports = docker.containers.get(provider.container_id).ports["8000/tcp"]
    finally:
        provider.stop()
    assert (seen["uid"], seen["gid"]) == (SERVER_UID, SERVER_UID)
    assert seen["root_writable"] == "Read-only file system" and seen["tmp_writable"]
    assert seen["cap_eff"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert int(seen["memory"]) == 300 * 2**20 and seen["pids"] == "100" and seen["nofile"] == 2048
    assert "eth0" in seen["interfaces"]
    assert [binding["HostIp"] for binding in ports] == ["127.0.0.1"] and url.startswith("http://127.0.0.1:")


def test_no_network_mode_serves_through_a_unix_socket(docker):
    provider = DockerProvider("CartPole-v1", network="none")
    try:
        url = provider.start()
        assert url.startswith("http+unix://")
        assert inside(docker, provider)["interfaces"] == ["lo"]
        client = EnvClient(url)
        try:
            client.reset(seed=0)
            assert client.step({"action": 1}).reward == 1.0
        finally:
            client.close()
        socket_root = os.path.dirname(os.path.dirname(openenv_gym.urls.unix_socket_path(url)))
        assert os.stat(socket_root).st_mode & 0o777 == 0o700  # no other host user reaches the socket
    finally:
        provider.stop()
    assert not os.path.exists(socket_root)


def test_the_memory_limit_is_enforced_by_an_oom_kill_the_client_survives(docker):
    provider = DockerProvider("CartPole-v1", memory="200m")
    client = None
    try:
        client = EnvClient(provider.start(), token=provider.token)
        client.reset(seed=0)
        hog = "b = []\nwhile True:\n    b.append(bytearray(16 * 2**20))\n    b[-1][::4096] = b'x' * len(b[-1][::4096])"
        result = docker.containers.get(provider.container_id).exec_run(["python3", "-c", hog])
        assert result.exit_code == 137  # SIGKILL from the OOM killer
        assert client.step({"action": 0}).reward == 1.0  # the server and its session live on
    finally:
        if client is not None:
            client.close()
        provider.stop()


def test_make_vec_packs_sessions_into_containers_and_matches_sync_vector_env(docker):
    num_envs = 8
    remote = gym.make_vec(
        "openenv/CartPole-v1", num_envs=num_envs, provider="docker", sessions_per_server=4, vector_backend="per_env"
    )
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(num_envs)])
    try:
        assert len(our_containers(docker)) == 2
        assert_same(remote.reset(seed=3), local.reset(seed=3), "reset")
        assert_lockstep(remote, local, 60, np.random.default_rng(0))
    finally:
        remote.close()
        local.close()


def test_a_killed_container_restarts_its_sub_envs_truncated(docker):
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, provider="docker", sessions_per_server=2)
    try:
        envs.reset(seed=0)
        victim = envs.unwrapped._providers[0]
        docker.containers.get(victim.container_id).kill()
        _, rewards, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations.tolist() == [True, True, False, False]
        assert infos[FAILURE_INFO_KEY][0] and not infos[f"_{FAILURE_INFO_KEY}"][2:].any()
        _, rewards, _, truncations, _ = envs.step(np.zeros(4, dtype=np.int64))
        assert rewards.tolist() == [0.0, 0.0, 1.0, 1.0] or rewards.tolist() == [1.0] * 4
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
    finally:
        envs.close()


_OWNER = """
import sys, time
sys.path.insert(0, {root!r})
from openenv_gym.providers.docker.provider import DockerProvider
provider = DockerProvider("CartPole-v1")
provider.start()
print(provider.container_id, flush=True)
if sys.argv[1] == "hang":
    time.sleep(600)
"""


def _run_owner(mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _OWNER.format(root=str(REPO_ROOT)), mode], stdout=subprocess.PIPE, text=True
    )


def test_an_owner_that_exits_removes_its_container(docker):
    owner = _run_owner("exit")
    with owner.stdout:
        container_id = owner.stdout.readline().strip()
    assert owner.wait(60) == 0
    assert wait_until(lambda: not docker.containers.list(all=True, filters={"id": container_id}), 10 * UNIT)


@pytest.mark.serial  # `clean` and its check see every owner's containers on the engine
def test_containers_of_a_sigkilled_owner_are_listed_then_cleaned(docker):
    owner = _run_owner("hang")
    try:
        container_id = owner.stdout.readline().strip()
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
    finally:
        owner.kill()
        owner.stdout.close()
    assert docker.containers.list(all=True, filters={"id": container_id}), "the container went with its owner"
    ps = subprocess.run([sys.executable, "-m", "openenv_gym", "ps"], capture_output=True, text=True, timeout=60)
    assert ps.returncode == 0 and f":{owner.pid} (gone)" in ps.stdout
    clean = subprocess.run([sys.executable, "-m", "openenv_gym", "clean"], capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0 and container_id[:10] in clean.stdout
    assert not docker.containers.list(all=True, filters={"id": container_id})
    assert all(item.owner_alive for item in owned_containers(docker))


def test_a_missing_image_is_a_clear_error_and_nothing_is_pulled(docker):
    with pytest.raises(ImageBuildError, match="not in the local Docker cache, and images are never pulled"):
        DockerProvider("CartPole-v1", image="openenv-gym/absent:0").start()
    assert docker.images.list(name="openenv-gym/absent") == []


def test_an_env_that_cannot_be_made_in_a_container_is_an_env_creation_error(docker):
    """Bad env kwargs stop the container's server at start-up; the client gets EnvCreationError with the reason."""
    with pytest.raises(
        openenv_gym.EnvCreationError, match=re.escape("got an unexpected keyword argument 'bogus'")
    ) as caught:
        gym.make("openenv/CartPole-v1", provider="docker", bogus=1)
    assert caught.value.code == "FACTORY_ERROR" and caught.value.env_id == "CartPole-v1"


def test_open_file_limits_above_what_the_engine_takes_are_refused():
    with pytest.raises(ValueError, match="above 20000"):
        DockerProvider("CartPole-v1", open_files=65536)


def test_the_runtime_image_is_built_from_this_source(docker):
    from openenv_gym.providers.docker.images import SOURCE_LABEL, source_digest

    assert docker.images.get(RUNTIME_IMAGE).labels[SOURCE_LABEL] == source_digest()


def test_the_warm_pool_reuses_containers_between_make_vec_calls(docker):
    from openenv_gym.providers.docker import pool as docker_pool

    kwargs = {"num_envs": 4, "provider": "docker", "sessions_per_server": 2, "provider_kwargs": {"pool": True}}
    try:
        first = gym.make_vec("openenv/CartPole-v1", **kwargs)
        ids = {provider.container_id for provider in first.unwrapped._providers}
        first.close()
        assert docker_pool.pooled() == 2 and {c.id for c in our_containers(docker)} == ids
        second = gym.make_vec("openenv/CartPole-v1", **kwargs)
        try:
            assert {provider.container_id for provider in second.unwrapped._providers} == ids
            assert docker_pool.pooled() == 0
            _obs, _ = second.reset(seed=0)
            assert second.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
        finally:
            second.close()
    finally:
        docker_pool.clear()
    assert not our_containers(docker)


def test_a_container_on_the_bridge_always_requires_a_token(docker):
    """Its server binds every interface of the container, which other containers on the bridge and
    other users of this host's loopback reach: a fresh token per provider (one per run for a group,
    the pool's for pooled ones), in the container's environment, never on its command line."""
    from openenv_gym.providers.docker import pool as docker_pool

    provider = DockerProvider("CartPole-v1")
    assert provider.token and len(provider.token) >= 32 and DockerProvider("CartPole-v1").token != provider.token
    assert DockerProvider("CartPole-v1", network="none").token is None  # a socket in a directory of ours alone
    run = DockerProvider.group(3, target="CartPole-v1")
    assert len({member.token for member in run}) == 1 and run[0].token not in (None, provider.token)
    pooled = {DockerProvider("CartPole-v1", pool=True).token for _ in range(2)}
    assert pooled == {docker_pool.token()} and docker_pool.token() != provider.token
    try:
        url = provider.start()
        assert provider.token not in " ".join(docker.containers.get(provider.container_id).attrs["Args"])
        for token in (None, "not-the-token"):
            with pytest.raises(ServerConnectError, match="HTTP 401"):
                http_get_json(url, "/schema", token=token)
        assert http_get_json(url, "/health") == {"status": "healthy"}
        assert "action" in http_get_json(url, "/schema", token=provider.token)
    finally:
        provider.stop()


def test_an_env_image_s_own_command_requires_the_token_of_its_environment(docker):
    """`docker run IMAGE` (its CMD binds 0.0.0.0 in the container) stops at once with the fix when
    OPENENV_GYM_TOKEN is not set; with `-e OPENENV_GYM_TOKEN=...` it serves, requiring it."""
    from openenv_gym.providers.docker.images import build_env_image, env_image, image_current
    from openenv_gym.providers.docker.owners import owner_labels

    image = env_image("echo")
    if not image_current(docker, image):
        build_env_image(docker, "echo", progress=False)
    labels = owner_labels("the echo image's own command")
    refused = docker.containers.run(image, detach=True, labels=labels)
    try:
        assert refused.wait(timeout=60 * UNIT)["StatusCode"] == 2
        logs = refused.logs().decode()
        assert "--token-env OPENENV_GYM_TOKEN: that variable is not set" in logs and "docker run -e" in logs
    finally:
        refused.remove(force=True)
    served = docker.containers.run(
        image,
        detach=True,
        labels=labels,
        environment={"OPENENV_GYM_TOKEN": "image-token"},
        ports={"8000/tcp": ("127.0.0.1", None)},
    )
    try:

        def published() -> bool:
            served.reload()
            return bool((served.ports or {}).get("8000/tcp"))

        assert wait_until(published, 30 * UNIT)
        url = f"http://127.0.0.1:{served.ports['8000/tcp'][0]['HostPort']}"

        def healthy() -> bool:
            try:
                return http_get_json(url, "/health", timeout=1) == {"status": "healthy"}
            except ServerConnectError:
                return False

        assert wait_until(healthy, 60 * UNIT), served.logs().decode()
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            http_get_json(url, "/metadata")
        assert http_get_json(url, "/metadata", token="image-token")["name"]
    finally:
        served.remove(force=True)


def test_a_token_given_is_required_by_the_container(docker):
    """token= makes the server in the container require it; it reaches the server through the
    container's environment, not its command line."""
    provider = DockerProvider("CartPole-v1", token="container-token")
    env = None
    try:
        url = provider.start()
        assert "container-token" not in " ".join(docker.containers.get(provider.container_id).attrs["Args"])
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            http_get_json(url, "/schema")
        env = RemoteEnv("CartPole-v1", provider=provider)
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0
    finally:
        if env is not None:
            env.close()
        provider.stop()


def test_a_socket_path_too_long_for_unix_sockets_is_refused_at_once(tmp_path, monkeypatch):
    """network="none" under a temp dir so deep that no client could connect to the socket: a clear
    error before any container starts, instead of a server that seems never to answer."""
    deep = tmp_path / ("d" * 80)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with pytest.raises(ProviderError, match="set TMPDIR to a shorter directory"):
        DockerProvider("CartPole-v1", network="none").start()
    assert os.listdir(deep) == []


def test_a_container_and_a_local_server_restore_each_others_portable_snapshots(docker):
    """The container's server gets this process's snapshot key, as a local server does, on its
    standard input: the key is nowhere ``docker inspect`` shows (its environment, its command)."""
    from openenv_gym.startup import shared_snapshot_key

    contained = gym.make("openenv/CartPole-v1", provider="docker")
    local = gym.make("openenv/CartPole-v1")
    try:
        inspected = json.dumps(docker.api.inspect_container(contained.unwrapped.provider.container_id))
        assert shared_snapshot_key() not in inspected and "OPENENV_GYM_SNAPSHOT_KEY" not in inspected
        assert_restores_elsewhere(contained, local, seed=3, before=(1,), action=0)
    finally:
        local.close()
        contained.close()
