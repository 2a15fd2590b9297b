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

import openenv_gym.rendering
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


@pytest.mark.slow
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
        ("human", "render_mode='human' would open a window on the server; watch the env in a browser at http://"),
        ("ansi", "renders ['rgb_array', 'rgb_array_list']"),
    ],
)
def test_modes_the_server_cannot_give_are_refused(mode, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        gym.make("openenv/ALE-Pong-v5", render_mode=mode)
    if mode == "human":  # the way out: the server's web debug page, or frames as arrays
        assert re.search(r"at http://127\.0\.0\.1:\d+/web instead .*or use render_mode='rgb_array'", str(caught.value))


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
            *_, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:  # a step after the end is refused: a new episode, as a rollout would
                env.reset()
    finally:
        env.close()
    videos = [name for name in os.listdir(tmp_path) if name.endswith(".mp4")]
    assert videos and os.path.getsize(tmp_path / videos[0]) > 1000


# Vector envs --------------------------------------------------------------------------------------


def assert_same_frames(remote, local, steps: int = 6) -> None:
    """Reset both alike, then compare render() before every step and after the last."""
    remote.reset(seed=11)
    local.reset(seed=11)
    actions = np.random.default_rng(0).integers(0, 2, (steps, remote.num_envs))
    for action in [*actions, None]:
        frames, expected = remote.render(), local.render()
        assert type(frames) is type(expected) and len(frames) == len(expected) == remote.num_envs
        for frame, want in zip(frames, expected):
            assert frame.dtype == np.uint8 and frame.shape == (400, 600, 3) and frame.flags.writeable
            np.testing.assert_array_equal(frame, want)
        if action is not None:
            remote.step(action)
            local.step(action)


@pytest.mark.parametrize("servers", [1, 2])
def test_vector_env_of_per_env_sessions_renders_as_sync_vector_env(servers):
    """vector_backend='per_env': a tuple of one frame per sub-env, equal to SyncVectorEnv's, however many servers."""
    remote = gym.make_vec(
        "openenv/CartPole-v1", num_envs=3, vector_backend="per_env", servers=servers, render_mode="rgb_array"
    )
    local = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync", render_mode="rgb_array")
    try:
        assert remote.render_mode == local.render_mode == "rgb_array"
        assert remote.metadata["render_modes"] == ["rgb_array", "rgb_array_list"]  # the remote env's own
        assert remote.metadata["render_fps"] == local.metadata["render_fps"]
        assert_same_frames(remote, local)
    finally:
        remote.close()
        local.close()


class SideBySide:
    """Local vector envs side by side, as a remote vector env's server blocks are (a block is seeded
    with the seed plus the index of its first sub-env)."""

    def __init__(self, envs: list) -> None:
        self.envs = envs
        self.starts = np.cumsum([0] + [env.num_envs for env in envs])
        self.metadata = envs[0].metadata

    def reset(self, seed: int) -> None:
        for start, env in zip(self.starts, self.envs):
            env.reset(seed=seed + int(start))

    def step(self, actions: np.ndarray) -> None:
        for start, env in zip(self.starts, self.envs):
            env.step(actions[start : start + env.num_envs])

    def render(self) -> list:
        return [frame for env in self.envs for frame in env.render()]

    def close(self) -> None:
        for env in self.envs:
            env.close()


@pytest.mark.parametrize("servers", [1, 2])
def test_vector_backend_renders_as_cartpole_vector_env(servers):
    """A server-side CartPoleVectorEnv's frames come back as its render() gives them: a list, equal to the local
    one's (with two servers, to two local vector envs' side by side)."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=servers, render_mode="rgb_array")
    local = SideBySide(
        [gym.make_vec("CartPole-v1", num_envs=4 // servers, render_mode="rgb_array") for _ in range(servers)]
    )
    try:
        assert remote.metadata["vector_backend"] == "gymnasium"
        assert remote.metadata["render_modes"] == local.metadata["render_modes"] == ["rgb_array"]
        assert remote.metadata["render_fps"] == local.metadata["render_fps"]
        assert_same_frames(remote, local)
    finally:
        remote.close()
        local.close()


def test_plain_sessions_and_json_frames_render_too():
    """batched=False (one /ws session per sub-env) and codec='json' (frames inline in JSON: slow, so one) match."""
    for num_envs, steps, kwargs in ((2, 1, {"batched": False}), (1, 0, {"vector_backend": "per_env", "codec": "json"})):
        remote = gym.make_vec("openenv/CartPole-v1", num_envs=num_envs, render_mode="rgb_array", **kwargs)
        local = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync", render_mode="rgb_array")
        try:
            assert_same_frames(remote, local, steps=steps)
        finally:
            remote.close()
            local.close()


def test_a_list_mode_the_vector_env_lacks_steps_one_env_per_sub_env():
    """auto: CartPoleVectorEnv renders no rgb_array_list, so each sub-env renders its own (RenderCollection)."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=2, render_mode="rgb_array_list")
    try:
        assert remote.metadata["vector_backend"] == "per_env"
        assert "renders ['rgb_array'], not 'rgb_array_list'" in remote.metadata["vector_backend_reason"]
        remote.reset(seed=0)
        remote.step(np.array([0, 1]))
        frames = remote.render()
        assert isinstance(frames, tuple) and [len(collected) for collected in frames] == [2, 2]
    finally:
        remote.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"render_mode": "human"},
            "render_mode='human' would open a window on the server; watch the env in a browser at http://127.0.0.1:",
        ),
        ({"render_mode": "ansi"}, "renders ['rgb_array', 'rgb_array_list']"),
        (
            {"render_mode": "rgb_array_list", "vector_backend": "gymnasium"},
            "vector_backend='gymnasium' renders ['rgb_array'], not render_mode='rgb_array_list': use vector_backend='per_env'",
        ),
    ],
)
def test_vector_modes_that_cannot_be_given_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        gym.make_vec("openenv/CartPole-v1", num_envs=2, **kwargs)


def test_a_vector_env_without_a_render_mode_renders_none():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2)
    try:
        assert envs.render_mode is None and envs.metadata["render_modes"] == ["rgb_array"]
        assert envs.render() is None
    finally:
        envs.close()


def test_a_server_that_renders_nothing_warns_once_and_render_refuses(monkeypatch):
    """A render_mode on an env without render modes (SB3 passes one) warns once per process; render() raises."""
    monkeypatch.setattr(openenv_gym.rendering, "_render_warned", False)
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
