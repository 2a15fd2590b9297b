"""Observations other than one array of numbers on the single-env paths: Dict and Tuple, and spaces
of varying size and choice (Sequence, Graph, OneOf).

The paths that carry every space (``gym.make`` over the WebSocket, the async env) hold them to the
env contract: Gymnasium's (and Stable-Baselines3's) checkers, episodes equal to ``gym.make``'s
here, and the wrappers that take a Dict. Shared memory carries arrays of numbers only: the path of
``transport="shm"`` refuses such an env as it is made, with a ``ValueError`` that says so and names
the transports that carry it, before any connection is attempted (``transport="auto"`` takes the
WebSocket for it).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from openenv_gym.client import EnvClient

from . import single_wrapper_cases
from .contract import assert_episodes_equal, assert_shm_refused_before_connecting, gym_check, sb3_check
from .envs import DICT_ID, GRAPH_ID, ONE_OF_ID, SEQUENCE_ID, TUPLE_ID

COMPOSITE = {"Dict": DICT_ID, "Tuple": TUPLE_ID}
DYNAMIC = {"Sequence": SEQUENCE_ID, "Graph": GRAPH_ID, "OneOf": ONE_OF_ID}
NOT_ARRAYS = {**COMPOSITE, **DYNAMIC}


@pytest.mark.parametrize("env_id", COMPOSITE.values(), ids=COMPOSITE.keys())
def test_gymnasiums_env_checker_passes_on_composite_observations(any_space_single_path, servers, closing, env_id):
    gym_check(closing(any_space_single_path(servers, env_id)))


def test_stable_baselines3s_env_checker_passes_on_dict_observations(any_space_single_path, servers, closing):
    sb3_check(closing(any_space_single_path(servers, DICT_ID)))


@pytest.mark.parametrize("env_id", COMPOSITE.values(), ids=COMPOSITE.keys())
def test_composite_episodes_equal_gym_makes(any_space_single_path, servers, closing, env_id):
    env = closing(any_space_single_path(servers, env_id))
    assert assert_episodes_equal(env, closing(gym.make(env_id))) >= 5


@pytest.mark.parametrize("name", sorted(single_wrapper_cases.OVER_DICT))
def test_a_wrapper_of_dict_observations(any_space_single_path, servers, closing, name, tmp_path):
    entry = single_wrapper_cases.OVER_DICT[name]
    single_wrapper_cases.assert_wrapped_equal(any_space_single_path, servers, closing, entry, tmp_path)


@pytest.mark.parametrize("env_id", DYNAMIC.values(), ids=DYNAMIC.keys())
def test_dynamic_spaces_pass_gymnasiums_checker_and_equal_gym_make(any_space_single_path, servers, closing, env_id):
    env = closing(any_space_single_path(servers, env_id))
    gym_check(env)
    assert assert_episodes_equal(env, closing(gym.make(env_id))) >= 5


@pytest.mark.parametrize("env_id", NOT_ARRAYS.values(), ids=NOT_ARRAYS.keys())
def test_shared_memory_refuses_other_spaces_before_connecting(
    arrays_only_single_path, servers, closing, env_id, monkeypatch
):
    """A ValueError naming the space and the transports that carry the env; no session is opened."""
    servers.url(env_id)  # the server runs: only the env's session must not be tried
    assert_shm_refused_before_connecting(
        lambda: arrays_only_single_path(servers, env_id), env_id, EnvClient, monkeypatch, closing
    )
