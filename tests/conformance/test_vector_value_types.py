"""Values of the type the env returned: on every vector path, a Discrete env's last observation in
SAME_STEP's final_obs is the Python int it returned, as in SyncVectorEnv's; so are the Discrete
values inside a final Dict or Tuple observation. (The SB3 paths' are in test_sb3_info_types.py.)"""

from __future__ import annotations

import pytest
from gymnasium.vector import AutoresetMode

from tests.equivalence import assert_same

from .contract import assert_same_types, random_actions
from .envs import DICT_ID, DISCRETE_ID, TUPLE_ID
from .paths import reference_vector

MODES = list(AutoresetMode)


@pytest.mark.parametrize("mode", MODES, ids=[mode.value for mode in MODES])
def test_discrete_observations_and_final_observations_equal_sync_vector_envs(vector_path, servers, closing, mode):
    envs = closing(vector_path(servers, DISCRETE_ID, autoreset_mode=mode))
    local = closing(reference_vector(DISCRETE_ID, autoreset_mode=mode))
    assert_same(envs.reset(seed=5), local.reset(seed=5), "reset")
    for index, action in enumerate(random_actions(40)):
        expected, got = local.step(action), envs.step(action)
        assert_same(got, expected, f"step {index}")
        assert_same_types(got, expected, f"step {index}")
        ended = expected[2] | expected[3]
        if mode is AutoresetMode.DISABLED and ended.any():
            options = {"reset_mask": ended}
            assert_same(envs.reset(options=options), local.reset(options=options), f"masked reset {index}")


@pytest.mark.parametrize("env_id", [DICT_ID, TUPLE_ID])
def test_discrete_values_in_dict_and_tuple_final_observations_are_of_sync_vector_envs_types(
    any_space_vector_path, servers, closing, env_id
):
    """SAME_STEP steps of an env whose observations hold Discrete values: the same values, of the
    same types, in the final observations (each sub-env's own, as the env returned it) too."""
    envs = closing(any_space_vector_path(servers, env_id, autoreset_mode=AutoresetMode.SAME_STEP))
    local = closing(reference_vector(env_id, autoreset_mode=AutoresetMode.SAME_STEP))
    expected, got = local.reset(seed=5), envs.reset(seed=5)
    assert_same(got, expected, "reset")
    assert_same_types(got, expected, "reset")
    for index, action in enumerate(random_actions(30)):
        expected, got = local.step(action), envs.step(action)
        assert_same(got, expected, f"step {index}")
        assert_same_types(got, expected, f"step {index}")
