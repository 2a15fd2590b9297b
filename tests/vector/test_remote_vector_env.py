"""RemoteVectorEnv against Gymnasium's own SyncVectorEnv: same seeds and actions, same everything."""

from __future__ import annotations

import functools
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import openenv_gym
from openenv_gym.providers.fleet import server_layout
from openenv_gym.vector import RemoteVectorEnv
from tests.equivalence import assert_lockstep, assert_same
from tests.utils import pid_alive, wait_until

NUM_ENVS = 6
LIMIT = 25  # short episodes: many truncations as well as terminations


@pytest.mark.parametrize(
    ("batched", "codec"), [(True, "binary"), (True, "json"), (False, "json")], ids=["binary", "json", "per-session"]
)
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda mode: mode.value)
def test_matches_sync_vector_env(mode, batched, codec):
    """For each autoreset mode, session layout and codec, 1,000 steps over two servers give SyncVectorEnv's results."""
    remote = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=NUM_ENVS,
        max_episode_steps=LIMIT,
        autoreset_mode=mode,
        sessions_per_server=4,
        batched=batched,
        codec=codec,
        vector_backend="per_env",
    )
    local = SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=LIMIT) for _ in range(NUM_ENVS)], autoreset_mode=mode
    )
    try:
        assert isinstance(remote, RemoteVectorEnv) and len(remote._blocks) == (2 if batched else NUM_ENVS)
        if batched:  # the codec the servers agreed to
            subprotocols = {block.client.connection._ws.subprotocol for block in remote._blocks}
            assert subprotocols == ({"openenv-gym.binary.v2"} if codec == "binary" else {None})
        assert remote.metadata["autoreset_mode"] is mode
        assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
        assert_same(remote.reset(seed=123), local.reset(seed=123), "reset")
        rng = np.random.default_rng(0)

        def masked_reset(ended: np.ndarray, step: int) -> None:
            seeds = [int(s) for s in rng.integers(0, 1000, NUM_ENVS)]
            assert_same(
                remote.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                local.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                f"masked reset {step}",
            )

        ends = assert_lockstep(
            remote, local, 1000, rng, after_ends=masked_reset if mode is AutoresetMode.DISABLED else None
        )
        assert ends > 100, "the run should cross many episode ends"
    finally:
        remote.close()
        local.close()


def test_disabled_mode_refuses_to_step_an_ended_sub_env():
    """With autoreset disabled, stepping a sub-env that ended (without a masked reset) is an error."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, max_episode_steps=2, autoreset_mode="Disabled")
    try:
        envs.reset(seed=0)
        envs.step(np.array([0, 0]))
        _, _, _, truncations, _ = envs.step(np.array([0, 0]))
        assert truncations.all()
        with pytest.raises(
            openenv_gym.RemoteEpisodeEndedError, match=re.escape("ended: reset it with reset_mask before")
        ):
            envs.step(np.array([0, 0]))
    finally:
        envs.close()


def test_step_async_and_wait():
    """step_async/step_wait split a step; misuse raises Gymnasium's own errors."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3)
    try:
        envs.reset(seed=1)
        with pytest.raises(NoAsyncCallError):
            envs.step_wait()
        envs.step_async(np.array([1, 0, 1]))
        with pytest.raises(AlreadyPendingCallError):
            envs.step_async(np.array([1, 0, 1]))
        with pytest.raises(AlreadyPendingCallError):
            envs.reset()
        obs, rewards, *_ = envs.step_wait(timeout=30)
        assert obs.shape == (3, 4) and rewards.tolist() == [1.0, 1.0, 1.0]
    finally:
        envs.close()


