"""The Ray provider on a real local Ray instance, which this module starts and stops.

Servers bind 127.0.0.1 here (``host=``): on a real cluster they bind their node's address.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import urllib.parse

import gymnasium as gym
import numpy as np
import pytest
import ray
from gymnasium.vector import SyncVectorEnv
from ray.util.placement_group import placement_group

import openenv_gym  # noqa: F401
from openenv_gym.client import http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import ProviderError, ServerConnectError
from openenv_gym.providers import make_providers, ray_provider
from openenv_gym.providers.ray_provider import ACTOR_NAME_PREFIX, RayProvider, resource_request
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_lockstep, assert_same, assert_same_trajectory, play
from tests.utils import REPO_ROOT, UNIT, pid_alive, wait_until

# serial: Ray's nodes are found machine-wide (ray_address="auto", `ray stop`), so one Ray test module
# runs at a time, beside no other
pytestmark = [pytest.mark.slow, pytest.mark.serial]

LOOPBACK = {"host": "127.0.0.1"}
CUSTOM = "env_node"  # a custom resource the test cluster has two of


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=4, resources={CUSTOM: 2}, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def our_actors() -> list[str]:
    """Names of the live actors of this provider in the cluster, any job's."""
    return [
        a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(ACTOR_NAME_PREFIX)
    ]


def our_placement_groups() -> list[str]:
    return [pid for pid, group in ray.util.placement_group_table().items() if group["state"] != "REMOVED"]


@pytest.fixture(autouse=True)
def nothing_left(cluster):
    """Every test leaves no actor and no placement group of ours, and gives back every resource."""
    before = ray.available_resources()
    yield
    assert wait_until(lambda: not our_actors(), 20 * UNIT), our_actors()
    assert not our_placement_groups()
    assert wait_until(lambda: ray.available_resources().get("CPU") == before.get("CPU"), 20 * UNIT)
    assert ray.available_resources().get(CUSTOM) == before.get(CUSTOM)


def test_resources_are_read_in_rays_bundle_form():
    assert resource_request(None) == {"CPU": 1.0}
    assert resource_request({"num_cpus": 0.5, "num_gpus": 1, "memory": 2**30, CUSTOM: 0.1}) == {
        "CPU": 0.5,
        "GPU": 1.0,
        "memory": 2.0**30,
        CUSTOM: 0.1,
    }
    for bad in (-1, float("nan"), float("inf"), True, "1"):
        with pytest.raises(
            ValueError, match=re.escape(f"resources['num_cpus'] must be a non-negative number, got {bad!r}")
        ):
            resource_request({"num_cpus": bad})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"placement": "scatter"}, "placement must be one of"),
        ({"placement": "pack", "resources": {"num_cpus": 0}}, "a placement group needs a resource to reserve"),
        ({"host": ""}, "host must be an address to bind"),
        ({"host": "::"}, "host must be an address to bind"),
        ({"token": ""}, "token must not be empty"),
        ({"placement": "spread", "bundle_index": 1}, "leave out bundle_index"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RayProvider("CartPole-v1", **options)
    with pytest.raises(ValueError, match=re.escape(message)):
        make_providers("ray", 2, target="CartPole-v1", **options)


def test_episodes_match_gymnasium_through_a_ray_actor():
    """gym.make(..., provider="ray") plays exactly the local env's episodes; the server is one an actor started."""
    local = gym.make("CartPole-v1")
    remote = gym.make("openenv/CartPole-v1", provider="ray", **LOOPBACK)
    try:
        provider = remote.unwrapped.provider
        assert isinstance(provider, RayProvider) and our_actors() == [provider.actor_name]
        assert provider.token
        server_pid = provider.server_pid
        assert server_pid is not None and pid_alive(server_pid)
        ends = assert_same_trajectory(play(remote, 7, 300, 1), play(local, 7, 300, 1))
        assert ends >= 10
    finally:
        remote.close()
        local.close()
    assert not pid_alive(server_pid), "close() stops the server before it returns"


def test_the_token_given_is_the_one_the_servers_require():
    """token= given to gym.make or gym.make_vec is what the Ray-started servers require."""
    env = gym.make("openenv/CartPole-v1", provider="ray", token="chosen-token", **LOOPBACK)
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, provider="ray", servers=2, token="chosen-token", **LOOPBACK)
    try:
        providers = [env.unwrapped.provider, *envs.unwrapped._providers]
        assert {provider.token for provider in providers} == {"chosen-token"}
        for provider in providers:
            with pytest.raises(ServerConnectError, match="HTTP 401"):
                http_get_json(provider.base_url, "/schema", token="another-token")
            assert http_get_json(provider.base_url, "/schema", token="chosen-token")["action"]
        env.reset(seed=0)
        envs.reset(seed=0)
    finally:
        env.close()
        envs.close()


