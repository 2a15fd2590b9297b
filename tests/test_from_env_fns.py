"""RemoteVectorEnv.from_env_fns: your own factories, pickled to servers the process provider starts, stepped as SyncVectorEnv steps them."""

from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import threading
from typing import ClassVar

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import openenv_gym
from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.client.batch_client import BatchClient
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.providers import ProcessProvider
from openenv_gym.server import EnvServer, GymEnvironment
from openenv_gym.spaces import space_to_json
from openenv_gym.startup import PICKLED_FACTORIES_TARGET
from openenv_gym.vector import RemoteVectorEnv
from openenv_gym.vector.from_env_fns import factory_batch_client
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_lockstep, assert_same
from tests.utils import UNIT, own_server_pids, wait_until


def walk_factories(count: int) -> list:
    """Factories of an env class defined here, inside a function, so no server can import it: cloudpickle ships it by value."""

    class Walk(gym.Env):
        """A walk on a line: +1 or -1 per step, terminated at +-length, truncated by a time limit."""

        metadata: ClassVar[dict] = {"render_modes": [], "shipped": True}

        def __init__(self, length: int) -> None:
            self.length = length
            self.observation_space = spaces.Box(-100.0, 100.0, (2,), np.float32)
            self.action_space = spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.position = 0
            self.offset = float(self.np_random.uniform(-1.0, 1.0))
            return self._observation(), {"offset": self.offset}

        def step(self, action):
            self.position += 1 if action == 1 else -1
            terminated = abs(self.position) >= self.length
            reward = float(self.position) + self.offset
            return self._observation(), reward, terminated, False, {"position": self.position}

        def _observation(self) -> np.ndarray:
            return np.array([self.position, self.offset], dtype=np.float32)

    return [lambda i=i: gym.wrappers.TimeLimit(Walk(2 + i % 3), max_episode_steps=5) for i in range(count)]


@pytest.fixture(autouse=True)
def no_server_left_behind():
    """Every server a test starts is gone when it ends."""
    yield
    assert wait_until(lambda: not own_server_pids(), 10 * UNIT), f"servers left: {own_server_pids()}"


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda mode: mode.value)
def test_a_local_env_class_is_shipped_and_matches_sync_vector_env(mode):
    """A class defined in a test is shipped to two servers and gives SyncVectorEnv's exact results over many episode ends."""
    env_fns = walk_factories(5)
    remote = RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode=mode, servers=2)
    local = SyncVectorEnv(env_fns, autoreset_mode=mode)
    try:
        assert isinstance(remote, RemoteVectorEnv) and len(remote._blocks) == 2
        assert repr(remote) == "RemoteVectorEnv(env_fns: Walk, num_envs=5)"
        assert remote.single_observation_space == local.single_observation_space
        assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
        assert remote.metadata == {"render_modes": [], "shipped": True, "autoreset_mode": mode}
        assert remote.get_attr("length") == (2, 3, 4, 2, 3)  # the sub-envs are the shipped objects
        assert_same(remote.reset(seed=7), local.reset(seed=7), "reset")
        rng = np.random.default_rng(0)

        def masked_reset(ended: np.ndarray, step: int) -> None:
            seeds = [int(seed) for seed in rng.integers(0, 1000, 5)]
            assert_same(
                remote.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                local.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                f"masked reset {step}",
            )

        after_ends = masked_reset if mode is AutoresetMode.DISABLED else None
        assert assert_lockstep(remote, local, 200, rng, after_ends=after_ends) > 50
    finally:
        remote.close()
        local.close()
    assert remote.closed