def test_packing_and_cleanup():
    """Sub-envs are packed sessions_per_server to a server; close() stops every server it started."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=5, sessions_per_server=2)
    pids = [provider.pid for provider in envs.unwrapped._providers]
    try:
        assert len(pids) == 3 and all(pid_alive(pid) for pid in pids)
        assert [(b.start, b.stop) for b in envs.unwrapped._blocks] == [(0, 2), (2, 3), (3, 5)]
        assert repr(envs) == "RemoteVectorEnv(CartPole-v1, num_envs=5)"
    finally:
        envs.close()
    assert wait_until(lambda: not any(pid_alive(pid) for pid in pids), 10)


@pytest.mark.parametrize(
    ("num_envs", "sessions_per_server", "servers", "layout"),
    [
        (64, None, 48, (48, 2)),  # servers= is the count, even when it does not divide num_envs
        (10, None, 6, (6, 2)),
        (5, None, 4, (4, 2)),
        (3, None, 8, (3, 1)),  # never more servers than sub-envs
        (4, 4, 2, (2, 4)),  # sessions_per_server with servers=: room for a failed server's sub-envs
        (64, 8, None, (8, 8)),
        (5, 2, None, (3, 2)),
    ],
)
def testserver_layout(num_envs, sessions_per_server, servers, layout):
    assert server_layout(num_envs, sessions_per_server, servers) == layout


def test_server_layout_refuses_what_cannot_hold():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "servers=2 puts 4 sub-envs on a server, more than sessions_per_server=3; ask for at least 3 servers"
        ),
    ):
        server_layout(8, 3, 2)
    for bad in ({"servers": 0}, {"sessions_per_server": 0}):
        with pytest.raises(ValueError, match="must be at least 1"):
            server_layout(4, bad.get("sessions_per_server"), bad.get("servers"))


def test_servers_starts_that_many_servers_with_the_sub_envs_spread_evenly():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=5, servers=4)
    try:
        assert len(envs.unwrapped._providers) == 4
        assert sorted(b.stop - b.start for b in envs.unwrapped._blocks) == [1, 1, 1, 2]
    finally:
        envs.close()


def test_a_token_given_is_required_by_the_servers_started():
    """token= reaches the process provider: the servers started refuse sessions without it."""
    from openenv_gym.client import http_get_json
    from openenv_gym.errors import ServerConnectError

    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, servers=2, token="chosen")
    env = gym.make("openenv/CartPole-v1", token="chosen")
    try:
        for provider in [*envs.unwrapped._providers, env.unwrapped.provider]:
            assert provider.token == "chosen"
            with pytest.raises(ServerConnectError, match="HTTP 401"):
                http_get_json(provider.base_url, "/schema")
        envs.reset(seed=0)
        env.reset(seed=0)
    finally:
        envs.close()
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"base_url": "http://127.0.0.1:1", "servers": 2}, ValueError, "with base_urls= none is started"),
        ({"base_url": "http://127.0.0.1:1", "memory": "1g"}, TypeError, "unexpected keyword arguments ['memory']"),
        ({"token": "a", "provider_kwargs": {"token": "b"}}, ValueError, "pass the token once"),
    ],
)
def test_conflicting_options_are_refused_before_anything_starts(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        gym.make_vec("openenv/CartPole-v1", num_envs=2, **kwargs)
    if "servers" not in kwargs:  # a single env takes the same options, but servers=
        with pytest.raises(error, match=re.escape(message)):
            gym.make("openenv/CartPole-v1", **kwargs)


def test_servers_bound_beyond_loopback_share_one_token_per_run():
    """So that sub-envs whose server is lost can move to another server of the run."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, servers=2, host="127.0.0.2")
    try:
        tokens = {provider.token for provider in envs.unwrapped._providers}
        assert len(tokens) == 1 and None not in tokens
        envs.reset(seed=0)
    finally:
        envs.close()


def test_base_urls_spread_sessions_over_running_servers():
    """base_urls= spreads sub-envs over servers started elsewhere, which stay up after close()."""
    from openenv_gym.providers import ProcessProvider

    providers = [ProcessProvider("CartPole-v1", max_episode_steps=None) for _ in range(2)]
    try:
        urls = [provider.start() for provider in providers]
        envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, base_urls=urls)
        obs, _ = envs.reset(seed=5)
        expected, _ = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)]).reset(seed=5)
        np.testing.assert_array_equal(obs, expected)
        envs.close()
        assert all(provider.is_alive() for provider in providers)
    finally:
        for provider in providers:
            provider.stop()


def test_seed_list_length_is_checked():
    """A seed list of the wrong length gets Gymnasium's message."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2)
    try:
        with pytest.raises(ValueError, match="the length must match num_envs=2"):
            envs.reset(seed=[1, 2, 3])
    finally:
        envs.close()


def test_servers_that_differ_in_codec_still_give_sync_vector_env_results():
    """One block on JSON frames, the other on binary ones (servers of different versions): same results."""
    # Room for 4 sub-envs per server: the replaced session may still count while its server closes it.
    remote = gym.make_vec(
        "openenv/CartPole-v1", num_envs=4, servers=2, sessions_per_server=4, autoreset_mode="SameStep"
    )
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)], autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        block = remote._blocks[1]
        block.client.close()
        block.make_client = functools.partial(block.make_client, codec="json")
        block.client = block.make_client(block.provider.start()).connect()
        assert [b.client.connection._ws.subprotocol for b in remote._blocks] == ["openenv-gym.binary.v2", None]
        assert_same(remote.reset(seed=5), local.reset(seed=5), "reset")
        assert assert_lockstep(remote, local, 300, np.random.default_rng(2)) > 10
    finally:
        remote.close()
        local.close()


def test_image_observations_are_identical_in_both_codecs(monkeypatch):
    """84x84x3 uint8 frames arrive identical to the local env's, as raw bytes or as JSON."""
    from tests.testing_env import make_pixels
    from tests.utils import REPO_ROOT

    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    local = SyncVectorEnv([make_pixels for _ in range(3)])
    expected = [local.reset(seed=9)[0]] + [local.step(np.array([a, 1, 2]))[0] for a in range(3)]
    for codec in ("binary", "json"):
        envs = RemoteVectorEnv("tests.testing_env:make_pixels", num_envs=3, codec=codec)
        try:
            actual = [envs.reset(seed=9)[0]] + [envs.step(np.array([a, 1, 2]))[0] for a in range(3)]
        finally:
            envs.close()
        for got, want in zip(actual, expected):
            assert got.dtype == np.uint8 and got.shape == (3, 84, 84, 3)
            np.testing.assert_array_equal(got, want)


