"""SB3VecEnv: SB3's same-step semantics over a RemoteVectorEnv, checked against SB3's DummyVecEnv."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

import openenv_gym
from openenv_gym.wrappers import SB3VecEnv, make_sb3_vec_env

LIMIT = 20


@pytest.mark.parametrize(("vector_backend", "served_by"), [("auto", "openenv_gym"), ("per_env", "per_env")])
def test_matches_dummy_vec_env(vector_backend, served_by):
    """Observations, rewards, dones, terminal_observation and TimeLimit.truncated match DummyVecEnv, whether
    a server-side vector env (openenv-gym's CartPole, through shared memory) or one env per sub-env serves."""
    remote = make_sb3_vec_env(
        "openenv/CartPole-v1", n_envs=4, monitor=False, max_episode_steps=LIMIT, vector_backend=vector_backend
    )
    local = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=LIMIT) for _ in range(4)])
    try:
        assert remote.venv.metadata["vector_backend"] == served_by
        remote.seed(7)
        local.seed(7)
        np.testing.assert_array_equal(remote.reset(), local.reset())
        rng = np.random.default_rng(1)
        ends = truncated_ends = 0
        for step in range(400):
            actions = rng.integers(0, 2, 4)
            r_obs, r_rew, r_done, r_infos = remote.step(actions)
            l_obs, l_rew, l_done, l_infos = local.step(actions)
            np.testing.assert_array_equal(r_obs, l_obs, err_msg=f"step {step}")
            np.testing.assert_array_equal(r_rew, l_rew)
            assert r_rew.dtype == l_rew.dtype == np.float32
            np.testing.assert_array_equal(r_done, l_done)
            for r_info, l_info in zip(r_infos, l_infos):
                assert r_info.keys() == l_info.keys()
                if "terminal_observation" in l_info:
                    np.testing.assert_array_equal(r_info["terminal_observation"], l_info["terminal_observation"])
                    assert r_info["TimeLimit.truncated"] == l_info["TimeLimit.truncated"]
                    ends += 1
                    truncated_ends += l_info["TimeLimit.truncated"]
        assert ends > 50 and 0 < truncated_ends < ends
    finally:
        remote.close()
        local.close()


def test_needs_same_step_autoreset():
    """A vector env with another autoreset mode is refused, with the fix in the message."""
    venv = gym.make_vec("openenv/CartPole-v1", num_envs=2)
    try:
        with pytest.raises(ValueError, match=re.escape("make it with gym.make_vec(..., autoreset_mode='SameStep')")):
            SB3VecEnv(venv)
    finally:
        venv.close()


def test_text_spaces_need_an_encoding_wrapper():
    """SB3 has no Text space: Echo's text observations are refused with a pointer to the fix."""
    venv = gym.make_vec("openenv/Echo-v0", num_envs=1, autoreset_mode="SameStep")
    try:
        with pytest.raises(TypeError, match="Stable-Baselines3 has no Text space"):
            SB3VecEnv(venv)
    finally:
        venv.close()


@pytest.mark.slow
def test_ppo_learns_remote_cartpole():
    """PPO on 8 remote sub-envs beats a random policy (about 22) by far within 20,000 steps."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy

    venv = make_sb3_vec_env("openenv/CartPole-v1", n_envs=8)
    try:
        venv.seed(0)
        model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, seed=0, verbose=0)
        model.learn(20_000)
        mean_return, _ = evaluate_policy(model, venv, n_eval_episodes=10, deterministic=True)
    finally:
        venv.close()
    assert mean_return > 100


def test_package_root_exports_the_helper():
    """openenv_gym.make_sb3_vec_env is the wrappers' helper, loaded on first use."""
    assert openenv_gym.make_sb3_vec_env is make_sb3_vec_env


def test_vec_video_recorder_records_a_remote_vector_env(tmp_path):
    """SB3's VecVideoRecorder reads render_mode and render_fps, tiles get_images() and writes an mp4."""
    from stable_baselines3.common.vec_env import VecVideoRecorder

    venv = SB3VecEnv(
        gym.make_vec("openenv/CartPole-v1", num_envs=2, autoreset_mode="SameStep", render_mode="rgb_array")
    )
    recorder = VecVideoRecorder(venv, str(tmp_path), record_video_trigger=lambda step: step == 0, video_length=10)
    try:
        assert venv.render_mode == "rgb_array" and recorder.frames_per_sec == 50
        recorder.seed(0)
        recorder.reset()
        images = venv.get_images()
        assert len(images) == 2 and all(image.shape == (400, 600, 3) for image in images)
        for _ in range(12):  # past video_length: the recorder writes its video
            recorder.step(np.array([0, 1]))
    finally:
        recorder.close()
    videos = [path for path in tmp_path.iterdir() if path.suffix == ".mp4"]
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_get_images_without_rgb_array_warns_as_dummy_vec_env_does():
    venv = SB3VecEnv(gym.make_vec("openenv/CartPole-v1", num_envs=2, autoreset_mode="SameStep"))
    try:
        with pytest.warns(UserWarning, match=re.escape("The render mode is None, but this method assumes it is")):
            assert venv.get_images() == [None, None]
    finally:
        venv.close()
