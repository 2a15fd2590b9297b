"""Stable-Baselines3's VecEnv contract on every SB3 path, held to SB3's own DummyVecEnv of the same envs:
reset and step (dones, terminal_observation, TimeLimit.truncated), seed, Dict and Tuple
observations, env_is_wrapped, render and SB3's VecEnv wrappers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from .contract import SB3_ENVS, assert_equal_steps, dummy
from .envs import DICT_ID, PROBE_ID, TUPLE_ID


@pytest.mark.parametrize("env_id", [PROBE_ID, DICT_ID, TUPLE_ID], ids=["Box", "Dict", "Tuple"])
def test_steps_equal_dummy_vec_envs(sb3_path, servers, closing, env_id):
    """Observations (Dict and Tuple ones as SB3 batches them), float32 rewards, dones and each
    sub-env's info, terminal_observation and TimeLimit.truncated included, as DummyVecEnv's."""
    venv = closing(sb3_path(servers, env_id, SB3_ENVS))
    reference = closing(dummy(env_id))
    assert venv.observation_space == reference.observation_space
    assert venv.action_space == reference.action_space
    assert assert_equal_steps(venv, reference, 30) >= 5


def test_render_tiles_the_sub_envs_frames(sb3_path, servers, closing):
    """render_mode="rgb_array": get_images() and render() as DummyVecEnv's."""
    venv = closing(sb3_path(servers, PROBE_ID, SB3_ENVS, render_mode="rgb_array"))
    reference = closing(dummy(render_mode="rgb_array"))
    assert venv.render_mode == reference.render_mode == "rgb_array"
    for each in (venv, reference):
        each.seed(0)
        each.reset()
        each.step(np.array([1, 2, 0]))
    np.testing.assert_equal(venv.get_images(), reference.get_images())
    np.testing.assert_equal(venv.render(), reference.render())


SB3_WRAPPERS = ["VecNormalize", "VecFrameStack", "VecMonitor", "VecCheckNan", "VecExtractDictObs"]


@pytest.mark.parametrize("wrapper", SB3_WRAPPERS)
def test_sb3s_vec_env_wrappers_give_what_they_give_over_dummy_vec_env(sb3_path, servers, closing, wrapper):
    """SB3's VecEnv wrappers over the path and over DummyVecEnv (VecExtractDictObs over the Dict probe): the same steps."""
    from stable_baselines3.common import vec_env

    wraps = {
        "VecNormalize": lambda venv: vec_env.VecNormalize(venv),
        "VecFrameStack": lambda venv: vec_env.VecFrameStack(venv, n_stack=3),
        "VecMonitor": lambda venv: vec_env.VecMonitor(venv),
        "VecCheckNan": lambda venv: vec_env.VecCheckNan(venv, raise_exception=True),
        "VecExtractDictObs": lambda venv: vec_env.VecExtractDictObs(venv, "position"),
    }
    env_id = DICT_ID if wrapper == "VecExtractDictObs" else PROBE_ID
    venv = closing(wraps[wrapper](sb3_path(servers, env_id, SB3_ENVS)))
    reference = closing(wraps[wrapper](dummy(env_id)))
    venv.seed(0)
    reference.seed(0)
    np.testing.assert_equal(venv.reset(), reference.reset())
    rng = np.random.default_rng(0)
    for _ in range(20):
        actions = rng.integers(0, 3, SB3_ENVS)
        observations, rewards, dones, infos = venv.step(actions)
        expected = reference.step(actions)
        for info in (*infos, *expected[3]):  # VecMonitor's episode time is the clock's
            info.get("episode", {}).pop("t", None)
        np.testing.assert_equal((observations, rewards, dones, infos), expected)


def test_env_is_wrapped_sees_the_sub_envs_wrappers(sb3_path, servers, closing):
    """env_is_wrapped(TimeLimit) is True for sub-envs gym.make wrapped in a time limit, as in DummyVecEnv."""
    venv = closing(sb3_path(servers, PROBE_ID, SB3_ENVS))
    reference = closing(dummy())
    for wrapper in (gym.wrappers.TimeLimit, gym.wrappers.RecordEpisodeStatistics):
        assert venv.env_is_wrapped(wrapper) == reference.env_is_wrapped(wrapper)
    assert venv.env_is_wrapped(gym.wrappers.TimeLimit, indices=[2]) == [True]
