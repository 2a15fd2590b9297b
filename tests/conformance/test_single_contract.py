"""The Env contract on every single-env path (``gym.make`` over the WebSocket and over shared memory,
and the async env): Gymnasium's and Stable-Baselines3's env checkers, results equal to ``gym.make``
of the same env locally, seeding and close, the spec's time limit, and render."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError
from gymnasium.utils.env_checker import check_env

from tests.equivalence import assert_same_trajectory, play

from .contract import assert_episodes_equal, assert_same_types, gym_check, sb3_check
from .envs import PROBE_ID, TIME_LIMIT


def test_gymnasiums_env_checker_passes(single_path, servers, closing):
    """Gymnasium's env checker on the Box probe."""
    gym_check(closing(single_path(servers)))


def test_stable_baselines3s_env_checker_passes(single_path, servers, closing):
    """SB3's env checker on the Box probe."""
    sb3_check(closing(single_path(servers)))


def test_episodes_equal_gym_makes(single_path, servers, closing):
    """The Box probe's episodes equal gym.make's here, observation dtypes included."""
    env = closing(single_path(servers))
    local = closing(gym.make(PROBE_ID))
    assert assert_same_trajectory(play(env, 3, 40, 5), play(local, 3, 40, 5)) >= 5
    assert assert_episodes_equal(env, local) >= 5


def test_reset_seeds_the_envs_own_generator(single_path, servers, closing):
    """reset(seed=s) seeds env.np_random, as gymnasium.Env.reset does: the wrappers that draw from
    it (StickyAction, AddWhiteNoise, ObstructView) repeat themselves under the same seed."""
    env = closing(single_path(servers))
    env.reset(seed=9)
    first = env.np_random.random(4)
    env.reset(seed=9)
    np.testing.assert_array_equal(env.np_random.random(4), first)


def test_the_same_seed_gives_the_same_episode(single_path, servers, closing):
    """reset(seed=s) twice: the same first observation and info; another seed, another."""
    env = closing(single_path(servers))
    first, info = env.reset(seed=4)
    again, info_again = env.reset(seed=4)
    np.testing.assert_array_equal(first, again)
    assert info == info_again
    other, _ = env.reset(seed=5)
    assert not np.array_equal(first, other)


def test_closing_twice_is_harmless_and_a_closed_env_refuses_calls(single_path, servers):
    """close() is idempotent; reset and step on a closed env raise ClosedEnvironmentError."""
    env = single_path(servers)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(ClosedEnvironmentError):
        env.unwrapped.reset(seed=0)
    with pytest.raises(ClosedEnvironmentError):
        env.unwrapped.step(0)


def test_infos_equal_gym_makes(single_path, servers, closing):
    """Every reset's and step's info as gym.make's here, by value and type (a float stays a float)."""
    env = closing(single_path(servers))
    local = closing(gym.make(PROBE_ID))
    for each in (env, local):
        each.action_space.seed(6)
    infos: list[list] = [[], []]
    for each, seen in zip((env, local), infos):
        seen.append(each.reset(seed=8)[1])
        for _ in range(20):
            _, _, terminated, truncated, info = each.step(each.action_space.sample())
            seen.append(info)
            if terminated or truncated:
                seen.append(each.reset()[1])
    assert infos[0] == infos[1]
    assert_same_types(infos[0], infos[1], "infos")


def test_the_spec_holds_the_servers_time_limit(single_path, servers, closing):
    """The spec's max_episode_steps is the time limit the server applies, as gym.make's TimeLimit states it."""
    env = closing(single_path(servers))
    assert env.spec is not None and env.spec.max_episode_steps == TIME_LIMIT


def test_gymnasiums_env_checker_passes_its_render_check(single_path, servers, closing):
    """check_env's render checks, on an env made with render_mode="rgb_array"."""
    env = closing(single_path(servers, render_mode="rgb_array"))
    check_env(env.unwrapped)


def test_render_gives_the_envs_frame(single_path, servers, closing):
    """render_mode="rgb_array": render() gives the env's frame, as gym.make's does."""
    env = closing(single_path(servers, render_mode="rgb_array"))
    local = closing(gym.make(PROBE_ID, render_mode="rgb_array"))
    assert env.render_mode == "rgb_array"
    for each in (env, local):
        each.reset(seed=0)
        each.step(1)
    frame, expected = env.render(), local.render()
    assert frame.dtype == expected.dtype
    np.testing.assert_array_equal(frame, expected)