def test_copy_false_returns_the_vector_envs_own_buffer():
    """copy=False, as AsyncVectorEnv's, hands out one observation buffer that each call overwrites."""
    env_fns = [lambda: gym.make("CartPole-v1") for _ in range(2)]
    envs = RemoteVectorEnv.from_env_fns(env_fns, copy=False, servers=1)
    try:
        first, _ = envs.reset(seed=0)
        second = envs.step(np.array([0, 1]))[0]
        assert second is first
    finally:
        envs.close()
    copied = RemoteVectorEnv.from_env_fns(env_fns, servers=1)
    try:
        first, _ = copied.reset(seed=0)
        assert copied.step(np.array([0, 1]))[0] is not first
    finally:
        copied.close()


def test_factories_that_render_give_sync_vector_env_s_frames():
    """Factories made in rgb_array: render() gives SyncVectorEnv's tuple of frames, equal frame for frame."""
    env_fns = [lambda: gym.make("CartPole-v1", render_mode="rgb_array") for _ in range(2)]
    remote = RemoteVectorEnv.from_env_fns(env_fns, servers=1)
    local = SyncVectorEnv(env_fns)
    try:
        assert remote.render_mode == local.render_mode == "rgb_array"
        assert remote.metadata["render_fps"] == local.metadata["render_fps"]
        remote.reset(seed=3)
        local.reset(seed=3)
        for actions in (np.array([0, 1]), np.array([1, 1]), None):
            frames, expected = remote.render(), local.render()
            assert isinstance(frames, tuple) and len(frames) == 2
            for frame, want in zip(frames, expected):
                np.testing.assert_array_equal(frame, want)
            if actions is not None:
                remote.step(actions)
                local.step(actions)
    finally:
        remote.close()
        local.close()


def test_a_killed_server_gets_the_factories_again():
    """SIGKILL of one server: its restarted server is sent the factories again, its sub-envs come back truncated, and all go on."""
    envs = RemoteVectorEnv.from_env_fns(walk_factories(4), servers=2)
    try:
        envs.reset(seed=0)
        victim = envs._providers[0].pid
        os.kill(victim, signal.SIGKILL)
        _, _, _, truncations, infos = envs.step(np.ones(4, dtype=np.int64))
        assert truncations[:2].all() and infos[f"_{FAILURE_INFO_KEY}"].tolist() == [True, True, False, False]
        assert envs._providers[0].pid != victim
        for _ in range(12):  # across episode ends, on the new server too
            observations = envs.step(np.ones(4, dtype=np.int64))[0]
        assert observations.shape == (4, 2)
        assert envs.get_attr("length") == (2, 3, 4, 2)
    finally:
        envs.close()


CALLERS_MODULE = """
import gymnasium as gym
import numpy as np


class OnlyOnTheCallersPath(gym.Env):
    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.full(1, 0.5, np.float32), {"module": __name__}

    def step(self, action):
        return np.full(1, action, np.float32), 1.0, True, False, {}
"""


