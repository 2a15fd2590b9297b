"""The asynchronous half of the VectorEnv API, as Gymnasium's AsyncVectorEnv gives it, on every vector path:
step_async/step_wait and reset_async/reset_wait, their misuse errors, step_wait's timeout
(multiprocessing.TimeoutError), and the async calls on a closed env."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

from tests.equivalence import assert_same
from tests.utils import UNIT

from .envs import TROUBLE_ID
from .paths import reference_vector

NUM_ENVS = 3
SHORT = 0.2  # a timeout far shorter than NAP


def test_step_async_then_step_wait_is_a_step(vector_path, servers, closing):
    """step_async(a) then step_wait() gives step(a)'s results."""
    envs = closing(vector_path(servers))
    local = closing(reference_vector())
    assert_same(envs.reset(seed=2), local.reset(seed=2), "reset")
    for index, action in enumerate(np.random.default_rng(1).integers(0, 3, (12, NUM_ENVS))):
        envs.step_async(action)
        assert_same(envs.step_wait(timeout=60 * UNIT), local.step(action), f"step {index}")


def test_step_misuse_raises_gymnasiums_errors(vector_path, servers, closing):
    """step_wait with nothing pending is NoAsyncCallError; a second step_async, or a reset, while a step is pending is AlreadyPendingCallError."""
    envs = closing(vector_path(servers))
    envs.reset(seed=0)
    with pytest.raises(NoAsyncCallError):
        envs.step_wait()
    envs.step_async(np.zeros(NUM_ENVS, np.int64))
    with pytest.raises(AlreadyPendingCallError):
        envs.step_async(np.zeros(NUM_ENVS, np.int64))
    with pytest.raises(AlreadyPendingCallError):
        envs.reset()
    observations, *_ = envs.step_wait(timeout=60 * UNIT)
    assert observations.shape == (NUM_ENVS, 3)


def test_reset_async_then_reset_wait_is_a_reset(vector_path, servers, closing):
    """reset_async(seed=s) then reset_wait() gives reset(seed=s)'s results; reset_wait with nothing pending is NoAsyncCallError."""
    envs = closing(vector_path(servers))
    local = closing(reference_vector())
    with pytest.raises(NoAsyncCallError):
        envs.reset_wait()
    envs.reset_async(seed=4)
    with pytest.raises(AlreadyPendingCallError):
        envs.step_async(np.zeros(NUM_ENVS, np.int64))
    assert_same(envs.reset_wait(timeout=60 * UNIT), local.reset(seed=4), "reset")


def test_step_wait_times_out_with_multiprocessings_timeout_error(vector_path, servers, closing):
    """A step that takes longer than step_wait's timeout raises multiprocessing.TimeoutError."""
    envs = closing(vector_path(servers, TROUBLE_ID))
    envs.reset(seed=0)
    envs.step_async(np.ones(NUM_ENVS, np.int64))  # each sub-env sleeps NAP seconds
    with pytest.raises(multiprocessing.TimeoutError):
        envs.step_wait(timeout=SHORT)
    # As AsyncVectorEnv's, a close while the step is still pending warns, and terminate=True does not wait for it.
    with pytest.warns(UserWarning, match="pending call to `step`"):
        envs.close(terminate=True)


def test_a_closed_env_refuses_the_async_calls(vector_path, servers):
    """After close(), step_async, reset_async and call_async raise ClosedEnvironmentError."""
    envs = vector_path(servers)
    envs.close()
    with pytest.raises(ClosedEnvironmentError):
        envs.step_async(np.zeros(NUM_ENVS, np.int64))
    with pytest.raises(ClosedEnvironmentError):
        envs.reset_async(seed=0)
    with pytest.raises(ClosedEnvironmentError):
        envs.call_async("scaled", 1.0)
