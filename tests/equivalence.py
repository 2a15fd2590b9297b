"""Comparisons of remote envs against local ones: checkers' warnings, trajectories, vector results in lockstep."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

__all__ = [
    "assert_lockstep",
    "assert_same",
    "assert_same_trajectory",
    "checker_warnings",
    "gym_check",
    "play",
    "sb3_check",
]


def checker_warnings(checker, env) -> set[str]:
    """Run ``checker`` on ``env`` and return the messages of the warnings it raised (it must not fail)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checker(env)
    return {str(w.message) for w in caught}


def gym_check(env):
    """Gymnasium's env checker, without the render check (remote envs render nothing)."""
    check_env(env, skip_render_check=True)


def sb3_check(env):
    """Stable-Baselines3's env checker, warnings on."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    sb3_check_env(env, warn=True)


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


def assert_same(actual, expected, where: str) -> None:
    """Deep equality for vector results: arrays by value and dtype, dicts by keys, objects recursively."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), f"{where}: {actual!r}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{index}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), f"{where}: keys {actual} != {expected}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual)}"
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, f"{where}: {actual!r} != {expected!r}"
        if expected.dtype == object:
            for index, (a, e) in enumerate(zip(actual, expected)):
                assert_same(a, e, f"{where}[{index}]")
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=where)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_lockstep(remote, local, steps: int, rng: np.random.Generator, after_ends=None) -> int:
    """Step both vector envs with the same random CartPole actions, asserting identical results at
    every step; return the number of episode ends. ``after_ends(ended, step)`` runs after each step in
    which a sub-env ended (a masked reset in Disabled mode, say)."""
    ends = 0
    for step in range(steps):
        actions = rng.integers(0, 2, local.num_envs)
        expected = local.step(actions)
        assert_same(remote.step(actions), expected, f"step {step}")
        ended = expected[2] | expected[3]
        ends += int(ended.sum())
        if after_ends is not None and ended.any():
            after_ends(ended, step)
    return ends
