"""MCP's JSON-RPC over HTTP (POST /mcp): answered as a stock openenv-core server answers it, with
OpenEnv's sessions (create, calls by session_id, close, the idle timeout) within the server's
session limit; and OpenEnv's own production-mode client on our Echo, CodingTools and Git servers."""

from __future__ import annotations

import json

import pytest
from openenv.core.mcp_client import MCPToolClient  # a test dependency: openenv-gym[test]

from openenv_gym.providers import ProcessProvider
from tests.server.test_http_api import request
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, openenv_core_servers, run_async, running_server, wait_until


def rpc(url: str, method: str, params: dict | None = None, request_id: int | None = 1) -> dict:
    body = {"jsonrpc": "2.0", "method": method, "id": request_id, **({"params": params} if params is not None else {})}
    status, headers, answer = request(url, "POST", "/mcp", json.dumps(body), {"Content-Type": "application/json"})
    assert (status, headers["content-type"]) == (200, "application/json")
    return answer


def raw(url: str, body: str) -> dict:
    status, _, answer = request(url, "POST", "/mcp", body, {"Content-Type": "application/json"})
    assert status == 200
    return answer


@pytest.fixture(scope="module")
def urls():
    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as ours, openenv_core_servers(("mcp",)) as theirs:
        yield {"ours": ours, "theirs": theirs["mcp"]}


def test_a_stateless_call_gets_what_openenv_cores_server_answers(urls):
    """The same id, content, structured content, data and error flag (OpenEnv's keys; ours add MCP's camelCase)."""
    call = {"name": "echo_with_length", "arguments": {"message": "Test"}}
    ours, theirs = rpc(urls["ours"], "tools/call", call, 7), rpc(urls["theirs"], "tools/call", call, 7)
    assert ours["id"] == theirs["id"] == 7
    for key in ("content", "structured_content", "data", "is_error"):
        assert ours["result"][key] == theirs["result"][key], key
    assert (
        ours["result"]["isError"] is False
        and ours["result"]["structuredContent"] == theirs["result"]["structured_content"]
    )


def test_the_tool_lists_agree_on_the_shared_tools(urls):
    ours = {tool["name"]: tool for tool in rpc(urls["ours"], "tools/list")["result"]["tools"]}
    theirs = {tool["name"]: tool for tool in rpc(urls["theirs"], "tools/list")["result"]["tools"]}
    for name in ("echo_message", "echo_with_length"):
        assert ours[name]["description"] == theirs[name]["description"]
        assert ours[name]["input_schema"]["properties"] == theirs[name]["input_schema"]["properties"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("not json", -32700),
        ('[{"jsonrpc": "2.0", "method": "tools/list", "id": 1}]', -32700),  # batches: neither serves them
        ("{}", -32600),
        ('{"jsonrpc": "1.0", "method": "tools/list", "id": 1}', -32600),
        ('{"jsonrpc": "2.0", "method": "tools/list", "params": [], "id": 1}', -32600),
        ('{"jsonrpc": "2.0", "method": "tools/list", "id": 1, "extra": 1}', -32600),
        ('{"jsonrpc": "2.0", "method": "foo/bar", "id": 10}', -32601),
        ('{"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": "nope"}, "id": 12}', -32602),
        ('{"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": "nope"}, "id": 3}', -32602),
        ('{"jsonrpc": "2.0", "method": "openenv/session/close", "params": {}, "id": 3}', -32602),
    ],
)
def test_a_bad_request_gets_the_same_error_code(urls, body, code):
    ours, theirs = raw(urls["ours"], body), raw(urls["theirs"], body)
    assert ours["error"]["code"] == theirs["error"]["code"] == code
    assert ours["id"] == theirs["id"] and "data" in ours["error"]
    if code in (-32700, -32601, -32602):
        assert ours["error"]["message"] == theirs["error"]["message"]


def test_a_session_keeps_one_env_from_create_to_close(urls):
    for side in ("ours", "theirs"):
        session_id = rpc(urls[side], "openenv/session/create")["result"]["session_id"]
        answer = rpc(
            urls[side], "tools/call", {"name": "echo_message", "arguments": {"message": "x"}, "session_id": session_id}
        )
        assert answer["result"]["data"] == "x"
        assert rpc(urls[side], "openenv/session/close", {"session_id": session_id})["result"] == {
            "session_id": session_id,
            "closed": True,
        }
        gone = rpc(urls[side], "tools/list", {"session_id": session_id})
        assert gone["error"] == {"code": -32602, "message": f"Unknown session_id: {session_id}", "data": None}


