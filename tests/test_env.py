"""RemoteEnv through gym.make: Gymnasium's and SB3's checkers, trajectory equivalence, errors, close."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym
from openenv_gym import RemoteEnv, RemoteError
from tests.utils import pid_alive, wait_until


def checker_warnings(checker, env) -> set[str]:
    """Run ``checker`` on ``env`` and return the messages of the warnings it raised (it must not fail)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checker(env)
    return {str(w.message) for w in caught}


def gym_check(env):
    check_env(env, skip_render_check=True)


def sb3_check(env):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    sb3_check_env(env, warn=True)


@pytest.mark.parametrize("checker", [gym_check, sb3_check], ids=["gymnasium", "sb3"])
@pytest.mark.parametrize(
    "gym_id", ["CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0", "Acrobot-v1", "MountainCar-v0"]
)
def test_checkers_pass_with_no_warning_beyond_the_local_env(checker, gym_id):
    """Gymnasium's and SB3's env checkers pass on remote twins, warning about nothing the local env does not."""
    remote = gym.make(f"openenv/{gym_id}")
    try:
        remote_warnings = checker_warnings(checker, remote.unwrapped)
    finally:
        remote.close()
    local_warnings = checker_warnings(checker, gym.make(gym_id).unwrapped)
    assert remote_warnings <= local_warnings


def test_gymnasium_check_env_on_echo():
    """Gymnasium's env checker passes on the Echo env (Dict of Text spaces) without a single warning."""
    env = gym.make("openenv/Echo-v0")
    try:
        assert checker_warnings(gym_check, env.unwrapped) == set()
    finally:
        env.close()


def play(env: gym.Env, seed: int, steps: int, action_seed: int) -> list[tuple]:
    """A trajectory of (obs, reward, terminated, truncated) with actions from a seeded space."""
    env.action_space.seed(action_seed)
    trajectory = []
    obs, _ = env.reset(seed=seed)
    trajectory.append((obs, None, None, None))
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        trajectory.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            obs, _ = env.reset()  # unseeded: the env's own RNG carries on, locally and remotely
            trajectory.append((obs, None, None, None))
    return trajectory


def assert_same_trajectory(actual: list[tuple], expected: list[tuple]) -> int:
    """Trajectories from :func:`play` are equal exactly (observations by value and dtype); return the episode ends."""
    assert len(actual) == len(expected)
    ends = 0
    for (obs_a, rew_a, term_a, trunc_a), (obs_e, rew_e, term_e, trunc_e) in zip(actual, expected):
        assert obs_a.dtype == obs_e.dtype
        np.testing.assert_array_equal(obs_a, obs_e)
        assert (rew_a, term_a, trunc_a) == (rew_e, term_e, trunc_e)
        ends += bool(term_e or trunc_e)
    return ends


@pytest.mark.parametrize(
    ("gym_id", "kwargs", "steps"),
    [
        ("CartPole-v1", {}, 600),  # many terminations
        ("CartPole-v1", {"max_episode_steps": 15}, 100),  # truncations from the client's TimeLimit
        ("Pendulum-v1", {}, 450),  # truncated at the registered 200 steps
        ("MountainCar-v0", {"max_episode_steps": 40}, 130),
    ],
)
def test_same_trajectory_as_local(gym_id, kwargs, steps):
    """Same seeds and actions give the same observations, rewards and flags as the local env, exactly."""
    local = gym.make(gym_id, **kwargs)
    remote = gym.make(f"openenv/{gym_id}", **kwargs)
    try:
        expected = play(local, seed=42, steps=steps, action_seed=7)
        actual = play(remote, seed=42, steps=steps, action_seed=7)
    finally:
        remote.close()
        local.close()
    assert assert_same_trajectory(actual, expected) >= 2, "the trajectory should cross several episode ends"


def test_types_returned():
    """Rewards are Python float, flags Python bool, info a dict; spaces come from the server."""
    env = gym.make("openenv/CartPole-v1")
    try:
        assert env.observation_space == gym.make("CartPole-v1").observation_space
        assert env.action_space == gym.spaces.Discrete(2)
        obs, info = env.reset(seed=1)
        assert isinstance(info, dict) and obs.dtype == np.float32
        _, reward, terminated, truncated, info = env.step(1)
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    finally:
        env.close()


def test_registered_time_limits():
    """The catalog registers each remote twin with the local env's max_episode_steps."""
    for gym_id, limit in [
        ("CartPole-v1", 500),
        ("MountainCar-v0", 200),
        ("Acrobot-v1", 500),
        ("Pendulum-v1", 200),
        ("MountainCarContinuous-v0", 999),
    ]:
        assert gym.spec(f"openenv/{gym_id}").max_episode_steps == limit
    assert gym.spec("openenv/Echo-v0").max_episode_steps is None


def test_echo_env_roundtrip():
    """Echo returns the message, its length, and 0.1 reward per character."""
    env = gym.make("openenv/Echo-v0")
    try:
        obs, _ = env.reset()
        assert obs == {"echoed_message": "", "message_length": 0}
        obs, reward, terminated, truncated, _ = env.step({"message": "hello"})
        assert obs == {"echoed_message": "hello", "message_length": 5}
        assert reward == pytest.approx(0.5)
        assert not terminated and not truncated
        assert env.unwrapped.state()["step_count"] == 1
    finally:
        env.close()


def test_action_outside_space_is_a_clear_error_and_the_env_lives_on():
    """An out-of-space action raises RemoteError(VALIDATION_ERROR) naming the space; stepping goes on."""
    env = gym.make("openenv/CartPole-v1", disable_env_checker=True)
    try:
        env.reset(seed=0)
        with pytest.raises(RemoteError, match=re.escape("is outside the action space Discrete(2)")) as caught:
            env.step(5)
        assert caught.value.code == "VALIDATION_ERROR"
        assert caught.value.env_id == "CartPole-v1"
        env.step(0)
    finally:
        env.close()


def test_close_is_idempotent_and_stops_the_server():
    """close() twice is fine, and the server process is gone afterwards."""
    env = gym.make("openenv/CartPole-v1")
    pid = env.unwrapped.provider.pid
    assert pid_alive(pid)
    env.close()
    env.close()
    assert wait_until(lambda: not pid_alive(pid), 5)


def test_render_is_refused_clearly():
    """A render_mode is accepted (SB3 passes one) but render() says frames are not forwarded yet."""
    env = RemoteEnv("CartPole-v1", render_mode="rgb_array")
    try:
        assert env.render_mode == "rgb_array"
        with pytest.raises(NotImplementedError, match=re.escape("rendering (render_mode='rgb_array') is not forwarded")):
            env.render()
    finally:
        env.close()


def test_base_url_attaches_to_a_running_server():
    """gym.make(..., base_url=) drives a server someone else started, and leaves it running on close."""
    from openenv_gym.providers import ProcessProvider

    with ProcessProvider("CartPole-v1", max_episode_steps=None) as url:
        env = gym.make("openenv/CartPole-v1", base_url=url.replace("http", "ws"))
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs, gym.make("CartPole-v1").reset(seed=0)[0])
        env.close()
        with openenv_gym.EnvClient(url) as client:  # still serving
            assert client.reset(seed=0).observation["observation"] == obs.tolist()
