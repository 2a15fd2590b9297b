"""SB3's env_method, get_attr, set_attr on every SB3 path (held to DummyVecEnv's); the vector
paths' call/get_attr/set_attr: test_vector_calls.py."""

from __future__ import annotations

import pytest

from openenv_gym import RemoteError

from .contract import SB3_ENVS, assert_equal_steps, dummy
from .envs import PROBE_ID, Refused


def test_env_method_get_attr_and_set_attr_reach_the_sub_envs(sb3_path, servers, closing):
    """env_method, get_attr and set_attr with and without indices, as DummyVecEnv's; a set value changes the rewards."""
    venv = closing(sb3_path(servers, PROBE_ID, SB3_ENVS))
    reference = closing(dummy())
    seen = []
    for each in (venv, reference):
        assert each.get_attr("scale") == [1.0] * SB3_ENVS
        assert each.env_method("scaled", 2.0) == [2.0] * SB3_ENVS
        each.set_attr("scale", 3.0, indices=[1])
        assert each.get_attr("scale") == [1.0, 3.0, 1.0]
        assert each.get_attr("scale", indices=1) == [3.0]
        seen.append(each.env_method("scaled", 2.0, indices=[0, 1]))
    # One known difference: DummyVecEnv sets the attribute on the outermost wrapper, where the env's
    # own method does not see it ([2.0, 2.0]); over remote sub-envs set_attr sets it where it lives,
    # as Gymnasium's set_wrapper_attr does, so the method sees it (docs/vector-envs.md, SB3).
    assert seen == [[2.0, 6.0], [2.0, 2.0]]
    reference.envs[1].unwrapped.scale = 3.0  # where ours set it: the rewards then agree
    assert_equal_steps(venv, reference, 5)


def test_env_methods_error_is_judged_by_its_type_not_its_text(sb3_path, servers, closing):
    """env_method on chosen sub-envs raises a sub-env's exception by its type, never by what its text says."""
    venv = closing(sb3_path(servers, PROBE_ID, SB3_ENVS))
    with pytest.raises((Refused, RemoteError), match="in the text only") as raised:
        venv.env_method("refuse", indices=[1])
    assert not isinstance(raised.value, AttributeError)
    with pytest.raises(AttributeError, match="no_such_method"):
        venv.env_method("no_such_method", indices=[0, 2])
