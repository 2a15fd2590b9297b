"""render() over the wire: the server's frames in the session's render mode, recorded as video."""

from __future__ import annotations

import os
import re
import warnings

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym
from openenv_gym.env import RemoteEnv
from openenv_gym.protocol import RenderFrame, parse_server_frame

gym.register_envs(ale_py)


def test_rgb_array_frames_equal_the_local_env_s():
    """Pong's RGB frames come back as uint8 arrays, equal to the local env's, reset and stepped alike."""
    remote = gym.make("openenv/ALE-Pong-v5", render_mode="rgb_array")
    local = gym.make("ALE/Pong-v5", render_mode="rgb_array")
    try:
        assert remote.metadata["render_modes"] == ["rgb_array", "rgb_array_list"]  # "human" is not offered
        assert remote.metadata["render_fps"] == local.metadata["render_fps"]
        remote.reset(seed=3)
        local.reset(seed=3)
        for action in [0, 2, 3, 2, 1] * 4:
            frame = remote.render()
            assert frame.dtype == np.uint8 and frame.shape == (210, 160, 3) and frame.flags.writeable
            np.testing.assert_array_equal(frame, local.render())
            remote.step(action)
            local.step(action)
    finally:
        remote.close()
        local.close()


def test_ansi_and_list_modes_as_gymnasium_defines_them():
    text = RemoteEnv("FrozenLake-v1", render_mode="ansi")
    local = gym.make("FrozenLake-v1", render_mode="ansi")
    try:
        text.reset(seed=0)
        local.reset(seed=0)
        assert isinstance(text.render(), str) and text.render() == local.render()
    finally:
        text.close()
        local.close()
    pong = gym.make("openenv/ALE-Pong-v5", render_mode="rgb_array_list")
    try:
        pong.reset(seed=0)
        pong.step(0)
        pong.step(0)
        frames = pong.render()  # RenderCollection on the server: every frame since the last render
        assert isinstance(frames, list) and len(frames) == 3 and all(f.shape == (210, 160, 3) for f in frames)
    finally:
        pong.close()


def test_the_env_checker_passes_with_its_render_check():
    env = gym.make("openenv/ALE-Pong-v5", render_mode="rgb_array")
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_record_video_records_remote_frames(tmp_path):
    """Gymnasium's RecordVideo writes the remote env's frames to an mp4 (moviepy, its ffmpeg from the wheel)."""
    tmp_path = tmp_path / "videos"
    env = gym.wrappers.RecordVideo(
        gym.make("openenv/ALE-Pong-v5", render_mode="rgb_array"), str(tmp_path), episode_trigger=lambda _: True
    )
    try:
        env.reset(seed=0)
        for _ in range(30):
            env.step(env.action_space.sample())
    finally:
        env.close()
    videos = [name for name in os.listdir(tmp_path) if name.endswith(".mp4")]
    assert videos and os.path.getsize(tmp_path / videos[0]) > 1000


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("human", "render_mode='human' would open a window on the server"),
        ("ansi", "renders ['human', 'rgb_array', 'rgb_array_list']"),
    ],
)
def test_modes_the_server_cannot_give_are_refused(mode, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        gym.make("openenv/ALE-Pong-v5", render_mode=mode)


def test_cartpole_frames_equal_the_local_env_s():
    """Classic control renders with pygame on the server: CartPole's frames equal the local env's, step for step."""
    remote = gym.make("openenv/CartPole-v1", render_mode="rgb_array")
    local = gym.make("CartPole-v1", render_mode="rgb_array")
    try:
        assert remote.metadata["render_fps"] == local.metadata["render_fps"] == 50
        remote.reset(seed=5)
        local.reset(seed=5)
        for action in [0, 1, 1, 0, 1, 1, 1, 0, 0, 1]:
            frame = remote.render()
            assert frame.dtype == np.uint8 and frame.shape == (400, 600, 3) and frame.flags.writeable
            np.testing.assert_array_equal(frame, local.render())
            remote.step(action)
            local.step(action)
        np.testing.assert_array_equal(remote.render(), local.render())
    finally:
        remote.close()
        local.close()


def test_record_video_records_remote_cartpole(tmp_path):
    """RecordVideo writes a remote CartPole episode to an mp4."""
    tmp_path = tmp_path / "videos"  # RecordVideo warns about a folder that exists already
    env = gym.wrappers.RecordVideo(
        gym.make("openenv/CartPole-v1", render_mode="rgb_array"), str(tmp_path), episode_trigger=lambda _: True
    )
    try:
        env.reset(seed=0)
        for _ in range(15):
            env.step(env.action_space.sample())
    finally:
        env.close()
    videos = [name for name in os.listdir(tmp_path) if name.endswith(".mp4")]
    assert videos and os.path.getsize(tmp_path / videos[0]) > 1000


def test_a_server_that_renders_nothing_warns_once_and_render_refuses(monkeypatch):
    """A render_mode on an env without render modes (SB3 passes one) warns once per process; render() raises."""
    monkeypatch.setattr(openenv_gym.env, "_render_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs = [gym.make("openenv/Echo-v0", render_mode="rgb_array") for _ in range(2)]
    try:
        messages = [str(w.message) for w in caught if "render" in str(w.message)]
        assert len(messages) == 1 and "publishes no render modes" in messages[0]
        with pytest.raises(NotImplementedError, match="renders nothing"):
            envs[0].unwrapped.render()
    finally:
        for env in envs:
            env.close()


def test_render_frames_travel_as_json_too():
    """Without the binary subprotocol (an OpenEnv-style client), a frame's array is inline JSON."""
    frame = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    parsed = parse_server_frame(RenderFrame(frame).serialize())
    assert isinstance(parsed, RenderFrame) and parsed.frame.dtype == np.uint8
    np.testing.assert_array_equal(parsed.frame, frame)
    assert parse_server_frame(RenderFrame(["a", None]).serialize()) == RenderFrame(["a", None])
