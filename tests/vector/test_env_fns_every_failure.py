"""from_env_fns, as AsyncVectorEnv: a step before any reset reaches the caller's own envs (they
decide), and when several sub-envs raise, each one's exception is logged as AsyncVectorEnv logs a
worker's and the last is raised."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.vector import RemoteVectorEnv


def stepping_factories(count: int, action_space: spaces.Space | None = None) -> list:
    """Factories of an env defined here (shipped by value) whose step needs no reset, and raises for
    any action but 0, naming the action."""

    class StepsWithoutReset(gym.Env):
        def __init__(self) -> None:
            self.observation_space = spaces.Discrete(4)
            self.action_space = action_space or spaces.Discrete(4)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return 0, {}

        def step(self, action):
            if action >= 1:
                raise ValueError(f"Error in step with {action}")
            return 3, 1.0, False, False, {"stepped": True}

    return [StepsWithoutReset for _ in range(count)]


def test_a_step_before_any_reset_reaches_the_callers_own_envs():
    envs = RemoteVectorEnv.from_env_fns(stepping_factories(2), servers=1)
    try:
        observations, rewards, _, _, infos = envs.step(np.array([0, 0]))
    finally:
        envs.close()
    assert observations.tolist() == [3, 3]
    assert rewards.tolist() == [1.0, 1.0]
    assert infos["stepped"].tolist() == [True, True]


def test_a_python_number_reaches_a_box_env_as_sent():
    """As AsyncVectorEnv hands it on (Gymnasium's test envs take ``0`` for a ``Box((1,))`` action)."""
    envs = RemoteVectorEnv.from_env_fns(stepping_factories(2, spaces.Box(0, 1, (1,))), servers=1)
    try:
        envs.reset(seed=0)
        observations, *_ = envs.step([0, 0])
    finally:
        envs.close()
    assert observations.tolist() == [3, 3]


def test_every_sub_env_that_raises_is_logged_and_the_last_is_raised():
    envs = RemoteVectorEnv.from_env_fns(stepping_factories(3), servers=1)  # one server: one error frame
    try:
        envs.reset(seed=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="Error in step with 2"):
                envs.step(np.array([0, 1, 2]))
        # The sub-env that did not raise stepped too, and the vector env goes on.
        observations, *_ = envs.step(np.array([0, 0, 0]))
        assert observations.tolist() == [3, 3, 3]
    finally:
        envs.close()
    messages = [str(warning.message) for warning in caught]
    assert len(messages) == 5, messages
    for worker, (received, trace) in zip((1, 2), (messages[0:2], messages[2:4])):
        assert received == f"\x1b[31mERROR: Received the following error from Worker-{worker} - Shutting it down\x1b[0m"
        assert re.match(
            rf"\x1b\[31mERROR: Traceback \(most recent call last\):(?s:.)*in step(?s:.)*ValueError: Error in step with {worker}\n",
            trace,
        ), trace
    assert messages[4] == "\x1b[31mERROR: Raising the last exception back to the main process.\x1b[0m"
