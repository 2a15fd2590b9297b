"""A /ws?session_id= connection plays the env of OpenEnv's HTTP MCP session of that id, as OpenEnv
0.10's server lets its production-mode MCPToolClient do: one env for the WebSocket's reset and state
and the HTTP tool calls, one episode end for both, no second slot, closed by openenv/session/close
(after the socket goes, if it is attached)."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.server.test_http_mcp import rpc
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, running_server, wait_until


def attach(url: str, session_id: str):
    return connect(url.replace("http://", "ws://", 1) + f"/ws?session_id={session_id}")


def frame(socket, kind: str, data: dict | None = None) -> dict:
    socket.send(json.dumps({"type": kind, **({"data": data} if data is not None else {})}))
    return json.loads(socket.recv(timeout=30 * UNIT))


def call(url: str, session_id: str, name: str, **arguments) -> dict:
    return rpc(url, "tools/call", {"name": name, "arguments": arguments, "session_id": session_id})


def test_the_websocket_and_the_http_calls_play_one_env_and_one_episode():
    with running_server(ToolboxEnvironment) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        env = server._mcp._sessions[session_id].env
        with attach(server.url, session_id) as socket:
            reset = frame(socket, "reset", {"episode_id": "shared-episode"})
            assert reset["data"]["observation"]["prompt"] == "Add 2 and 3, then submit the sum."
            assert server.active_sessions == 1  # the HTTP session's slot, no second one
            assert frame(socket, "state")["data"]["episode_id"] == "shared-episode"
            assert call(server.url, session_id, "add", a=2, b=3)["result"]["data"] == 5
            assert call(server.url, session_id, "submit", answer=5)["result"]["data"] == "correct"
            # Ended over HTTP: ended on the WebSocket too, until its reset starts the next episode for both.
            ended = frame(socket, "step", {"type": "call_tool", "tool_name": "add", "arguments": {"a": 1}})
            assert ended["data"]["code"] == "EPISODE_ENDED"
            assert "the episode has ended" in call(server.url, session_id, "add", a=1)["error"]["message"]
            frame(socket, "reset")
            assert call(server.url, session_id, "add", a=1)["result"]["data"] == 1
            stepped = frame(socket, "step", {"type": "call_tool", "tool_name": "submit", "arguments": {"answer": 5}})
            assert (stepped["data"]["reward"], stepped["data"]["done"]) == (1.0, True)
            assert "the episode has ended" in call(server.url, session_id, "add", a=1)["error"]["message"]
        # The socket went; the HTTP session and its env live on until it is closed.
        assert server._mcp.open_sessions == 1 and not env.release.is_set()
        assert rpc(server.url, "openenv/session/close", {"session_id": session_id})["result"]["closed"] is True
        assert env.release.is_set() and server.active_sessions == 0


def test_a_close_asked_while_attached_waits_for_the_socket():
    with running_server(ToolboxEnvironment) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        env = server._mcp._sessions[session_id].env
        with attach(server.url, session_id) as socket:
            frame(socket, "reset")
            closing = rpc(server.url, "openenv/session/close", {"session_id": session_id})["result"]
            assert closing == {"session_id": session_id, "closed": False, "closing": True}
            assert frame(socket, "state")["type"] == "state"  # still served until it goes
        assert wait_until(lambda: server._mcp.open_sessions == 0 and server.active_sessions == 0, 10 * UNIT)
        assert env.release.is_set()


@pytest.mark.parametrize("second", [True, False])
def test_an_unknown_or_taken_session_is_refused(second):
    with running_server(ToolboxEnvironment) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        with attach(server.url, session_id) as first:
            frame(first, "reset")
            with attach(server.url, session_id if second else "nope") as refused:
                error = json.loads(refused.recv(timeout=30 * UNIT))
                with pytest.raises(ConnectionClosed):
                    refused.recv(timeout=30 * UNIT)
            expected = (
                f"Session {session_id} already has an attached WebSocket" if second else "Unknown session_id: nope"
            )
            assert (error["type"], error["data"]["code"], error["data"]["message"]) == (
                "error",
                "SESSION_ERROR",
                expected,
            )
            assert frame(first, "state")["type"] == "state"  # the first is left alone
