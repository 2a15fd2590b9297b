"""OpenEnv 0.10's turn-based ``/harness`` socket on a harness env's server: each user message is a turn
the agent works on, its model calls asked of the model API the operator named, and what happens
streamed as events ending with ``turn_complete``.

The agent here is a minimal tool-calling one (:data:`~tests.envs.harness_policy.TOOL_AGENT`, quick to
start), and mini-swe-agent once; the model API answers from a script (``ScriptedModelApi``).
OpenEnv 0.10's own types read the frames in ``tests/test_openenv010_harness.py``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_gym.client import http_get_json
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.envs.harness import AGENTS, HarnessEnvironment
from openenv_gym.envs.harness.agent_run import RUN_MARK
from tests.envs.harness_policy import LIMITS, ONE_TOOL_TURN, SUBMIT, ScriptedModelApi, bash, tool_agent
from tests.utils import UNIT, running_server, wait_until

TIMEOUT = 120 * UNIT


def call(command: str, call_id: str = "call_1") -> dict[str, Any]:
    """A reply that runs ``command`` through the agent's bash tool."""
    arguments = json.dumps({"command": command})
    return {"tool_calls": [{"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}]}


def harness_runs() -> list[int]:
    """The processes of every harness run on this machine (each carries the run's mark)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"{RUN_MARK}=".encode() in (entry / "environ").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def turn(socket: Any, content: str) -> list[dict[str, Any]]:
    """Send one user message; the turn's events, ``turn_complete`` or ``error`` last."""
    socket.send(json.dumps({"type": "message", "content": content}))
    events = []
    while True:
        event = json.loads(socket.recv(timeout=TIMEOUT))
        events.append(event)
        if event["type"] in ("turn_complete", "error"):
            return events


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelApi]:
    api = ScriptedModelApi()
    yield api
    api.close()


@pytest.fixture(scope="module")
def server(model):
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(AGENTS, "tool-agent", tool_agent())
        factory = lambda: HarnessEnvironment(agent="tool-agent", agent_sandbox="none", **LIMITS)  # noqa: E731
        with running_server(factory, max_sessions=1, harness_model_url=model.url, harness_model="served") as server:
            yield server


@pytest.fixture
def socket(server, model):
    model.replies.clear()
    model.requests.clear()
    with connect(server.url.replace("http", "ws") + "/harness", open_timeout=TIMEOUT) as socket:
        started = json.loads(socket.recv(timeout=TIMEOUT))
        assert started["type"] == "session_started" and started["data"]["harness"] == "tool-agent"
        yield socket
    wait_until(lambda: server.active_sessions == 0, timeout=TIMEOUT)


def test_a_turn_streams_each_model_call_and_tool_and_ends_complete(socket, model):
    """The agent's calls go to the operator's model (named as the operator said), and each is told:
    the request, the reply, its tool calls, their results (read from the agent's next call), then
    ``turn_complete`` with the agent's last text, ``done`` since it exited by itself."""
    model.replies[:] = [call("echo hello > greeting.txt && cat greeting.txt"), {"content": "Wrote greeting.txt."}]
    events = turn(socket, "write a greeting")
    assert [event["type"] for event in events] == ONE_TOOL_TURN
    first, response, tool_call, result, second, _, complete = events
    assert first["data"]["messages"] == [{"role": "user", "content": "write a greeting"}]
    assert first["data"]["model"] == "agent-default"  # the agent's; the operator's model is asked
    assert [request["model"] for request in model.requests] == ["served", "served"]
    assert model.requests[0]["tools"][0]["function"]["name"] == "bash" and model.requests[0]["stream"] is False
    assert response["data"]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}
    assert tool_call["data"] == {
        "tool_name": "bash",
        "arguments": {"command": "echo hello > greeting.txt && cat greeting.txt"},
    }
    assert result["data"] == {"tool_name": "bash", "result": "hello\n", "error": None}
    assert second["data"]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "hello\n"}
    assert complete["data"]["response"] == "Wrote greeting.txt."
    assert (complete["data"]["done"], complete["data"]["end"], complete["data"]["calls"]) == (True, "agent_exited", 2)
    assert all(isinstance(event["timestamp"], float) for event in events)


def test_the_next_turn_works_on_what_the_last_one_left(socket, model):
    model.replies[:] = [call("echo kept > note.txt"), {"content": "noted"}]
    assert turn(socket, "take a note")[-1]["type"] == "turn_complete"
    model.replies[:] = [call("cat note.txt"), {"content": "read it"}]
    events = turn(socket, "read the note")
    assert [event["data"]["result"] for event in events if event["type"] == "tool_result"] == ["kept\n"]
    assert events[-1]["data"]["response"] == "read it"


