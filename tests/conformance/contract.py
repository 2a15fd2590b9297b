"""What the contract tests share: the steps they compare, the checks they run and the references they compare with."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector.utils import batch_space

from tests.equivalence import assert_same, play

from .envs import PROBE_ID


def lockstep(remote, local, actions, where: str = "step") -> list[tuple]:
    """Step both with each row of ``actions``; every result equal, dtypes included. Returns the local results."""
    results = []
    for index, action in enumerate(actions):
        expected = local.step(np.array(action))
        assert_same(remote.step(np.array(action)), expected, f"{where} {index}")
        results.append(expected)
    return results


def assert_same_types(actual: Any, expected: Any, where: str) -> None:
    """Nested results of the same Python and numpy types, down to each element of an object array
    (a final observation Gymnasium hands back as the env's ``int`` must not come as ``np.int64``)."""
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        for key in expected:
            assert_same_types(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (tuple, list)) or (isinstance(expected, np.ndarray) and expected.dtype == object):
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same_types(a, e, f"{where}[{index}]")


def random_actions(steps: int, seed: int = 0, num_envs: int = 3) -> np.ndarray:
    """``steps`` rows of seeded random probe actions, one per sub-env."""
    return np.random.default_rng(seed).integers(0, 3, (steps, num_envs))


def assert_spaces_batched(envs, local) -> None:
    """single_* spaces are a sub-env's; observation_space and action_space are them batched, as Gymnasium batches them."""
    assert envs.num_envs == local.num_envs
    assert envs.single_observation_space == local.single_observation_space
    assert envs.single_action_space == local.single_action_space
    assert envs.observation_space == batch_space(local.single_observation_space, local.num_envs)
    assert envs.action_space == batch_space(local.single_action_space, local.num_envs)


def assert_batched_values(envs) -> None:
    """Observations in the batched space, float64 rewards and bool flags of shape (num_envs,), infos a dict."""
    observations, infos = envs.reset(seed=1)
    assert envs.observation_space.contains(observations)
    assert isinstance(infos, dict)
    observations, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    assert envs.observation_space.contains(observations)
    for array, dtype in ((rewards, np.float64), (terminations, np.bool_), (truncations, np.bool_)):
        assert isinstance(array, np.ndarray) and array.dtype == dtype and array.shape == (envs.num_envs,)
    assert isinstance(infos, dict)


def gym_check(env: gym.Env) -> None:
    """gymnasium.utils.env_checker.check_env: spaces, reset and step types, seeding and determinism."""
    check_env(env.unwrapped, skip_render_check=True)


def sb3_check(env: gym.Env) -> None:
    """stable_baselines3.common.env_checker.check_env, warnings on (the suite makes them errors).
    Not for Tuple observations: SB3's checker warns that SB3 takes none (its own envs' too)."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    sb3_check_env(env.unwrapped, warn=True)


def assert_episodes_equal(env: gym.Env, local: gym.Env) -> int:
    """Seeded episodes with random actions, across terminations and the time limit: the same
    observations (by value), rewards and flags (by value and type); returns the episode ends."""
    remote_steps, local_steps = play(env, 3, 40, 5), play(local, 3, 40, 5)
    assert len(remote_steps) == len(local_steps)
    ends = 0
    for (obs, *rest), (expected, *expected_rest) in zip(remote_steps, local_steps):
        assert env.observation_space.contains(obs)
        assert rest == expected_rest
        assert all(type(value) is type(want) for value, want in zip(rest, expected_rest))
        np.testing.assert_equal(obs, expected)
        ends += bool(rest[1] or rest[2])
    return ends


SB3_ENVS = 3


def dummy(env_id: str = PROBE_ID, render_mode: str | None = None) -> Any:
    """SB3's own DummyVecEnv of the same envs: what every SB3 path must equal."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda: gym.make(env_id, render_mode=render_mode)] * SB3_ENVS)


def assert_equal_steps(venv, reference, steps: int, seed: int = 0) -> int:
    """seed, reset, then random actions: the same observations, rewards, dones and infos; returns the dones."""
    assert venv.seed(seed) == reference.seed(seed)
    np.testing.assert_equal(venv.reset(), reference.reset())
    np.testing.assert_equal(venv.reset_infos, reference.reset_infos)
    rng = np.random.default_rng(seed)
    ends = 0
    for _ in range(steps):
        actions = rng.integers(0, 3, SB3_ENVS)
        observations, rewards, dones, infos = venv.step(actions)
        expected = reference.step(actions)
        np.testing.assert_equal(observations, expected[0])
        assert rewards.dtype == expected[1].dtype and dones.dtype == expected[2].dtype
        np.testing.assert_equal((rewards, dones, infos), expected[1:])
        np.testing.assert_equal(venv.reset_infos, reference.reset_infos)
        ends += int(dones.sum())
    return ends


def assert_shm_refused_before_connecting(make, env_id: str, connects: type, monkeypatch, closing) -> None:
    """``make()`` (a path with ``transport="shm"``) raises the shm refusal's ValueError for ``env_id``'s
    spaces, naming the space and the transports that carry the env, before ``connects.connect`` runs."""

    def no_connection(opened: Any) -> Any:
        raise AssertionError(f"{opened!r} connected before refusing the env")

    monkeypatch.setattr(connects, "connect", no_connection)
    space = closing(gym.make(env_id)).observation_space
    said = f"transport='shm' cannot be served: the observation space {space} does not batch into one array of numbers"
    with pytest.raises(ValueError, match=re.escape(said)) as refused:
        closing(make())
    assert str(refused.value).endswith("'auto' or 'ws' carries this env")
