"""Values of the type the env returned on every SB3 path: each sub-env's info, terminal_observation
and reset_infos hold what DummyVecEnv hands on (a Python int or float stays one, though Gymnasium's
vector infos batch it into an int64 or float64 array)."""

from __future__ import annotations

import pytest

from .contract import SB3_ENVS, assert_same_types, dummy, random_actions
from .envs import DICT_ID, PROBE_ID


@pytest.mark.parametrize("env_id", [PROBE_ID, DICT_ID], ids=["Box", "Dict"])
def test_sb3_infos_hold_what_the_sub_envs_returned(sb3_path, servers, closing, env_id):
    venv = closing(sb3_path(servers, env_id, SB3_ENVS))
    reference = closing(dummy(env_id))
    venv.seed(0)
    reference.seed(0)
    venv.reset()
    reference.reset()
    assert_same_types(venv.reset_infos, reference.reset_infos, "reset_infos")
    for index, actions in enumerate(random_actions(20, num_envs=SB3_ENVS)):
        got, expected = venv.step(actions), reference.step(actions)
        assert_same_types(got[3], expected[3], f"step {index} infos")
        assert_same_types(venv.reset_infos, reference.reset_infos, f"step {index} reset_infos")
