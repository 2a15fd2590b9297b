"""Harness interop with OpenEnv 0.10 (PyPI ``openenv``): its capture proxy's traces read as the
trajectories ``openenv/Harness-v0`` records, and its turn-based ``/harness`` frames spoken by our server
(see ``tests/openenv010``)."""

from __future__ import annotations

import copy
import json

import pytest

from envs.harness.environment import SPACES
from openenv_gym.capture_traces import read_capture_trace
from openenv_gym.envs.harness import AGENTS, HarnessEnvironment
from openenv_gym.errors import ModelCallError
from openenv_gym.trajectories import read_trajectories, write_trajectories
from tests.envs.harness_policy import LIMITS, ONE_TOOL_TURN, ScriptedModelApi, tool_agent
from tests.openenv010 import run_peer
from tests.utils import running_server

WRITE = json.dumps({"command": "echo 42 > n.txt"})
READ = json.dumps({"command": "cat n.txt"})
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


def test_openenv_010s_types_read_a_harness_turn_from_our_harness_socket(monkeypatch):
    """OpenEnv 0.10's own frame types (``HarnessClientMessage`` sent, ``HarnessEvent`` and
    ``HarnessProtocolError`` read back) on our ``/harness``: a frame that is no turn is refused and the
    socket stays usable; a turn's events end in ``turn_complete``, the agent's last text its response;
    the next turn works on the files the last one left."""
    monkeypatch.setitem(AGENTS, "tool-agent", tool_agent())
    model = ScriptedModelApi()
    model.replies[:] = [
        {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": WRITE}}]},
        {"content": "Saved."},
        {"tool_calls": [{"id": "c2", "type": "function", "function": {"name": "bash", "arguments": READ}}]},
        {"content": "It says 42."},
    ]
    factory = lambda: HarnessEnvironment(agent="tool-agent", agent_sandbox="none", **LIMITS)  # noqa: E731
    try:
        with running_server(factory, harness_model_url=model.url) as server:
            url = server.url.replace("http", "ws") + "/harness"
            told = run_peer("harness_turns.py", url, json.dumps(["save 42 to n.txt", "what does n.txt say?"]))
    finally:
        model.close()
    assert told["started"]["type"] == "session_started" and told["started"]["data"]["harness"] == "tool-agent"
    assert told["protocol_error"]["code"] == "VALIDATION_ERROR"
    first, second = told["turns"]
    assert first["types"] == ONE_TOOL_TURN and second["types"] == ONE_TOOL_TURN
    assert (first["last"]["response"], first["last"]["done"]) == ("Saved.", True)
    assert second["last"]["response"] == "It says 42."
    assert model.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "c2", "content": "42\n"}
