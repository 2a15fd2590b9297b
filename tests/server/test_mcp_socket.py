"""MCP over a WebSocket at /mcp, as OpenEnv 0.10 serves it beside POST /mcp: one session per socket
(made and reset when it opens, its env closed when it closes), JSON-RPC frames answered as POST /mcp
answers them, the server's token and session limit, the idle timeout."""

from __future__ import annotations

import contextlib
import json

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.server.test_http_api import request
from tests.server.test_http_mcp import raw, rpc
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, running_server, wait_until


def socket_url(url: str) -> str:
    return url.replace("http://", "ws://", 1) + "/mcp"


def call(socket, method: str, params: dict | None = None, request_id: int | None = 1) -> dict:
    body = {"jsonrpc": "2.0", "method": method, "id": request_id, **({"params": params} if params is not None else {})}
    socket.send(json.dumps(body))
    return json.loads(socket.recv(timeout=30 * UNIT))


def test_a_socket_is_one_session_from_its_task_to_the_episodes_end_and_its_close():
    with running_server(ToolboxEnvironment) as server:
        with connect(socket_url(server.url)) as socket:
            created = call(socket, "openenv/session/create", request_id=7)
            assert created["id"] == 7 and created["result"]["observation"] == {
                "prompt": "Add 2 and 3, then submit the sum."
            }
            session_id = created["result"]["session_id"]
            assert server._mcp.open_sessions == server.active_sessions == 1
            env = server._mcp._sessions[session_id].env
            assert call(socket, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})["result"]["data"] == 5
            assert call(socket, "tools/call", {"name": "submit", "arguments": {"answer": 5}})["result"]["data"] == (
                "correct"
            )
            after = call(socket, "tools/call", {"name": "add", "arguments": {"a": 1}})
            assert after["error"]["code"] == -32600 and "on a /mcp WebSocket: open another" in after["error"]["message"]
            # The socket's session is also OpenEnv's HTTP session of that id, as 0.10's server shares them.
            assert [
                tool["name"] for tool in rpc(server.url, "tools/list", {"session_id": session_id})["result"]["tools"]
            ]
        assert wait_until(lambda: server.active_sessions == 0 and server._mcp.open_sessions == 0, 10 * UNIT)
        assert env.release.is_set()  # ToolboxEnvironment.close() sets it
        status, headers, _ = request(server.url, "GET", "/mcp")  # plain HTTP on /mcp stays POST /mcp's
        assert (status, headers["allow"]) == (405, "POST")


def test_a_socket_answers_each_frame_as_post_mcp_answers_it():
    bad_frames = [
        "not json",
        "{}",
        '{"jsonrpc": "1.0", "method": "tools/list", "id": 1}',
        '{"jsonrpc": "2.0", "method": "foo/bar", "id": 10}',
        '{"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": "nope"}, "id": 3}',
    ]
    with running_server(ToolboxEnvironment) as server, connect(socket_url(server.url)) as socket:
        for frame in bad_frames:
            socket.send(frame)
            assert json.loads(socket.recv(timeout=30 * UNIT)) == raw(server.url, frame), frame
        assert call(socket, "tools/list", request_id="a") == rpc(server.url, "tools/list", request_id="a")
        session_id = call(socket, "openenv/session/create")["result"]["session_id"]
        refused = call(socket, "openenv/session/close", {"session_id": session_id})
        assert refused["error"]["code"] == -32600 and "close the WebSocket" in refused["error"]["message"]
        assert call(socket, "tools/call", {"name": "add", "arguments": {"a": 1}})["result"]["data"] == 1  # still open


def test_a_socket_needs_the_servers_token():
    with running_server(ToolboxEnvironment, token="s3cret") as server:
        with pytest.raises(InvalidStatus) as refused:
            connect(socket_url(server.url))
        assert refused.value.response.status_code == 401 and server.active_sessions == 0
        with connect(socket_url(server.url), additional_headers={"Authorization": "Bearer s3cret"}) as socket:
            assert call(socket, "tools/call", {"name": "add", "arguments": {"a": 4}})["result"]["data"] == 4


def test_a_socket_past_the_session_limit_is_refused_and_a_closed_one_gives_its_slot_back():
    with running_server(ToolboxEnvironment, max_sessions=1) as server:
        with connect(socket_url(server.url)) as first:
            assert call(first, "tools/list")["result"]["tools"]
            with connect(socket_url(server.url)) as second:
                refusal = json.loads(second.recv(timeout=30 * UNIT))
                with pytest.raises(ConnectionClosed) as closed:
                    second.recv(timeout=30 * UNIT)
            assert refusal == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32000,
                    "message": "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
                    "data": {"active_sessions": 1, "max_sessions": 1},
                },
            }
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert wait_until(lambda: server.active_sessions == 0, 10 * UNIT)
        with connect(socket_url(server.url)) as third:
            assert call(third, "tools/call", {"name": "add", "arguments": {"a": 2}})["result"]["data"] == 2


def test_an_idle_socket_is_closed_and_its_env_released():
    with (
        running_server(ToolboxEnvironment, idle_timeout=1.0 * UNIT) as server,
        connect(socket_url(server.url)) as socket,
    ):
        assert call(socket, "tools/list")["result"]["tools"]
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=30 * UNIT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert closed.value.rcvd.reason == f"session idle for more than {1.0 * UNIT:g} s"
        assert wait_until(lambda: server.active_sessions == 0, 10 * UNIT)


def test_a_socket_answers_as_openenv_cores_does():
    """The same frames to openenv-core 0.3's /mcp WebSocket (a stock MCPEnvironment with the echo
    tools) and to our Echo's: the same ids, error codes and results (0.10's: test_openenv010_clients.py)."""
    from openenv_gym.providers import ProcessProvider
    from tests.utils import openenv_core_servers

    frames = [
        '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo_with_length", "arguments": {"message": "Test"}}, "id": 1}',
        '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope", "arguments": {}}, "id": "two"}',
        '{"jsonrpc": "2.0", "method": "foo/bar", "id": 3}',
        "not json",
    ]

    def answers(url: str) -> list[dict]:
        found = []
        with connect(socket_url(url)) as socket:
            for frame in frames:
                socket.send(frame)
                found.append(json.loads(socket.recv(timeout=60 * UNIT)))
        return found

    with ProcessProvider("openenv/Echo-v0") as echo, openenv_core_servers(("mcp",)) as theirs:
        ours, stock = answers(echo), answers(theirs["mcp"])
    assert [answer["id"] for answer in ours] == [answer["id"] for answer in stock] == [1, "two", 3, None]
    assert [answer.get("error", {}).get("code") for answer in ours] == [
        answer.get("error", {}).get("code") for answer in stock
    ]
    for key in ("content", "structured_content", "data", "is_error"):
        assert ours[0]["result"][key] == stock[0]["result"][key], key


def test_stopping_the_server_closes_an_open_sockets_env():
    with contextlib.ExitStack() as sockets:  # the socket outlives the server
        with running_server(ToolboxEnvironment) as server:
            socket = sockets.enter_context(connect(socket_url(server.url)))
            session_id = call(socket, "openenv/session/create")["result"]["session_id"]
            env = server._mcp._sessions[session_id].env
        # The server stopped with the socket open: it said why, and closed the socket's env.
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=30 * UNIT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert env.release.is_set() and server._mcp.open_sessions == server.active_sessions == 0