def test_a_session_starts_with_the_task_and_ends_with_the_episode():
    """Our extension: create resets the env and returns its observation; a call after the end is refused."""
    with running_server(ToolboxEnvironment) as server:
        created = rpc(server.url, "openenv/session/create", {"seed": 3})["result"]
        assert created["observation"] == {"prompt": "Add 2 and 3, then submit the sum."}
        session_id = created["session_id"]
        assert (
            rpc(server.url, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "session_id": session_id})[
                "result"
            ]["data"]
            == 5
        )
        submitted = rpc(
            server.url, "tools/call", {"name": "submit", "arguments": {"answer": 5}, "session_id": session_id}
        )
        assert submitted["result"]["data"] == "correct"
        after = rpc(server.url, "tools/call", {"name": "add", "arguments": {"a": 1}, "session_id": session_id})
        assert after["error"]["code"] == -32600 and "the episode has ended" in after["error"]["message"]


def test_sessions_share_the_servers_limit_and_give_their_slot_back():
    with running_server(ToolboxEnvironment, max_sessions=1) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        refused = rpc(server.url, "openenv/session/create", request_id=99)
        assert refused["error"] == {
            "code": -32000,
            "message": "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
            "data": {"active_sessions": 1, "max_sessions": 1},
        }
        assert rpc(server.url, "tools/list")["error"]["code"] == -32000  # a stateless call needs a slot too
        assert request(server.url, "POST", "/reset")[0] == 503
        rpc(server.url, "openenv/session/close", {"session_id": session_id})
        assert server.active_sessions == 0
        assert "session_id" in rpc(server.url, "openenv/session/create")["result"]


def test_an_idle_session_is_closed_after_the_idle_timeout():
    with running_server(ToolboxEnvironment, idle_timeout=1.0 * UNIT) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        assert server.active_sessions == 1
        assert wait_until(lambda: server.active_sessions == 0, 10 * UNIT)
        gone = rpc(server.url, "tools/list", {"session_id": session_id})
        assert gone["error"]["message"] == f"Unknown session_id: {session_id}"


def test_stopping_the_server_closes_its_sessions_envs():
    with running_server(ToolboxEnvironment) as server:
        session_id = rpc(server.url, "openenv/session/create")["result"]["session_id"]
        env = server._mcp._sessions[session_id].env
    assert env.release.is_set()  # ToolboxEnvironment.close() sets it


def test_an_env_without_tools_says_so():
    from tests.testing_env import CounterEnvironment

    with running_server(CounterEnvironment) as server:
        answer = rpc(server.url, "tools/list")
    assert answer["error"] == {"code": -32603, "message": "Environment does not support MCP", "data": None}


@pytest.mark.parametrize(
    ("target", "call", "expected"),
    [
        ("openenv/Echo-v0", ("echo_with_length", {"message": "abc"}), {"message": "abc", "length": 3}),
        ("openenv/CodingTools-v0", ("run_python", {"code": "print(6 * 7)"}), {"stdout": "42\n", "exit_code": 0}),
        ("openenv/Git-v0", ("run", {"command": "git rev-parse --is-inside-work-tree"}), {"stdout": "true\n"}),
    ],
)
def test_openenvs_production_mode_client_drives_our_servers_over_http(target, call, expected):
    """MCPClientBase with use_production_mode: session/create, tools/list and tools/call by session_id, session/close."""

    async def episode(url: str) -> tuple[list[str], dict]:
        client = MCPToolClient(base_url=url)
        client.use_production_mode = True
        try:
            names = [tool.name for tool in await client.list_tools()]
            return names, await client.call_tool(call[0], **call[1])
        finally:
            await client.close()

    with ProcessProvider(target) as url:
        names, result = run_async(episode(url), 120 * UNIT)
    assert (call[0] in names and "submit" in names) or target == "openenv/Echo-v0"
    assert {key: result[key] for key in expected} == expected
