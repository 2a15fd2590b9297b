"""The VectorEnv contract on every vector path, held to Gymnasium's own SyncVectorEnv of the same envs:
spaces and batched spaces, reset and step results with their dtypes, seeding, the three autoreset
modes with their final observations and infos, infos batched with masks, close, and a scalar
action's TypeError."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode

from tests.equivalence import assert_same

from .contract import assert_batched_values, assert_same_types, assert_spaces_batched, random_actions
from .envs import LIST_INFO_ID, PROBE_ID, SUM_LIMIT
from .paths import reference_vector

NUM_ENVS = 3
MODES = list(AutoresetMode)


def test_spaces_are_the_sub_envs_batched(vector_path, servers, closing):
    """The Box probe's spaces, single and batched, as SyncVectorEnv's."""
    assert_spaces_batched(closing(vector_path(servers)), closing(reference_vector()))


def test_reset_and_step_give_batched_values_of_gymnasiums_types(vector_path, servers, closing):
    """The Box probe's reset and step results, of Gymnasium's types and shapes."""
    assert_batched_values(closing(vector_path(servers)))


@pytest.mark.parametrize("mode", MODES, ids=[mode.value for mode in MODES])
@pytest.mark.parametrize("env_id", [PROBE_ID, LIST_INFO_ID], ids=["probe", "list info"])
def test_results_equal_sync_vector_envs_through_many_episode_ends(vector_path, servers, closing, env_id, mode):
    """Seeded resets, random actions, episodes ending by termination and time limit: every
    observation, reward, flag and info (final_obs, final_info and the masks included; a list-valued
    info as Gymnasium batches it), by value and type, as SyncVectorEnv's."""
    envs = closing(vector_path(servers, env_id, autoreset_mode=mode))
    local = closing(reference_vector(env_id, autoreset_mode=mode))
    assert envs.metadata["autoreset_mode"] is mode
    assert_same(envs.reset(seed=5), local.reset(seed=5), "reset")
    ends = 0
    for index, action in enumerate(random_actions(40)):
        expected, got = local.step(action), envs.step(action)
        assert_same(got, expected, f"step {index}")
        assert_same_types(got, expected, f"step {index}")
        ended = expected[2] | expected[3]
        ends += int(ended.sum())
        if mode is AutoresetMode.DISABLED and ended.any():
            options = {"reset_mask": ended}
            assert_same(envs.reset(options=options), local.reset(options=options), f"masked reset {index}")
    assert ends >= 10


def test_a_seed_list_seeds_each_sub_env_and_an_int_seeds_them_in_sequence(vector_path, servers, closing):
    """reset(seed=s) seeds sub-env i with s + i (as [s, s+1, ...]); the same seed gives the same
    observations again; reset() without a seed carries on each sub-env's generator."""
    envs = closing(vector_path(servers))
    local = closing(reference_vector())
    by_int, _ = envs.reset(seed=10)
    by_list, _ = envs.reset(seed=[10, 11, 12])
    np.testing.assert_array_equal(by_int, by_list)
    assert len({row[2] for row in by_int.tolist()}) == NUM_ENVS  # the sub-envs were seeded apart
    assert_same(envs.reset(seed=7), local.reset(seed=7), "seeded")
    assert_same(envs.reset(), local.reset(), "unseeded after seeded")


def test_next_step_autoreset_resets_on_the_step_after_the_end(vector_path, servers, closing):
    """NEXT_STEP: the step that ends an episode returns its last observation; the next step
    ignores the action and returns the reset's observation, reward 0, and neither flag."""
    envs = closing(vector_path(servers, autoreset_mode=AutoresetMode.NEXT_STEP))
    envs.reset(seed=0)
    for _ in range(2):
        observations, *_ = envs.step(np.full(NUM_ENVS, 2))
    observations, rewards, terminations, truncations, _ = envs.step(np.full(NUM_ENVS, 2))
    assert terminations.all() and not truncations.any()  # 2 + 2 + 2 >= SUM_LIMIT
    assert (observations[:, 1] >= SUM_LIMIT).all()
    observations, rewards, terminations, truncations, _ = envs.step(np.full(NUM_ENVS, 2))
    assert (observations[:, :2] == 0).all()  # a fresh episode: step 0, sum 0
    assert rewards.tolist() == [0.0] * NUM_ENVS
    assert not terminations.any() and not truncations.any()


