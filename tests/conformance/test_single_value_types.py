"""Values of the type the env returned, on every single-env path: a Discrete observation is the
Python int ``gym.make``'s env returns (JSON cannot tell it from an ``np.int64``; the face decodes
it by space, as the vector paths' final observations are: ``face.as_env_returns``), and so are the
Discrete values inside a Dict or Tuple observation."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tests.equivalence import play

from .contract import assert_same_types
from .envs import DICT_ID, DISCRETE_ID, TUPLE_ID


def assert_played_alike(env: gym.Env, local: gym.Env) -> None:
    """The same seeded episodes, each observation of the local env's types (and values)."""
    remote_steps, local_steps = play(env, 3, 40, 5), play(local, 3, 40, 5)
    assert len(remote_steps) == len(local_steps)
    for index, (got, expected) in enumerate(zip(remote_steps, local_steps)):
        assert_same_types(got[0], expected[0], f"step {index}")
        np.testing.assert_equal(got[0], expected[0])


def test_discrete_observations_are_gym_makes_python_ints(single_path, servers, closing):
    env = closing(single_path(servers, DISCRETE_ID))
    assert type(env.reset(seed=5)[0]) is int
    assert_played_alike(env, closing(gym.make(DISCRETE_ID)))


@pytest.mark.parametrize("env_id", [DICT_ID, TUPLE_ID], ids=["Dict", "Tuple"])
def test_discrete_values_in_dict_and_tuple_observations_are_gym_makes_types(
    any_space_single_path, servers, closing, env_id
):
    env = closing(any_space_single_path(servers, env_id))
    assert_played_alike(env, closing(gym.make(env_id)))
