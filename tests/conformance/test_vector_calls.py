"""call/get_attr/set_attr reach the sub-envs on every vector path, and call_async/call_wait as
Gymnasium's AsyncVectorEnv gives them, with call_wait's timeout (multiprocessing.TimeoutError)."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

from openenv_gym import RemoteError
from tests.utils import UNIT

from .envs import NAP, Refused

SHORT = 0.2  # a timeout far shorter than NAP


def test_get_attr_set_attr_and_call_reach_the_sub_envs(vector_path, servers, closing):
    """get_attr and call return a tuple over the sub-envs; set_attr sets one value for all or one
    each; the sub-envs act on what was set."""
    envs = closing(vector_path(servers))
    assert envs.get_attr("scale") == (1.0, 1.0, 1.0)
    assert envs.call("scaled", 3.0) == (3.0, 3.0, 3.0)
    envs.set_attr("scale", 2.0)
    assert envs.get_attr("scale") == (2.0, 2.0, 2.0)
    envs.set_attr("scale", [1.0, 2.0, 3.0])
    assert envs.get_attr("scale") == (1.0, 2.0, 3.0)
    assert envs.call("scaled", 2.0) == (2.0, 4.0, 6.0)
    envs.reset(seed=0)
    _, rewards, *_ = envs.step(np.array([1, 1, 1]))
    assert rewards.tolist() == [1.0, 2.0, 3.0]


def test_call_async_then_call_wait_is_a_call(vector_path, servers, closing):
    """call_async(name, *args) then call_wait() gives call(name, *args); call_wait with nothing pending is NoAsyncCallError."""
    envs = closing(vector_path(servers))
    with pytest.raises(NoAsyncCallError):
        envs.call_wait()
    envs.call_async("scaled", 2.5)
    with pytest.raises(AlreadyPendingCallError):
        envs.call_async("scaled", 2.5)
    assert envs.call_wait(timeout=60 * UNIT) == (2.5, 2.5, 2.5)


def test_call_wait_times_out_with_multiprocessings_timeout_error(vector_path, servers, closing):
    """A call that takes longer than call_wait's timeout raises multiprocessing.TimeoutError."""
    envs = closing(vector_path(servers))
    envs.call_async("nap", NAP)
    with pytest.raises(multiprocessing.TimeoutError):
        envs.call_wait(timeout=SHORT)
    with pytest.warns(UserWarning, match="pending call to `call`"):
        envs.close(terminate=True)


def test_a_sub_envs_error_is_judged_by_its_type_not_its_text(vector_path, servers, closing):
    """An exception whose text names AttributeError is no AttributeError: the error frame's type decides
    (openenv_gym.protocol.raised: its own type where pickles are trusted, else a RemoteError naming it)."""
    envs = closing(vector_path(servers))
    for call in (envs.call, lambda name: (envs.call_async(name), envs.call_wait(timeout=60 * UNIT))):
        with pytest.raises((Refused, RemoteError), match="in the text only") as raised:
            call("refuse")
        assert not isinstance(raised.value, AttributeError)
    with pytest.raises(AttributeError, match="no_such_attribute"):  # a sub-env's own AttributeError is one
        envs.get_attr("no_such_attribute")