def test_same_step_autoreset_gives_final_obs_and_final_info(vector_path, servers, closing):
    """SAME_STEP: the ending step returns the reset's observation, the last one in
    infos["final_obs"] (masked by "_final_obs") and its info in infos["final_info"]."""
    envs = closing(vector_path(servers, autoreset_mode=AutoresetMode.SAME_STEP))
    envs.reset(seed=0)
    envs.step(np.array([2, 2, 0]))
    envs.step(np.array([2, 2, 0]))
    observations, rewards, terminations, _, infos = envs.step(np.array([2, 2, 0]))
    assert terminations.tolist() == [True, True, False]
    assert rewards.tolist() == [2.0, 2.0, 0.0]
    assert infos["_final_obs"].tolist() == [True, True, False]
    assert infos["_final_info"].tolist() == [True, True, False]
    final_obs = infos["final_obs"]
    assert final_obs.dtype == object and final_obs[2] is None
    for index in (0, 1):
        np.testing.assert_array_equal(final_obs[index][:2], [3.0, 6.0])
        assert final_obs[index].dtype == np.float32
        np.testing.assert_array_equal(observations[index][:2], [0.0, 0.0])  # already reset
        assert "offset" in infos and infos["_offset"][index]
    assert infos["final_info"]["steps"].tolist() == [3, 3, 0]
    assert infos["final_info"]["_steps"].tolist() == [True, True, False]


def test_disabled_autoreset_resets_only_the_masked_sub_envs(vector_path, servers, closing):
    """DISABLED: reset(options={"reset_mask": m}) resets the sub-envs m marks and leaves the others as they were."""
    envs = closing(vector_path(servers, autoreset_mode=AutoresetMode.DISABLED))
    envs.reset(seed=0)
    before, *_ = envs.step(np.array([1, 1, 1]))
    observations, infos = envs.reset(options={"reset_mask": np.array([False, True, False])})
    np.testing.assert_array_equal(observations[[0, 2]], before[[0, 2]])
    assert observations[1, 0] == 0.0
    assert infos["_offset"].tolist() == [False, True, False]


def test_infos_batch_with_masks(vector_path, servers, closing):
    """An info key becomes an array over the sub-envs with a "_key" mask of who gave it; a key
    some sub-envs lack is False in their mask, and the array holds the dtype's zero there."""
    envs = closing(vector_path(servers, num_envs=NUM_ENVS))
    envs.reset(seed=0)
    _, _, _, _, infos = envs.step(np.array([0, 0, 0]))
    assert infos["steps"].tolist() == [1, 1, 1] and infos["steps"].dtype == np.int64
    assert infos["_steps"].tolist() == [True, True, True] and infos["_steps"].dtype == np.bool_
    assert "even" not in infos
    _, _, _, _, infos = envs.step(np.array([0, 0, 0]))
    assert infos["even"].tolist() == [True, True, True] and infos["_even"].all()
    # Sub-env 0 ends (NEXT_STEP), so its next step is a reset: it gives no "steps" and no "even".
    envs.reset(seed=0)
    for _ in range(3):
        _, _, terminations, _, _ = envs.step(np.array([2, 0, 0]))
    assert terminations.tolist() == [True, False, False]
    _, _, _, _, infos = envs.step(np.array([0, 0, 0]))
    assert infos["_steps"].tolist() == [False, True, True]
    assert infos["steps"].tolist() == [0, 4, 4]
    assert infos["_even"].tolist() == [False, True, True]


def test_closing_twice_is_harmless_and_a_closed_env_refuses_calls(vector_path, servers):
    """close() is idempotent and sets closed; reset and step afterwards raise ClosedEnvironmentError."""
    envs = vector_path(servers)
    envs.reset(seed=0)
    envs.close()
    envs.close()
    assert envs.closed
    with pytest.raises(ClosedEnvironmentError):
        envs.reset()
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.zeros(NUM_ENVS, np.int64))


def test_a_scalar_action_is_a_type_error(vector_path, servers, closing):
    """A vector env's action is a batch: one scalar is a TypeError, as in Gymnasium's vector envs."""
    envs = closing(vector_path(servers))
    envs.reset(seed=0)
    local = closing(reference_vector())
    local.reset(seed=0)
    with pytest.raises(TypeError):
        local.step(1)
    with pytest.raises(TypeError):
        envs.step(1)
