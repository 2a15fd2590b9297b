"""Observations other than one array of numbers on the vector paths: Dict and Tuple (batched spaces
and values, results equal to Gymnasium's, final observations included, and the wrappers that take a
Dict), and spaces of varying size and choice (Sequence, Graph, OneOf: the spaces, and results equal
to SyncVectorEnv's, which batches them as tuples). (The single-env paths' are in
test_single_spaces.py.)

The paths that carry every space hold them to the contract. Shared memory carries arrays of numbers
only: the server-side vector env over ``transport="shm"`` refuses such an env as it is made, with a
``ValueError`` that says so and names the transports that carry it, before any block connects
(``transport="auto"`` takes the WebSocket for it).
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode

from openenv_gym.client.sync_connection import SyncConnection
from tests.equivalence import assert_same

from . import vector_wrapper_cases
from .contract import assert_batched_values, assert_shm_refused_before_connecting, assert_spaces_batched, random_actions
from .envs import DICT_ID, GRAPH_ID, ONE_OF_ID, SEQUENCE_ID, TUPLE_ID
from .paths import reference_vector

COMPOSITE = {"Dict": DICT_ID, "Tuple": TUPLE_ID}
DYNAMIC = {"Sequence": SEQUENCE_ID, "Graph": GRAPH_ID, "OneOf": ONE_OF_ID}
NOT_ARRAYS = {**COMPOSITE, **DYNAMIC}
MODES = list(AutoresetMode)
DYNAMIC_MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


@pytest.mark.parametrize("env_id", COMPOSITE.values(), ids=COMPOSITE.keys())
def test_composite_spaces_are_the_sub_envs_batched(any_space_vector_path, servers, closing, env_id):
    assert_spaces_batched(closing(any_space_vector_path(servers, env_id)), closing(reference_vector(env_id)))


@pytest.mark.parametrize("env_id", COMPOSITE.values(), ids=COMPOSITE.keys())
def test_composite_values_are_batched(any_space_vector_path, servers, closing, env_id):
    assert_batched_values(closing(any_space_vector_path(servers, env_id)))


@pytest.mark.parametrize("mode", MODES, ids=[mode.value for mode in MODES])
@pytest.mark.parametrize("env_id", COMPOSITE.values(), ids=COMPOSITE.keys())
def test_composite_results_equal_sync_vector_envs(any_space_vector_path, servers, closing, env_id, mode):
    """Every step as SyncVectorEnv's, final_obs by value and type (a Discrete part stays a Python int)."""
    envs = closing(any_space_vector_path(servers, env_id, autoreset_mode=mode))
    local = closing(reference_vector(env_id, autoreset_mode=mode))
    assert_same(envs.reset(seed=5), local.reset(seed=5), "reset")
    for index, action in enumerate(random_actions(30)):
        expected = local.step(action)
        assert_same(envs.step(action), expected, f"step {index}")
        ended = expected[2] | expected[3]
        if mode is AutoresetMode.DISABLED and ended.any():
            options = {"reset_mask": ended}
            assert_same(envs.reset(options=options), local.reset(options=options), f"masked reset {index}")


@pytest.mark.parametrize("name", sorted(vector_wrapper_cases.OVER_DICT))
def test_a_vector_wrapper_of_dict_observations(any_space_vector_path, servers, closing, name, tmp_path):
    entry = vector_wrapper_cases.OVER_DICT[name]
    vector_wrapper_cases.assert_wrapped_equal(any_space_vector_path, servers, closing, entry, tmp_path)


@pytest.mark.parametrize("mode", DYNAMIC_MODES, ids=[mode.value for mode in DYNAMIC_MODES])
@pytest.mark.parametrize("env_id", DYNAMIC.values(), ids=DYNAMIC.keys())
def test_dynamic_spaces_and_results_equal_sync_vector_envs(any_space_vector_path, servers, closing, env_id, mode):
    envs = closing(any_space_vector_path(servers, env_id, autoreset_mode=mode))
    local = closing(reference_vector(env_id, autoreset_mode=mode))
    assert envs.single_observation_space == local.single_observation_space
    assert envs.observation_space == local.observation_space
    assert_same(envs.reset(seed=5), local.reset(seed=5), "reset")
    for index, action in enumerate(random_actions(20)):
        assert_same(envs.step(action), local.step(action), f"step {index}")


@pytest.mark.parametrize("env_id", NOT_ARRAYS.values(), ids=NOT_ARRAYS.keys())
def test_shared_memory_refuses_other_spaces_before_connecting(
    arrays_only_vector_path, servers, closing, env_id, monkeypatch
):
    """A ValueError naming the space and the transports that carry the env; no session is opened."""
    servers.url(env_id)  # the server runs (its /schema is read): only the blocks' sessions must not be tried
    assert_shm_refused_before_connecting(
        lambda: arrays_only_vector_path(servers, env_id), env_id, SyncConnection, monkeypatch, closing
    )


@pytest.mark.parametrize("env_id", NOT_ARRAYS.values(), ids=NOT_ARRAYS.keys())
def test_auto_transport_takes_the_websocket_without_asking(servers, closing, env_id, monkeypatch):
    """``transport="auto"`` keeps such an env's steps to the WebSocket, saying why, and never asks for shared memory."""
    asked = SyncConnection.request

    def no_shm_open(connection: SyncConnection, call: str, *args: object, **kwargs: object) -> object:
        assert call != "shm_open", "the session asked the server for shared memory"
        return asked(connection, call, *args, **kwargs)

    monkeypatch.setattr(SyncConnection, "request", no_shm_open)
    url = servers.url(env_id)
    envs = closing(gym.make_vec("openenv/Remote-v0", num_envs=2, base_urls=[url], vector_backend="gymnasium"))
    envs.reset(seed=1)
    assert envs.metadata["transport"] == "ws"
    assert "does not batch into one array of numbers" in envs.metadata["transport_reason"]
