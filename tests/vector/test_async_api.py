"""The asynchronous half of the VectorEnv API, as AsyncVectorEnv has it: ``reset_async``/``reset_wait``,
``step_async``/``step_wait``, ``call_async``/``call_wait``, their timeouts and errors, on every path."""

from __future__ import annotations

import multiprocessing
import re
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

import openenv_gym  # noqa: F401  (registers openenv/CartPole-v1)
from openenv_gym.vector import RemoteVectorEnv
from tests.utils import UNIT

#: How long a slow sub-env sleeps: far longer than the waits the tests time out.
SLOW = 2.0 * UNIT


def slow_factories(count: int, reset_seconds: float = 0.0) -> list[Any]:
    """Factories of an env (shipped by value) whose reset sleeps ``reset_seconds`` and whose step sleeps its action."""

    class Sleepy(gym.Env):
        observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        action_space = spaces.Box(0.0, 60.0, (1,), np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            time.sleep(reset_seconds)
            return np.zeros(2, np.float32), {}

        def step(self, action):
            time.sleep(float(action[0]))
            return np.zeros(2, np.float32), 1.0, False, False, {}

    return [Sleepy for _ in range(count)]


def cartpoles(count: int) -> list[Any]:
    return [lambda: gym.make("CartPole-v1") for _ in range(count)]


def test_reset_wait_times_out_with_async_vector_envs_error_and_the_reset_stays_pending():
    """reset_wait(timeout=) raises multiprocessing.TimeoutError (and TimeoutError); a later reset_wait reads the results."""
    envs = RemoteVectorEnv.from_env_fns(slow_factories(2, reset_seconds=SLOW), servers=1)
    try:
        envs.reset_async(seed=0)
        with pytest.raises(multiprocessing.TimeoutError, match="The call to `reset_wait` has timed out") as caught:
            envs.reset_wait(timeout=0.05)
        assert isinstance(caught.value, TimeoutError)
        observations, infos = envs.reset_wait()
        assert observations.shape == (2, 2) and infos == {}
    finally:
        envs.close()


def test_step_wait_times_out_with_async_vector_envs_error():
    """step_wait(timeout=) raises multiprocessing.TimeoutError; the step stays pending and completes later."""
    envs = RemoteVectorEnv.from_env_fns(slow_factories(2), servers=1)
    try:
        envs.reset()
        envs.step_async(np.array([[0.0], [SLOW]], dtype=np.float32))
        with pytest.raises(multiprocessing.TimeoutError, match="The call to `step_wait` has timed out"):
            envs.step_wait(timeout=0.05)
        _, rewards, *_ = envs.step_wait()
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()


def test_calls_out_of_order_raise_async_vector_envs_errors():
    """A wait without its async call, an async call while another is pending: AsyncVectorEnv's errors and messages."""
    envs = RemoteVectorEnv.from_env_fns(cartpoles(2), servers=1)
    try:
        for call in ("reset", "step", "call"):
            message = f"Calling `{call}_wait` without any prior call to `{call}_async`."
            with pytest.raises(NoAsyncCallError, match=re.escape(message)):
                getattr(envs, f"{call}_wait")()
        envs.reset_async(seed=0)
        with pytest.raises(
            AlreadyPendingCallError,
            match=re.escape("Calling `step_async` while waiting for a pending call to `reset` to complete"),
        ):
            envs.step_async(envs.action_space.sample())
        envs.reset_wait()
        envs.step_async(envs.action_space.sample())
        with pytest.raises(
            AlreadyPendingCallError,
            match=re.escape("Calling `reset_async` while waiting for a pending call to `step` to complete"),
        ):
            envs.reset_async()
        with pytest.raises(
            AlreadyPendingCallError, match=re.escape("Calling `call_async` while waiting for a pending call to `step`")
        ):
            envs.call_async("gravity")
        with pytest.warns(
            UserWarning, match=re.escape("Calling `close` while waiting for a pending call to `step` to complete.")
        ):
            envs.close(terminate=True)
    finally:
        envs.close()
    assert envs.closed


def test_call_async_and_call_wait():
    """call_async sends to every sub-env; call_wait(timeout=) returns one value per sub-env."""
    envs = RemoteVectorEnv.from_env_fns(cartpoles(3), servers=2)
    try:
        envs.call_async("gravity")
        assert envs.call_wait(timeout=60 * UNIT) == (9.8, 9.8, 9.8)
        assert envs.call("gravity") == (9.8, 9.8, 9.8)
    finally:
        envs.close()


def test_np_random_seed_is_every_sub_envs_and_a_scalar_action_is_a_type_error():
    """np_random_seed is each sub-env's seed (a tuple, as AsyncVectorEnv's); step(0) raises TypeError."""
    envs = RemoteVectorEnv.from_env_fns(cartpoles(2), servers=1)
    try:
        envs.reset(seed=42)
        assert envs.np_random_seed == (42, 43)
        with pytest.raises(TypeError, match="Unable to iterate"):
            envs.step(0)
        envs.step(envs.action_space.sample())  # nothing was left pending
    finally:
        envs.close()


@pytest.mark.parametrize("backend", ["per_env", "gymnasium"])
def test_every_make_vec_path_has_the_async_api(backend):
    """make_vec's per-env and server-side vector backends take the same asynchronous calls."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, vector_backend=backend)
    try:
        assert envs.unwrapped.metadata["vector_backend"] == backend
        with pytest.raises(NoAsyncCallError):
            envs.unwrapped.reset_wait()
        envs.unwrapped.reset_async(seed=0)
        observations, _ = envs.unwrapped.reset_wait(timeout=60 * UNIT)
        assert observations.shape == (2, 4)
        envs.unwrapped.step_async(np.array([0, 1]))
        _, rewards, *_ = envs.unwrapped.step_wait(timeout=60 * UNIT)
        assert rewards.tolist() == [1.0, 1.0]
        with pytest.raises(TypeError, match="Unable to iterate"):
            envs.step(0)
    finally:
        envs.close()
