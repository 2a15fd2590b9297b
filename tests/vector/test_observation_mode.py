"""from_env_fns' ``observation_mode``, read as AsyncVectorEnv reads it: "same", "different", or (batch, single) spaces."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import batch_differing_spaces

import openenv_gym
from openenv_gym.vector import RemoteVectorEnv


def factories(observation_spaces: list[spaces.Space[Any]]) -> list[Any]:
    """One factory per space: an env (shipped by value) observing a sample of it."""

    class Observer(gym.Env):
        action_space = spaces.Discrete(2)

        def __init__(self, space: spaces.Space[Any]) -> None:
            self.observation_space = space

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.observation_space.seed(seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    return [lambda space=space: Observer(space) for space in observation_spaces]


BOXES = [spaces.Box(0.0, float(high), (3,), np.float32) for high in (1, 2, 3)]


def test_different_spaces_of_one_shape_batch_as_gymnasium_batches_them():
    """observation_mode="different": the batch space is batch_differing_spaces of every sub-env's, the single one the first's."""
    envs = RemoteVectorEnv.from_env_fns(factories(BOXES), observation_mode="different", servers=1)
    try:
        assert envs.observation_space == batch_differing_spaces(BOXES)
        assert envs.single_observation_space == BOXES[0]
        observations, _ = envs.reset(seed=0)
        assert observations.shape == (3, 3) and envs.observation_space.contains(observations)
        observations, *_ = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(observations)
    finally:
        envs.close()


def test_a_tuple_of_spaces_is_the_batch_and_the_single_space():
    """observation_mode=(batch, single): the vector env's spaces; the sub-envs' need only share single's shape and dtype."""
    batch, single = spaces.Box(0.0, 3.0, (3, 3), np.float32), spaces.Box(0.0, 3.0, (3,), np.float32)
    envs = RemoteVectorEnv.from_env_fns(factories(BOXES), observation_mode=(batch, single), servers=2)
    try:
        assert envs.observation_space is batch and envs.single_observation_space is single
        assert envs.reset(seed=0)[0].shape == (3, 3)
    finally:
        envs.close()


def test_a_sub_env_of_another_shape_is_refused_with_a_custom_space():
    """A sub-env whose observation space does not share the single space's shape is refused, a RuntimeError."""
    shapes = [*BOXES[:2], spaces.Box(0.0, 1.0, (4,), np.float32)]
    single = spaces.Box(0.0, 1.0, (3,), np.float32)
    with pytest.raises(RuntimeError, match="share a common shape and dtype") as caught:
        RemoteVectorEnv.from_env_fns(factories(shapes), observation_mode=(spaces.Box(0.0, 1.0, (3, 3)), single))
    assert isinstance(caught.value, openenv_gym.SpaceMismatchError) and caught.value.index == 2


def test_same_mode_with_different_spaces_says_to_use_different():
    with pytest.raises(
        RuntimeError, match=re.escape("If this is intentional, use `observation_mode='different'` instead.")
    ):
        RemoteVectorEnv.from_env_fns(factories(BOXES), servers=1)


def test_an_unknown_mode_is_refused_with_gymnasiums_message():
    message = "Invalid `observation_mode`, expected: 'same' or 'different' or tuple of single and batch observation space, actual got invalid"
    with pytest.raises(ValueError, match=re.escape(message)):
        RemoteVectorEnv.from_env_fns(factories(BOXES), observation_mode="invalid")
    with pytest.raises(TypeError, match="Expected both elements of observation_mode to be Spaces"):
        RemoteVectorEnv.from_env_fns(factories(BOXES), observation_mode=(BOXES[0], "single"))
