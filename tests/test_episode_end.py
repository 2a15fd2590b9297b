"""One episode-end rule everywhere: once a step says ``terminated`` or ``truncated``, the next step
(a tool call included) is refused with :class:`EpisodeEndedError` until ``reset``, and is never
sent to the env nor scored; on the wire, by the client (before sending) and by the server
(``EPISODE_ENDED``), so an OpenEnv client that steps on is refused too.

Faces covered here: the protocol's two session machines, ``EnvClient``, a raw OpenEnv-style
WebSocket, MCP ``tools/call`` over ``/ws``, ``RemoteEnv`` (spaces and tool face), ``AsyncRemoteEnv``
with its client-side time limit, and the per-session vector env. The MCP bridge, the vector env's
``Disabled`` mode, Coding-v0 and CodingTools-v0 have their cases beside their other tests.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.client import connect

from openenv_gym import make_async
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import EpisodeEndedError, RemoteEpisodeEndedError
from openenv_gym.protocol import ClientSession, ErrorCode, ErrorFrame, ServerSession, SessionState, StepFrame
from tests.testing_env import CounterEnvironment
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, run_async, running_server

# The counter env publishes JSON schemas only (no spaces): Remote-v0 says so, and that is beside the point here.
SCHEMAS_ONLY = pytest.mark.filterwarnings("ignore:openenv-gym. the server at .* publishes JSON schemas only")
DONE = '{"type":"observation","data":{"observation":{},"reward":1.0,"done":true}}'
TRUNCATED = '{"type":"observation","data":{"observation":{},"reward":1.0,"done":false,"truncated":true}}'
GOING_ON = '{"type":"observation","data":{"observation":{},"reward":1.0,"done":false}}'
SUBMIT = {"type": "call_tool", "tool_name": "submit", "arguments": {"answer": 5}}


# The two session machines (no I/O) -------------------------------------------------------------


@pytest.mark.parametrize("ending", [DONE, TRUNCATED])
def test_the_client_session_refuses_a_step_after_the_end_until_a_reset(ending):
    session = ClientSession()
    session.send_reset()
    session.receive(GOING_ON)
    session.send_step({"amount": 1})
    session.receive(GOING_ON)
    session.send_step({"amount": 1})
    session.receive(ending)
    with pytest.raises(EpisodeEndedError, match=r"episode ended .*reset before stepping again") as raised:
        session.send_step({"amount": 1})
    assert raised.value.code == ErrorCode.EPISODE_ENDED.value
    assert session.pending is None  # nothing went out
    session.send_step({"type": "list_tools"})  # listing tools is no step
    session.receive(GOING_ON)
    session.send_state()  # nor is asking for the state
    session.receive('{"type":"state","data":{"episode_id":"e","step_count":2}}')
    session.send_reset()
    session.receive(GOING_ON)
    session.send_step({"amount": 1})


def test_a_client_side_time_limit_ends_the_episode_too():
    session = ClientSession()
    session.send_reset()
    session.receive(GOING_ON)
    session.end_episode()
    with pytest.raises(EpisodeEndedError):
        session.send_step({})


def test_the_server_session_refuses_a_step_after_the_end_until_a_reset():
    session = ServerSession()
    session.receive('{"type":"reset"}')
    session.reset_succeeded()
    session.stepped(done=False, truncated=False)
    assert session.receive('{"type":"step","data":{"a":1}}') == StepFrame({"a": 1})
    session.stepped(done=False, truncated=True)
    assert session.state is SessionState.ENDED
    refused = session.receive('{"type":"step","data":{"a":1}}')
    assert isinstance(refused, ErrorFrame) and refused.code == ErrorCode.EPISODE_ENDED.value
    assert session.receive('{"type":"step","data":{"type":"list_tools"}}') == StepFrame({"type": "list_tools"})
    session.receive('{"type":"reset"}')
    session.reset_succeeded()
    assert session.receive('{"type":"step","data":{"a":1}}') == StepFrame({"a": 1})


# Over the wire ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def counter():
    with running_server(CounterEnvironment, max_sessions=8) as server:
        yield server


@pytest.fixture(scope="module")
def toolbox():
    with running_server(ToolboxEnvironment, max_sessions=8) as server:
        yield server


def test_the_client_refuses_before_sending_and_the_env_is_not_stepped(counter):
    with EnvClient(counter.url) as client:
        client.reset()
        assert client.step({"amount": 10}).done
        with pytest.raises(EpisodeEndedError):
            client.step({"amount": 10})
        assert client.state()["step_count"] == 1  # the refused step never reached the env
        client.reset()
        assert client.step({"amount": 3}).reward == 3.0


def openenv_ws(server, frames: list[dict]) -> list[dict]:
    """Send ``frames`` on a raw ``/ws`` (as OpenEnv's own client does, with no rule of ours); the replies."""
    replies = []
    with connect(server.url.replace("http", "ws") + "/ws", open_timeout=5 * UNIT) as websocket:
        for frame in frames:
            websocket.send(json.dumps(frame))
            replies.append(json.loads(websocket.recv(timeout=10 * UNIT)))
    return replies


def test_the_server_refuses_a_step_a_client_sends_after_the_end(counter):
    """An OpenEnv client that steps on after ``done`` is refused (EPISODE_ENDED) and paid nothing."""
    step = {"type": "step", "data": {"amount": 10}}
    _reset, done, after, state, _again, stepped = openenv_ws(
        counter, [{"type": "reset", "data": {}}, step, step, {"type": "state"}, {"type": "reset", "data": {}}, step]
    )
    assert done["data"]["done"] is True and done["data"]["reward"] == 10.0
    assert after["type"] == "error" and after["data"]["code"] == "EPISODE_ENDED"
    assert "reward" not in after["data"]
    assert state["data"]["step_count"] == 1
    assert stepped["data"]["reward"] == 10.0 and stepped["data"]["done"] is True


def test_a_tool_call_after_the_end_is_refused_on_both_paths(toolbox):
    """A ``call_tool`` step and an MCP ``tools/call`` after the scoring call ended the episode."""
    mcp_call = {
        "type": "mcp",
        "data": {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "submit", "arguments": {"answer": 5}},
        },
    }
    _reset, scored, step_again, mcp_again, listed = openenv_ws(
        toolbox,
        [
            {"type": "reset", "data": {}},
            {"type": "step", "data": SUBMIT},
            {"type": "step", "data": SUBMIT},
            mcp_call,
            {"type": "step", "data": {"type": "list_tools"}},
        ],
    )
    assert scored["data"]["reward"] == 1.0 and scored["data"]["done"] is True
    assert step_again["data"]["code"] == "EPISODE_ENDED"
    assert "episode ended" in mcp_again["data"]["error"]["message"]
    assert "result" not in mcp_again["data"]
    assert listed["type"] == "observation"  # listing tools is still answered
    # An MCP call that ends the episode ends it for the next MCP call too.
    _, first, second = openenv_ws(
        toolbox, [{"type": "reset", "data": {}}, mcp_call, {**mcp_call, "data": {**mcp_call["data"], "id": 2}}]
    )
    assert first["data"]["result"]["isError"] is False
    assert "episode ended" in second["data"]["error"]["message"]


