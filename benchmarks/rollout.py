"""Timing helpers the provider benchmarks share: time to a reset vector env, and env-steps/s.

Imported by the benchmark scripts, which run from the repository root as
``.venv/bin/python benchmarks/<name>.py`` (their folder is then on ``sys.path``).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the openenv/... ids)

__all__ = ["WARM_UP_STEPS", "steps_per_second", "time_ready"]

WARM_UP_STEPS = 20


def time_ready(num_envs: int, **kwargs: object) -> tuple[float, gym.vector.VectorEnv]:
    """Seconds until ``make_vec("openenv/CartPole-v1", num_envs, **kwargs)`` has reset, and the env
    (closed here if the reset fails)."""
    started = time.perf_counter()
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=num_envs, **kwargs)
    try:
        envs.reset(seed=0)
    except BaseException:
        envs.close()
        raise
    return time.perf_counter() - started, envs


def steps_per_second(envs: gym.vector.VectorEnv, steps: int) -> float:
    """Env-steps/s over ``steps`` vector steps of seeded random CartPole actions, after a warm-up."""
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, envs.num_envs) for _ in range(steps + WARM_UP_STEPS)]
    for action in actions[:WARM_UP_STEPS]:
        envs.step(action)
    started = time.perf_counter()
    for action in actions[WARM_UP_STEPS:]:
        envs.step(action)
    return envs.num_envs * steps / (time.perf_counter() - started)
