"""from_env_fns, as AsyncVectorEnv: infos, SameStep's final observations and call values arrive as the
sub-envs gave them (the binary codec packs them), and actions reach the caller's own envs unchecked."""

from __future__ import annotations

import time
import warnings
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from openenv_gym.errors import RemoteError
from openenv_gym.vector import RemoteVectorEnv
from tests.utils import UNIT, own_server_pids, wait_until


def counting_factories(count: int) -> list:
    """Factories of an env defined here (shipped by value): Discrete observations as plain ints,
    infos holding arrays and numpy scalars, an action space narrower than what ``step`` handles."""

    class Counting(gym.Env):
        metadata: ClassVar[dict] = {"render_modes": ["rgb_array"]}

        def __init__(self, index: int) -> None:
            self.index = index
            self.render_mode = "rgb_array"
            self.observation_space = spaces.Discrete(4)
            self.action_space = spaces.Discrete(4)  # step also takes 4, as Gymnasium's test env does

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.position = 0
            return 0, {"pair": np.array([self.index, 0])}

        def step(self, action):
            self.position = min(int(action), 3)
            info = {"pair": np.array([self.index, self.position]), "count": np.int32(self.position)}
            return self.position, 0.0, self.position >= 2, False, info

        def render(self) -> np.ndarray:
            return np.full((2, 2, 3), self.position, dtype=np.uint8)

    return [lambda i=i: Counting(i) for i in range(count)]


@pytest.fixture(autouse=True)
def no_server_left_behind():
    yield
    assert wait_until(lambda: not own_server_pids(), 10 * UNIT), f"servers left: {own_server_pids()}"


def both(mode: AutoresetMode = AutoresetMode.NEXT_STEP) -> tuple[Any, SyncVectorEnv]:
    env_fns = counting_factories(2)
    return RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode=mode, servers=1), SyncVectorEnv(
        env_fns, autoreset_mode=mode
    )


def test_infos_and_final_observations_equal_sync_vector_envs_types_and_all():
    remote, local = both(AutoresetMode.SAME_STEP)
    try:
        assert data_equivalence(remote.reset(seed=0), local.reset(seed=0))
        for actions in ([1, 1], [2, 1], [0, 3]):
            got, expected = remote.step(np.array(actions)), local.step(np.array(actions))
            assert data_equivalence(got, expected), (actions, got, expected)
        assert expected[4]["pair"].shape == (2, 2)  # a 2-D array of the sub-envs' arrays
        assert type(expected[4]["final_obs"][1]) is int  # what the env returned
    finally:
        remote.close()
        local.close()


def test_call_values_are_the_sub_envs_own():
    remote, local = both()
    try:
        remote.reset(seed=0)
        local.reset(seed=0)
        assert data_equivalence(remote.call("render"), local.call("render"))
        assert data_equivalence(remote.get_attr("index"), local.get_attr("index"))
    finally:
        remote.close()
        local.close()


def test_an_action_outside_the_space_reaches_the_callers_env_as_with_async_vector_env():
    remote, local = both()
    try:
        remote.reset(seed=0)
        local.reset(seed=0)
        assert data_equivalence(remote.step(np.array([4, 1])), local.step(np.array([4, 1])))
    finally:
        remote.close()
        local.close()


def sleeping_factories(count: int) -> list:
    """Envs that sleep for their action, as Gymnasium's SlowEnv, and tell the dtype of what they got."""

    class Sleeping(gym.Env):
        def __init__(self) -> None:
            self.observation_space = spaces.Discrete(2)
            self.action_space = spaces.Box(0.0, 1.0, (), np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return 0, {}

        def step(self, action):
            time.sleep(action)  # takes a number, not a 0-d array
            return 0, 0.0, False, False, {"dtype": np.asarray(action).dtype.str}

    return [Sleeping for _ in range(count)]


def test_actions_reach_the_callers_envs_with_the_callers_dtype():
    env_fns = sleeping_factories(2)
    remote, local = RemoteVectorEnv.from_env_fns(env_fns, servers=1), SyncVectorEnv(env_fns)
    try:
        remote.reset(seed=0)
        local.reset(seed=0)
        actions = np.array([0.0, 0.001])  # float64, as the caller made them
        got, expected = remote.step(actions)[4]["dtype"], local.step(actions)[4]["dtype"]
        assert got.tolist() == expected.tolist() == ["<f8", "<f8"]
    finally:
        remote.close()
        local.close()


def test_the_json_codec_carries_the_callers_actions_as_their_items():
    envs = RemoteVectorEnv.from_env_fns(counting_factories(2), codec="json", servers=1)
    try:
        envs.reset(seed=0)
        assert envs.step(np.array([1, 4]))[0].tolist() == [1, 3]
    finally:
        envs.close()


class Refusal(Exception):
    """An exception class of the caller's own, with two arguments."""


def failing_factories(count: int) -> list:
    class Failing(gym.Env):
        def __init__(self) -> None:
            self.observation_space = spaces.Discrete(2)
            self.action_space = spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            if seed == 1:
                raise ValueError("Error in reset")
            return 0, {}

        def step(self, action):
            if action == 1:
                raise Refusal("Error in step", action)
            return 0, 0.0, False, False, {}

    return [Failing for _ in range(count)]


def test_a_sub_envs_exception_is_raised_as_it_was_with_the_remote_traceback_as_its_cause():
    envs = RemoteVectorEnv.from_env_fns(failing_factories(2), servers=1)
    try:
        envs.reset(seed=[0, 0])
        with warnings.catch_warnings(), pytest.raises(ValueError, match="Error in reset") as caught:
            warnings.simplefilter("ignore")  # AsyncVectorEnv's log of it (the test below)
            envs.reset(seed=[0, 1])
        assert isinstance(caught.value.__cause__, RemoteError)
        assert "in reset\nValueError: Error in reset" in caught.value.__cause__.details["traceback"]
        assert "raised by sub-env 1 on its server" in caught.value.__notes__[0]
        envs.reset(seed=[0, 0])
        with warnings.catch_warnings(), pytest.raises(Refusal) as refused:
            warnings.simplefilter("ignore")
            envs.step(np.array([0, 1]))
        assert refused.value.args == ("Error in step", 1)
    finally:
        envs.close()


def test_a_sub_envs_exception_is_logged_as_async_vector_env_logs_a_workers():
    envs = RemoteVectorEnv.from_env_fns(failing_factories(2), servers=1)
    try:
        envs.reset(seed=[0, 0])
        with warnings.catch_warnings(record=True) as caught, pytest.raises(ValueError):
            warnings.simplefilter("always")
            envs.reset(seed=[1, 0])
    finally:
        envs.close()
    messages = [str(warning.message) for warning in caught]
    assert len(messages) == 3, messages
    assert "Received the following error from Worker-0 - Shutting it down" in messages[0]
    assert "ValueError: Error in reset" in messages[1]
    assert messages[2] == "\x1b[31mERROR: Raising the last exception back to the main process.\x1b[0m"
