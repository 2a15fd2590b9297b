"""The asynchronous half of the VectorEnv API, as Gymnasium's AsyncVectorEnv gives it, on every vector path:
step_async/step_wait and their misuse errors."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

from tests.equivalence import assert_same
from tests.utils import UNIT

from .paths import reference_vector

NUM_ENVS = 3


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