def test_make_vec_matches_sync_vector_env_on_ray_servers():
    """make_vec places servers=3 actors, one per server, and behaves as SyncVectorEnv does."""
    num_envs, limit = 6, 25
    remote = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=num_envs,
        max_episode_steps=limit,
        provider="ray",
        servers=3,
        vector_backend="per_env",  # one env per sub-env: SyncVectorEnv's results exactly
        **LOOPBACK,
    )
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=limit) for _ in range(num_envs)])
    try:
        providers = remote.unwrapped._providers
        assert len(providers) == 3 and len(set(our_actors())) == 3
        node = ray.util.get_node_ip_address()
        assert remote.unwrapped.placement == [
            {"sub_envs": (start, start + 2), "url": provider.base_url, "node": node}
            for start, provider in zip((0, 2, 4), providers)
        ]
        assert len({provider.token for provider in providers}) == 1, "one token per run"
        assert wait_until(lambda: ray.available_resources().get("CPU") == 4 - 3, 10 * UNIT), "one CPU per server"
        assert_same(remote.reset(seed=11), local.reset(seed=11), "reset")
        assert assert_lockstep(remote, local, 400, np.random.default_rng(0)) > 40
        server_pids = [provider.server_pid for provider in providers]
    finally:
        remote.close()
        local.close()
    assert not our_actors(), "close() kills every actor at once"
    assert not any(pid_alive(pid) for pid in server_pids)


def lose_first_server(envs) -> None:
    """Kill the actor of the first server of ``envs``, wait for its server to go, and check the next
    step reports the first server's two sub-envs truncated and the rollout goes on after it."""
    victim = envs.unwrapped._providers[0]
    old_pid = victim.server_pid
    ray.kill(victim._actor)
    assert wait_until(lambda: not pid_alive(old_pid), 20 * UNIT), "the server exits when its actor is gone"
    _, _, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
    assert truncations.tolist() == [True, True, False, False]
    assert "ConnectionLostError" in infos[FAILURE_INFO_KEY][0]
    assert not infos[f"_{FAILURE_INFO_KEY}"][2:].any()
    _, rewards, _, _, _ = envs.step(np.zeros(4, dtype=np.int64))  # NextStep: the restarted pair resets here
    assert rewards.tolist()[2:] == [1.0, 1.0]
    assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4


def test_a_killed_actor_restarts_its_sub_envs_truncated():
    """An actor killed mid-rollout: its sub-envs come back on a new actor, reported truncated with the reason."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, provider="ray", servers=2, **LOOPBACK)
    try:
        envs.reset(seed=0)
        victim = envs.unwrapped._providers[0]
        old_name = victim.actor_name
        lose_first_server(envs)
        assert victim.actor_name != old_name and victim.actor_name in our_actors()
    finally:
        envs.close()


class DyingServerActor:
    """Stands in for ServerActor: its process dies as it starts a server (a node going down)."""

    def __init__(self, *args: object) -> None:
        pass

    def start(self) -> str:
        os._exit(1)


def test_sub_envs_move_to_another_server_when_their_actor_cannot_be_replaced(monkeypatch):
    """The lost actor's replacement dies too: its sub-envs move, truncated, to the run's other
    server (which has room: sessions_per_server=4), and the rollout goes on."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, provider="ray", servers=2, sessions_per_server=4, **LOOPBACK)
    try:
        envs.reset(seed=0)
        survivor = envs.unwrapped._providers[1]
        monkeypatch.setattr(ray_provider, "_RemoteServerActor", ray.remote(num_cpus=1)(DyingServerActor))
        lose_first_server(envs)
        servers = {urllib.parse.urlsplit(block.client.url).netloc for block in envs.unwrapped._blocks}
        assert servers == {urllib.parse.urlsplit(survivor.base_url).netloc}
        node = ray.util.get_node_ip_address()
        assert envs.unwrapped.placement == [
            {"sub_envs": (0, 2), "url": survivor.base_url, "node": node},  # moved: where it runs now
            {"sub_envs": (2, 4), "url": survivor.base_url, "node": node},
        ]
    finally:
        envs.close()


def test_spread_without_servers_starts_one_server_per_node_that_fits_one():
    """placement="spread" and no servers=: one server per live node with room (here, one node);
    with a resource no node has, the count is one (and placing it fails as usual)."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, provider="ray", placement="spread", **LOOPBACK)
    try:
        assert [entry["sub_envs"] for entry in envs.unwrapped.placement] == [(0, 4)]
    finally:
        envs.close()
    assert RayProvider.preferred_count(placement="spread", resources={"num_gpus": 1}) == 1
    assert RayProvider.preferred_count(placement="pack") is None


def test_a_server_that_dies_is_restarted_by_its_own_actor():
    """The actor outlives its server: the provider asks it for a new server, on the same placement."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, provider="ray", servers=1, **LOOPBACK)
    try:
        envs.reset(seed=0)
        provider = envs.unwrapped._providers[0]
        name, pid = provider.actor_name, provider.server_pid
        os.kill(pid, signal.SIGKILL)
        _, _, _, truncations, infos = envs.step(np.zeros(2, dtype=np.int64))
        assert truncations.all() and infos[FAILURE_INFO_KEY][0]
        assert provider.actor_name == name and provider.server_pid not in (None, pid)
    finally:
        envs.close()