def test_a_server_refusal_is_the_typed_error_too(counter):
    """A client whose rule was bypassed (its session machine told nothing) gets the server's refusal, typed."""
    with EnvClient(counter.url) as client:
        client.reset()
        client.step({"amount": 10})
        client.kind.session.state = SessionState.READY  # as a client without the rule would be
        with pytest.raises(RemoteEpisodeEndedError) as raised:
            client.step({"amount": 1})
        assert isinstance(raised.value, EpisodeEndedError) and raised.value.code == "EPISODE_ENDED"


@SCHEMAS_ONLY
def test_remote_env_raises_until_reset(counter):
    env = gym.make("openenv/Remote-v0", base_url=counter.url)
    try:
        env.reset()
        _, reward, terminated, truncated, _ = env.step({"amount": 10})
        assert (reward, terminated, truncated) == (10.0, True, False)
        with pytest.raises(EpisodeEndedError):
            env.step({"amount": 10})
        env.reset()
        assert env.step({"amount": 2})[1] == 2.0
    finally:
        env.close()


@SCHEMAS_ONLY
def test_a_step_walks_the_episode_end_rule_once_and_an_invalid_action_after_the_end_is_the_end(counter, monkeypatch):
    """Over the WebSocket, the single and the async env check the episode end once per step (the
    step frame does), and after the end an action outside the space still raises EpisodeEndedError."""
    checks = []
    check_can_step = ClientSession.check_can_step
    monkeypatch.setattr(ClientSession, "check_can_step", lambda self: checks.append(1) or check_can_step(self))
    env = gym.make("openenv/Remote-v0", base_url=counter.url)
    try:
        env.reset()
        env.step({"amount": 1})
        assert len(checks) == 1
        env.step({"amount": 10})
        with pytest.raises(EpisodeEndedError):
            env.step({"amount": "not an amount"})
    finally:
        env.close()

    async def episode():
        env = await make_async("openenv/Remote-v0", base_url=counter.url)
        try:
            await env.reset()
            checks.clear()
            await env.step({"amount": 1})
            assert len(checks) == 1
            await env.step({"amount": 10})
            with pytest.raises(EpisodeEndedError):
                await env.step({"amount": "not an amount"})
        finally:
            await env.aclose()

    run_async(episode(), timeout=60 * UNIT)


