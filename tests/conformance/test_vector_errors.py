"""Errors as Gymnasium's vector envs raise them, on every vector path: a sub-env's own exception
reaches the caller as itself (AsyncVectorEnv re-raises its type with its message)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from openenv_gym.errors import RemoteError

from .envs import TROUBLE_ID


def test_a_sub_envs_exception_reaches_the_caller_as_itself(vector_path, servers, closing):
    """A sub-env that raises in step: the caller gets an exception of its type, with its message
    (its cause the server's RemoteError, which holds the remote traceback)."""
    envs = closing(vector_path(servers, TROUBLE_ID))
    envs.reset(seed=0)
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="the probe was told to fail") as raised:
        warnings.simplefilter("ignore")  # from_env_fns logs it first, as AsyncVectorEnv does (a UserWarning)
        envs.step(np.array([0, 2, 0]))
    assert type(raised.value) is RuntimeError
    assert isinstance(raised.value.__cause__, RemoteError)
