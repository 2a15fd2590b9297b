"""The faces of openenv_gym.face: actions to the wire, frames to Gymnasium results, in one place each."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.env import ServerSpaces
from openenv_gym.errors import InvalidActionError
from openenv_gym.face import PublishedSpaces, WireFace, step_result
from openenv_gym.protocol import ObservationFrame


def test_step_result_reads_a_null_reward_as_zero_and_flags_as_python_bools():
    """reward null is 0.0, a numpy reward a float, done/truncated Python bools."""
    result = step_result(ObservationFrame({}, None, np.bool_(True), False, {"k": 1}), "obs")
    assert result == ("obs", 0.0, True, False, {"k": 1})
    assert [type(value) for value in result[1:4]] == [float, bool, bool]
    assert step_result(ObservationFrame({}, np.float32(2.5)), 1, {"own": True}) == (1, 2.5, False, False, {"own": True})


def test_published_spaces_convert_both_ways_and_refuse_actions_outside_the_space():
    """A published face sends {"action": ...} and refuses an out-of-space action before sending."""
    face = PublishedSpaces(spaces.Discrete(3), spaces.Box(0, 1, (2,), np.float32))
    assert isinstance(face, ServerSpaces) and face.published and face.unmapped == {}
    assert face.to_wire(2) == {"action": 2}
    assert face.to_wire({"action": 1}) == {"action": 1}
    with pytest.raises(InvalidActionError):
        face.to_wire(7)
    observation, reward, terminated, truncated, info = face.step_result(
        ObservationFrame({"observation": [0.5, 0.25]}, 1.0, True)
    )
    assert observation.dtype == np.float32 and observation.tolist() == [0.5, 0.25]
    assert (reward, terminated, truncated, info) == (1.0, True, False, {})
    assert face.tools == [] and face.tool_list_request() is None


def test_wire_face_passes_wire_objects_through():
    """The raw face of the vector env's batched paths converts nothing."""
    face = WireFace()
    frame = ObservationFrame({"observation": [1, 2]}, None, False, True, {"x": 1})
    assert face.to_wire({"action": 1}) == {"action": 1}
    assert face.reset_result(frame) == ({"observation": [1, 2]}, {"x": 1})
    assert face.step_result(frame) == ({"observation": [1, 2]}, 0.0, False, True, {"x": 1})


def test_a_plain_env_does_not_load_the_tool_face():
    """import openenv_gym.env loads no tools module: the tool face loads when a tool env is made."""
    code = "import sys, openenv_gym.env; print(sorted(m for m in sys.modules if m.startswith('openenv_gym') and 'tool' in m))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