def test_a_frame_that_is_no_turn_gets_a_protocol_error_and_the_socket_stays_usable(socket, model):
    for frame, code in (
        ("not json", "INVALID_JSON"),
        ('{"type": "message"}', "VALIDATION_ERROR"),
        ('{"type": "reset"}', "VALIDATION_ERROR"),
    ):
        socket.send(frame)
        refusal = json.loads(socket.recv(timeout=TIMEOUT))
        assert refusal["type"] == "protocol_error" and refusal["data"]["code"] == code, refusal
    assert model.requests == []  # nothing started
    model.replies[:] = [{"content": "nothing to do"}]
    assert turn(socket, "say hi")[-1]["data"] == {
        "response": "nothing to do",
        "done": True,
        "end": "agent_exited",
        "calls": 1,
        "agent_exit_code": 0,
    }


def test_a_model_api_that_fails_ends_the_session_with_an_error_and_kills_the_agent(socket, model):
    """The model API's 500 is an ``error`` event (not recoverable) that says so; the session closes, and
    the agent, still waiting for its reply, is killed with everything it started."""
    model.replies[:] = [call("sleep 300 > /dev/null 2>&1 &")]  # a process left behind, then no reply scripted: a 500
    events = turn(socket, "start something")
    assert events[-1]["type"] == "error" and events[-1]["data"]["recoverable"] is False
    assert "answered 500" in events[-1]["data"]["message"]
    with pytest.raises(ConnectionClosed):
        socket.recv(timeout=TIMEOUT)
    wait_until(lambda: harness_runs() == [], timeout=TIMEOUT)


def test_a_client_that_leaves_mid_turn_stops_the_agent_and_frees_the_slot(server, model):
    """The client goes while the agent runs a long command (no event to send): the agent and the
    command are killed at once, and the session's slot is free again."""
    model.replies.clear()
    model.requests.clear()
    model.replies[:] = [call("sleep 300")]
    with connect(server.url.replace("http", "ws") + "/harness", open_timeout=TIMEOUT) as socket:
        socket.recv(timeout=TIMEOUT)
        socket.send(json.dumps({"type": "message", "content": "start something"}))
        while json.loads(socket.recv(timeout=TIMEOUT))["type"] != "tool_call":
            pass
    wait_until(lambda: server.active_sessions == 0 and harness_runs() == [], timeout=TIMEOUT)


def test_metadata_names_the_harness_and_a_second_session_past_capacity_is_refused(server, socket):
    assert http_get_json(server.url, "/metadata")["harness"] == "tool-agent"
    with connect(server.url.replace("http", "ws") + "/harness", open_timeout=TIMEOUT) as second:
        refusal = json.loads(second.recv(timeout=TIMEOUT))
        assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED"


@pytest.mark.parametrize(
    ("factory", "options", "reason"),
    [
        (EchoEnvironment, {"harness_model_url": "http://127.0.0.1:9/v1"}, "runs no agent harness"),
        (lambda: HarnessEnvironment(agent_sandbox="none"), {}, "--harness-model-url"),
    ],
)
def test_harness_is_a_404_that_says_why_where_it_is_not_served(factory, options, reason):
    with running_server(factory, **options) as server:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.url + "/harness", timeout=TIMEOUT)
        assert refused.value.code == 404 and reason in json.loads(refused.value.read())["message"]


@pytest.mark.slow
def test_mini_swe_agent_runs_a_turn_in_its_sandbox(model):
    """A real agent, confined: mini-swe-agent's calls, through its own bash tool, told as events."""
    pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")
    model.replies.clear()
    model.requests.clear()
    model.replies[:] = [bash("echo 42 > answer.txt && cat answer.txt"), bash(SUBMIT)]
    with running_server(lambda: HarnessEnvironment(**LIMITS), harness_model_url=model.url) as server:
        with connect(server.url.replace("http", "ws") + "/harness", open_timeout=TIMEOUT) as socket:
            assert json.loads(socket.recv(timeout=TIMEOUT))["data"]["harness"] == "mini-swe-agent"
            events = turn(socket, "Write 42 to answer.txt.")
    kinds = [event["type"] for event in events]
    assert kinds.count("llm_request") == 2 and kinds[-1] == "turn_complete", kinds
    assert "Write 42 to answer.txt." in json.dumps(events[0]["data"]["messages"])
    results = [event["data"]["result"] for event in events if event["type"] == "tool_result"]
    assert "42" in results[0]
    assert events[-1]["data"]["done"] is True and events[-1]["data"]["agent_exit_code"] == 0