def test_a_class_in_a_module_only_on_the_caller_s_path_is_found_by_the_servers(tmp_path, monkeypatch):
    """A factory of a class in a module only the caller's sys.path holds (pickled by reference, as a
    test module's class is) unpickles on the servers, which see the caller's path as SubprocVecEnv's workers do."""
    (tmp_path / "callers_own_envs.py").write_text(CALLERS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    env_class = importlib.import_module("callers_own_envs").OnlyOnTheCallersPath
    assert cloudpickle.dumps(env_class).count(b"callers_own_envs")  # by reference: the servers import it
    try:
        envs = RemoteVectorEnv.from_env_fns([env_class, env_class], servers=2)
        try:
            observations, infos = envs.reset(seed=0)
            assert observations.tolist() == [[0.5], [0.5]]
            assert infos["module"].tolist() == ["callers_own_envs", "callers_own_envs"]
            assert envs.step(np.array([1, 0]))[0].tolist() == [[1.0], [0.0]]
        finally:
            envs.close()
    finally:
        del sys.modules["callers_own_envs"]


def test_a_factory_that_raises_is_an_env_creation_error_and_leaves_no_process():
    """A factory raising on its server is an EnvCreationError naming the sub-env; every server started is stopped."""

    def broken() -> gym.Env:
        raise ValueError("no such level")

    env_fns = [*walk_factories(1), broken]
    with pytest.raises(
        openenv_gym.EnvCreationError, match=re.escape("sub-env 1's factory raised ValueError: no such level")
    ):
        RemoteVectorEnv.from_env_fns(env_fns, servers=2)
    assert wait_until(lambda: not own_server_pids(), 10 * UNIT)


def test_a_factory_that_returns_no_env_is_an_env_creation_error():
    """A factory whose result is not a gymnasium.Env is refused by the server, by the sub-env's index."""
    env_fns = [*walk_factories(2), lambda: 42]
    with pytest.raises(
        openenv_gym.EnvCreationError, match=re.escape("sub-env 2's factory returned int, not a gymnasium.Env")
    ):
        RemoteVectorEnv.from_env_fns(env_fns, servers=1)


def test_sub_envs_with_other_spaces_are_refused_as_async_vector_env_does():
    """A sub-env whose observation space differs from env_fns[0]'s raises SpaceMismatchError, a RuntimeError."""
    env_fns = [lambda: gym.make("CartPole-v1"), lambda: gym.make("MountainCar-v0")]
    with pytest.raises(RuntimeError, match=re.escape("sub-env 1 has the observation space Box(")) as caught:
        RemoteVectorEnv.from_env_fns(env_fns, servers=1)
    assert isinstance(caught.value, openenv_gym.SpaceMismatchError)
    assert (caught.value.index, caught.value.role) == (1, "observation")


# The servers' side of the rule ------------------------------------------------------------------


def factory_client(url: str, factories: list[bytes], **kwargs) -> BatchClient:
    """A batch client that sends ``factories`` (pickled) to the server at ``url``."""
    cartpole = gym.make("CartPole-v1")
    expected = {
        "action": space_to_json(cartpole.action_space),
        "observation": space_to_json(cartpole.observation_space),
    }
    return factory_batch_client(
        url,
        len(factories),
        WireAutoresetMode.NEXT_STEP,
        factories=factories,
        spaces=expected,
        open_timeout=5 * UNIT,
        **kwargs,
    )


CARTPOLE = cloudpickle.dumps(lambda: gym.make("CartPole-v1"))


@pytest.mark.parametrize("token", [None, "a-token"], ids=["no-token", "token"])
def test_a_server_started_without_the_opt_in_refuses_pickles(token):
    """A server started without --accept-pickled-factories refuses them with a PICKLES_REFUSED error frame, token or not."""
    with ProcessProvider("CartPole-v1", token=token) as url:
        client = factory_client(url, [CARTPOLE], token=token)
        with pytest.raises(
            openenv_gym.RemoteError, match=re.escape("started without --accept-pickled-factories")
        ) as caught:
            client.connect()
        assert caught.value.code == "PICKLES_REFUSED"
        with EnvClient(url, token=token) as plain:  # its own env still serves
            assert plain.reset(seed=0).observation


def test_a_server_that_takes_pickles_refuses_a_client_without_its_token():
    """A server started with the opt-in has a token of its own; a bare URL (or a wrong token) gets HTTP 401."""
    provider = ProcessProvider(PICKLED_FACTORIES_TARGET, accept_pickled_factories=True)
    with provider as url:
        assert provider.token
        for token in (None, "not-the-token"):
            with pytest.raises(openenv_gym.ServerConnectError, match="HTTP 401"):
                factory_client(url, [CARTPOLE], token=token).connect()
        client = factory_client(url, [CARTPOLE], token=provider.token).connect()  # with it, the factory runs
        try:
            assert len(client.reset_batch(seeds=[0]).observations) == 1
        finally:
            client.close()


def test_a_server_without_a_target_describes_itself_and_refuses_plain_sessions():
    """/metadata and /schema of a pickles-only server say so, and a plain session is told where to go."""
    provider = ProcessProvider(PICKLED_FACTORIES_TARGET, accept_pickled_factories=True)
    with provider as url:
        metadata = http_get_json(url, "/metadata", timeout=5 * UNIT, token=provider.token)
        assert (metadata["target"], metadata["pickled_factories"]) == (PICKLED_FACTORIES_TARGET, True)
        schema = http_get_json(url, "/schema", timeout=5 * UNIT, token=provider.token)
        assert schema["pickled_factories"] is True and "spaces" not in schema
        with EnvClient(url, token=provider.token) as plain:
            with pytest.raises(openenv_gym.RemoteError, match=re.escape("this server has no environment of its own")):
                plain.reset()


def test_a_pickle_that_cannot_be_loaded_is_an_env_creation_error():
    """Bytes that are no pickle are refused with a FACTORY_ERROR naming the sub-env; the server lives on."""
    provider = ProcessProvider(PICKLED_FACTORIES_TARGET, accept_pickled_factories=True)
    with provider as url:
        with pytest.raises(openenv_gym.EnvCreationError, match=re.escape("sub-env 1's factory could not be unpickled")):
            factory_client(url, [CARTPOLE, b"not a pickle"], token=provider.token).connect()
        assert provider.is_alive()


def test_env_server_refuses_to_take_pickles_without_a_token():
    """EnvServer(accept_pickled_factories=True) needs a token."""
    with pytest.raises(ValueError, match=re.escape("accept_pickled_factories needs a token")):
        EnvServer(lambda: GymEnvironment(gym.make("CartPole-v1")), accept_pickled_factories=True)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--accept-pickled-factories"], "--accept-pickled-factories needs --token-env VAR"),
        (["CartPole-v1", "--accept-pickled-factories"], "--accept-pickled-factories needs --token-env VAR"),
        ([], "TARGET is missing"),
        ([PICKLED_FACTORIES_TARGET], f"{PICKLED_FACTORIES_TARGET} serves nothing"),
    ],
    ids=["no-target", "target", "nothing", "reserved-target"],
)
def test_serve_refuses_to_take_pickles_without_a_token(arguments, message):
    """`openenv-gym serve --accept-pickled-factories` without --token-env (or without anything to serve) does not start."""
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", *arguments, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30 * UNIT,
    )
    assert result.returncode == 2
    assert message in result.stderr


