"""openenv-gym's numpy CartPole equals SyncVectorEnv of CartPole-v1, bit for bit, in every autoreset mode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_gym.envs.cartpole_vector import CartPoleVectorEnv
from openenv_gym.errors import EpisodeEndedError
from tests.equivalence import assert_same


def sync_cartpoles(num_envs: int, mode: str, **kwargs) -> gym.vector.SyncVectorEnv:
    return gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", **kwargs) for _ in range(num_envs)], autoreset_mode=AutoresetMode(mode)
    )


def mixed_actions(observations: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Half the sub-envs balance the pole (their episodes reach the time limit), half act at random."""
    num_envs = len(observations)
    balancing = (observations[:, 2] + 0.5 * observations[:, 3] > 0).astype(np.int64)
    return np.where(np.arange(num_envs) < num_envs // 2, balancing, rng.integers(0, 2, num_envs))


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_equals_sync_vector_env_of_cartpole(mode):
    """3,000 steps with autoresets, terminations and time limits: every result and info is SyncVectorEnv's."""
    ours, theirs = CartPoleVectorEnv(8, autoreset_mode=mode), sync_cartpoles(8, mode)
    assert ours.metadata["autoreset_mode"] is AutoresetMode(mode)
    assert (ours.single_observation_space, ours.single_action_space) == (
        theirs.single_observation_space,
        theirs.single_action_space,
    )
    observations, _ = ours.reset(seed=11)
    np.testing.assert_array_equal(observations, theirs.reset(seed=11)[0])
    rng = np.random.default_rng(0)
    terminations = truncations = 0
    for step in range(3000):
        actions = mixed_actions(observations, rng)
        result = ours.step(actions)
        assert_same(result, theirs.step(actions), f"step {step}")
        observations = result[0]
        terminations += int(result[2].sum())
        truncations += int(result[3].sum())
    assert terminations > 300 and truncations >= 8  # both kinds of end were compared, many times
    ours.close()
    theirs.close()


def test_disabled_mode_with_masked_resets_equals_sync_vector_env():
    """In Disabled mode the caller resets ended sub-envs with reset_mask, as SyncVectorEnv takes it."""
    ours, theirs = CartPoleVectorEnv(6, autoreset_mode="Disabled"), sync_cartpoles(6, "Disabled")
    ours.reset(seed=3)
    theirs.reset(seed=3)
    rng, ends = np.random.default_rng(1), 0
    for step in range(1500):
        actions = rng.integers(0, 2, 6)
        result = ours.step(actions)
        assert_same(result, theirs.step(actions), f"step {step}")
        ended = result[2] | result[3]
        if ended.any():
            ends += int(ended.sum())
            # A new seed for some of them, as a caller may give; others go on from their own generator.
            seeds = [step if k % 2 else None for k in range(6)]
            assert_same(
                ours.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                theirs.reset(seed=seeds, options={"reset_mask": ended.copy()}),
                f"reset after step {step}",
            )
    assert ends > 100


def test_reset_options_and_sutton_barto_reward_as_cartpole_env():
    """low/high bound the start as CartPoleEnv's options do; the alternative reward is CartPoleEnv's."""
    ours = CartPoleVectorEnv(4, sutton_barto_reward=True)
    theirs = sync_cartpoles(4, "NextStep", sutton_barto_reward=True)
    options = {"low": -0.2, "high": 0.2}
    assert_same(ours.reset(seed=0, options=options), theirs.reset(seed=0, options=options), "reset")
    rng = np.random.default_rng(2)
    rewards = set()
    for step in range(400):
        actions = rng.integers(0, 2, 4)
        result = ours.step(actions)
        assert_same(result, theirs.step(actions), f"step {step}")
        rewards.update(result[1].tolist())
    assert rewards == {0.0, -1.0}


def test_bad_actions_masks_and_seeds_are_clear_errors():
    env = CartPoleVectorEnv(3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(3, dtype=np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="is not in MultiDiscrete"):
        env.step(np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="reset_mask must be 3 bools"):
        env.reset(options={"reset_mask": np.array([1, 0, 1])})
    with pytest.raises(ValueError, match="2 seeds for 3 sub-envs"):
        env.reset(seed=[1, 2])
    disabled = CartPoleVectorEnv(3, max_episode_steps=1, autoreset_mode="Disabled")
    disabled.reset(seed=0)
    assert disabled.step(np.zeros(3, dtype=np.int64))[3].all()
    with pytest.raises(EpisodeEndedError, match="sub-env 0 ended: reset it with reset_mask"):
        disabled.step(np.zeros(3, dtype=np.int64))
    disabled.reset(options={"reset_mask": np.array([True, True, True])})
    disabled.step(np.zeros(3, dtype=np.int64))  # reset: it steps again


def test_served_as_the_openenv_gym_backend_in_every_mode():
    """The server offers it for CartPole ids (v0's shorter time limit kept), and not for envs it does not vectorize."""
    from openenv_gym.server.vector_backends import VectorBackends

    offered, unavailable = VectorBackends("CartPole-v1", -1, {}).describe()
    assert offered["openenv_gym"]["autoreset_modes"] == ["NextStep", "SameStep", "Disabled"]
    assert offered["openenv_gym"]["entry_point"] == "openenv_gym.envs.cartpole_vector:CartPoleVectorEnv"
    host = VectorBackends("CartPole-v0", -1, {}).make("openenv_gym", 2, AutoresetMode.SAME_STEP)
    assert host.env.max_episode_steps == 200 and not host.blocking
    host.close()
    _, unavailable = VectorBackends("MountainCar-v0", -1, {}).describe()
    assert "no vector env of its own" in unavailable["openenv_gym"]
