"""Harness interop with OpenEnv 0.10 (PyPI ``openenv``): its capture proxy's traces read as the
trajectories ``openenv/Harness-v0`` records (see ``tests/openenv010``)."""

from __future__ import annotations

import copy
import json

import pytest

from envs.harness.environment import SPACES
from openenv_gym.capture_traces import read_capture_trace
from openenv_gym.errors import ModelCallError
from openenv_gym.trajectories import read_trajectories, write_trajectories
from tests.openenv010 import run_peer

TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat f"}'}}


@pytest.fixture(scope="module")
def capture_trace(tmp_path_factory):
    """A trace 0.10's own capture proxy recorded: an agent stand-in's two calls through it to a fake model."""
    path = tmp_path_factory.mktemp("capture") / "trace.json"
    printed = run_peer("capture_trace.py", str(path))
    return json.loads(path.read_text()), printed["session_id"]


def test_a_capture_trace_reads_as_a_harness_trajectory(capture_trace, tmp_path):
    """Each captured call is a step: the request as Harness-v0's observation, the reply as its action."""
    document, session = capture_trace
    (trajectory,) = read_capture_trace(document)
    assert trajectory.env_id == "openenv/Harness-v0" and trajectory.stream == session
    assert trajectory.spaces == SPACES
    first, second, end = trajectory.decoded_observations()
    assert json.loads(first)["messages"] == [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "What does f hold?"},
    ]
    assert [tool["function"]["name"] for tool in json.loads(first)["tools"]] == ["bash"]
    # The second call carries the first reply and the tool's result, as the agent sent them.
    assert json.loads(second)["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42\n"},
    ]
    assert end == ""
    assert [json.loads(action) for action in trajectory.decoded_actions()] == [
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "assistant", "content": "The file holds 42."},
    ]
    assert trajectory.infos[0]["dialect"] == "chat_completions"
    assert trajectory.infos[1]["capture"]["finish_reason"] == "stop"
    assert trajectory.terminated and trajectory.total_reward == 0.0
    # The records keep in our trajectory files like any episode's.
    written = write_trajectories(tmp_path / "captured.jsonl", [trajectory])
    assert list(read_trajectories(written)) == [trajectory]


def test_each_conversation_is_a_trajectory_without_the_discarded_calls(capture_trace):
    """A second root (a title generator beside the agent) is a trajectory of its own; a discarded call is none."""
    document = copy.deepcopy(capture_trace[0])
    first, second = document["turns"]
    retry = {**copy.deepcopy(second), "node_id": "retry", "discarded": True}
    title = {**copy.deepcopy(first), "node_id": "title", "root_id": "title", "request_tools": None}
    title["response_message"] = {"role": "assistant", "content": "Reading f"}
    document["turns"] = [first, retry, title, second]
    agent, titler = read_capture_trace(document)
    assert [info["capture"]["node_id"] for info in agent.infos[:-1]] == [first["node_id"], second["node_id"]]
    assert titler.decoded_actions() == ['{"role":"assistant","content":"Reading f"}']
    assert json.loads(titler.observations[0])["tools"] == []


def test_a_trace_without_messages_or_with_a_bad_reply_is_refused(capture_trace, tmp_path):
    document = copy.deepcopy(capture_trace[0])
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    assert len(read_capture_trace(path)) == 1  # from its file too
    bare = copy.deepcopy(document)
    for turn in bare["turns"]:
        del turn["request_messages"]
    with pytest.raises(ValueError, match="include_messages"):
        read_capture_trace(bare)
    document["turns"][1]["response_message"] = {"role": "user", "content": "?"}
    with pytest.raises(ModelCallError, match="response_message"):
        read_capture_trace(document)