# Arguments -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"worker": lambda *args: None}, ValueError, "worker= is not supported"),
        ({"observation_mode": "invalid"}, ValueError, "Invalid `observation_mode`, expected: 'same' or 'different'"),
        ({"max_concurrency": 2}, ValueError, "max_concurrency= is not supported"),
        ({"base_url": "http://127.0.0.1:8000"}, TypeError, "base_url= cannot be given"),
        ({"base_urls": ["http://127.0.0.1:8000"]}, TypeError, "base_urls= cannot be given"),
        ({"provider": "url"}, ValueError, "only to servers it starts itself"),
        ({"gravity": 9.8}, TypeError, "unexpected keyword arguments ['gravity']"),
    ],
    ids=["worker", "observation_mode", "max_concurrency", "base_url", "base_urls", "url-provider", "env-kwarg"],
)
def test_arguments_that_cannot_be_honoured_are_refused(kwargs, error, message):
    """AsyncVectorEnv arguments with no meaning here, and any server not started by the call, are refused before anything starts."""
    with pytest.raises(error, match=re.escape(message)):
        RemoteVectorEnv.from_env_fns([lambda: gym.make("CartPole-v1")], **kwargs)


def test_a_factory_that_cannot_be_pickled_is_refused():
    """A factory cloudpickle cannot pickle (it holds a lock) is a TypeError naming it, before any server starts."""
    lock = threading.Lock()

    def holds_a_lock() -> gym.Env:
        with lock:
            return gym.make("CartPole-v1")

    with pytest.raises(TypeError, match=re.escape("env_fns[0] cannot be pickled with cloudpickle")):
        RemoteVectorEnv.from_env_fns([holds_a_lock])