def test_the_tool_face_refuses_every_call_after_the_end(toolbox):
    """Even a malformed call, which the face answers itself, is refused once the episode ended."""
    env = gym.make("openenv/Remote-v0", base_url=toolbox.url)
    try:
        env.reset()
        assert env.step('{"name": "submit", "arguments": {"answer": 5}}')[1:3] == (1.0, True)
        for call in ('{"name": "submit", "arguments": {"answer": 5}}', "not a call"):
            with pytest.raises(EpisodeEndedError):
                env.step(call)
        env.reset()
        assert env.step('{"name": "add", "arguments": {"a": 2}}')[0] == "2"
    finally:
        env.close()


@SCHEMAS_ONLY
def test_async_env_refuses_after_its_own_time_limit(counter):
    """The async env's client-side ``max_episode_steps`` truncates, and then refuses, as a server end does."""

    async def episode():
        env = await make_async("openenv/Remote-v0", base_url=counter.url, max_episode_steps=2)
        try:
            await env.reset()
            await env.step({"amount": 1})
            *_, truncated, _ = await env.step({"amount": 1})
            assert truncated
            with pytest.raises(EpisodeEndedError):
                await env.step({"amount": 1})
            await env.reset()
            await env.step({"amount": 1})
        finally:
            await env.aclose()

    run_async(episode(), timeout=60 * UNIT)


@SCHEMAS_ONLY
def test_the_per_session_vector_env_autoresets_and_never_steps_an_ended_episode(counter):
    """Over plain sessions, NextStep's step after an end is its reset (reward 0), never a step of the ended episode."""
    envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=counter.url, batched=False)
    try:
        envs.reset(seed=0)
        actions = {"amount": np.array([10, 1]), "sleep": np.zeros(2), "fail": np.array([0, 0])}
        _, rewards, terminated, _, _ = envs.step(actions)
        assert terminated.tolist() == [True, False]
        _, rewards, terminated, _, _ = envs.step(actions)
        assert rewards.tolist() == [0.0, 1.0] and terminated.tolist() == [False, False]
    finally:
        envs.close()