def test_call_get_attr_set_attr_like_sync_vector_env():
    """call/get_attr/set_attr reach every sub-env as SyncVectorEnv's do; private names are refused."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=3, sessions_per_server=2, vector_backend="per_env")
    local = SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(3)])
    try:
        remote.reset(seed=4)
        local.reset(seed=4)
        assert remote.call("np_random_seed") == local.call("np_random_seed") == (4, 5, 6)
        assert remote.get_attr("gravity") == local.get_attr("gravity")
        remote.set_attr("force_mag", [1.0, 2.0, 3.0])
        local.set_attr("force_mag", [1.0, 2.0, 3.0])
        assert remote.get_attr("force_mag") == local.get_attr("force_mag") == (1.0, 2.0, 3.0)
        actions = np.array([1, 1, 1])
        np.testing.assert_array_equal(remote.step(actions)[0], local.step(actions)[0])  # the new force acts
        remote.set_attr("force_mag", 7.0)
        assert remote.get_attr("force_mag") == (7.0, 7.0, 7.0)
        with pytest.raises(openenv_gym.RemoteError, match="must be a public attribute name"):
            remote.get_attr("_private")
        for envs in (remote, local):  # a sub-env's AttributeError is one, as SyncVectorEnv raises it
            with pytest.raises(AttributeError, match="no_such_method"):
                envs.call("no_such_method")
        with pytest.raises(ValueError, match="Got `2` values for 3 environments"):
            remote.set_attr("force_mag", [1.0, 2.0])
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("call", ["reset", "step", "step_wait", "call", "get_attr", "set_attr"])
def test_a_closed_vector_env_stays_closed(call):
    """Every call after close() raises ClosedEnvError; no server is started again, and close() stays idempotent."""
    from tests.utils import own_server_pids

    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, servers=2)
    envs.reset(seed=0)
    envs.close()
    before = own_server_pids()
    args = {
        "step": (np.zeros(2, dtype=np.int64),),
        "call": ("reset",),
        "get_attr": ("gravity",),
        "set_attr": ("gravity", 1.0),
    }
    with pytest.raises(
        openenv_gym.ClosedEnvError,
        match=re.escape(f"{call}() on RemoteVectorEnv(CartPole-v1, num_envs=2) after close()"),
    ) as caught:
        getattr(envs, call)(*args.get(call, ()))
    assert isinstance(caught.value, gym.error.ClosedEnvironmentError)
    assert own_server_pids() <= before
    envs.close()
    assert own_server_pids() <= before


@pytest.mark.parametrize(
    "actions, reason",
    [
        (np.array([0.0, 1.7]), "expected integers, got an array of float64"),
        (np.array([0, 2]), "outside the bounds"),
        ([0, 1, 1], "expected shape (2,), got shape (3,)"),
        ("left", "got str"),
    ],
)
def test_actions_outside_the_space_are_refused_before_sending(actions, reason):
    """A batch with a float, an out-of-range or a missing action raises InvalidActionError; the step goes on after."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2)
    try:
        envs.reset(seed=0)
        with pytest.raises(openenv_gym.InvalidActionError, match=re.escape(reason)) as caught:
            envs.step(actions)
        assert caught.value.env_id == "openenv/CartPole-v1"
        envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_keyword_arguments_beyond_ours_go_to_every_sub_env():
    """gym.make_vec(id, N, sutton_barto_reward=True) reaches each sub-env, as gym.make's kwargs do."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, sutton_barto_reward=True)
    try:
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(np.array([0, 0]))
        assert rewards.tolist() == [0.0, 0.0]
    finally:
        envs.close()


def test_pickling_a_vector_env_says_how_to_make_it_where_it_is_used():
    """pickle of a remote vector env raises a TypeError that says to pass a function making it."""
    import pickle

    envs = gym.make_vec("openenv/CartPole-v1", num_envs=1)
    try:
        with pytest.raises(TypeError, match=re.escape("holds live sessions with its servers and cannot be pickled")):
            pickle.dumps(envs)
    finally:
        envs.close()