def test_a_server_that_looks_alive_but_does_not_answer_is_replaced_by_its_own_actor():
    """A server killed an instant ago can still look alive to its actor (a loaded node has not
    reaped it yet): one that cannot answer (here stopped with SIGSTOP) is killed and started again
    by the same actor, not by a new one."""
    provider = RayProvider("CartPole-v1", **LOOPBACK)
    try:
        provider.start()
        provider.startup_timeout = 5.0 * UNIT  # how long the stopped server's /health is waited for
        name, pid = provider.actor_name, provider.server_pid
        os.kill(pid, signal.SIGSTOP)
        url = provider.start()
        assert http_get_json(url, "/health") == {"status": "healthy"}
        assert provider.actor_name == name and provider.server_pid not in (None, pid)
        assert wait_until(lambda: not pid_alive(pid), 10 * UNIT)
    finally:
        provider.stop()


def test_a_bad_token_is_refused():
    """The server an actor starts requires the run's token: none or a wrong one gets HTTP 401."""
    provider = RayProvider("CartPole-v1", **LOOPBACK)
    try:
        url = provider.start()
        assert http_get_json(url, "/health") == {"status": "healthy"}  # what load balancers probe
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            http_get_json(url, "/schema", token="not-the-token")
        for token in (None, "not-the-token", provider.token + "x"):
            client = EnvClient(url, token=token)
            with pytest.raises(ServerConnectError, match="HTTP 401"):
                client.connect()
            client.close()
        with EnvClient(url, token=provider.token) as client:
            assert len(client.reset(seed=0).observation["observation"]) == 4  # CartPole
    finally:
        provider.stop()


def test_resources_and_placement_reserve_and_give_back():
    """Custom resources and a placement group are taken while the servers run and given back on close."""
    envs = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=4,
        provider="ray",
        servers=2,
        resources={"num_cpus": 0.5, CUSTOM: 1},
        placement="pack",
        **LOOPBACK,
    )
    try:
        assert ray.available_resources().get(CUSTOM, 0) == 0 and ray.available_resources()["CPU"] == 3
        assert len(our_placement_groups()) == 1
        envs.reset(seed=0)
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
    finally:
        envs.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"placement": "strict_spread"}, "Ray could not reserve 2 x {'CPU': 1.0} with strategy STRICT_SPREAD"),
        ({"resources": {"absent_resource": 1}}, "Ray did not place a server for 'CartPole-v1' within 2 s"),
    ],
    ids=["strict-spread-on-one-node", "missing-resource"],
)
def test_what_the_cluster_cannot_place_fails_in_time_and_leaves_nothing(monkeypatch, options, message):
    """The servers of a run that cannot be placed wait for one reservation, not one each."""
    reservations = []

    def counted(*args, **kwargs):
        reservations.append(args)
        return placement_group(*args, **kwargs)

    monkeypatch.setattr(ray_provider, "placement_group", counted)
    with pytest.raises(ProviderError, match=re.escape(message)):
        gym.make_vec(
            "openenv/CartPole-v1",
            num_envs=2,
            provider="ray",
            servers=2,
            startup_timeout=2 * UNIT,
            **options,
            **LOOPBACK,
        )
    assert len(reservations) == (1 if "placement" in options else 0)


def test_options_for_another_provider_are_refused():
    with pytest.raises(TypeError, match=r"provider='ray': .*unexpected keyword argument 'memory_limit'"):
        make_providers("ray", 2, target="CartPole-v1", memory_limit="1g")


_OWNER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    import ray, gymnasium as gym, openenv_gym
    ray.init(address=sys.argv[1], log_to_driver=False)
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, provider="ray", servers=2, host="127.0.0.1")
    print(" ".join(str(p.server_pid) for p in envs.unwrapped._providers), flush=True)
    time.sleep(600)
    """
)


def test_an_owner_killed_with_sigkill_leaves_no_actor_and_no_server(cluster):
    """Another driver makes a vector env on this cluster and is SIGKILLed: Ray ends its actors, and
    their servers follow."""
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER.format(root=str(REPO_ROOT)), cluster], stdout=subprocess.PIPE, text=True
    )
    try:
        line = owner.stdout.readline()
        server_pids = [int(pid) for pid in line.split()]
        assert len(server_pids) == 2 and all(map(pid_alive, server_pids)), line
        assert len(our_actors()) == 2
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
    finally:
        owner.kill()
        owner.stdout.close()
    assert wait_until(lambda: not our_actors(), 30 * UNIT), our_actors()
    assert wait_until(lambda: not any(map(pid_alive, server_pids)), 30 * UNIT)
