"""Tests for openenv_gym.protocol.tools and .jsonrpc: tool actions, results, the OpenAI face, JSON-RPC (no sockets)."""

from __future__ import annotations

import asyncio
import json

import pytest

from openenv_gym.errors import ProtocolError, ToolCallError
from openenv_gym.protocol import (
    ErrorCode,
    McpFrame,
    ServerSession,
    StepFrame,
    jsonrpc,
    parse_client_frame,
    parse_server_frame,
)
from openenv_gym.protocol.tools import (
    CallToolRequest,
    ListToolsRequest,
    call_tool_action,
    call_tool_result,
    openai_tool,
    parse_tool_action,
    parse_tool_call,
    result_text,
)
from tests.protocol.assertions import assert_error_frame

# Step actions ---------------------------------------------------------------------------------


def test_tool_actions_parse_and_round_trip() -> None:
    """OpenEnv's two tool actions parse to requests; call_tool_action builds what parses back."""
    assert parse_tool_action({"type": "list_tools"}) == ListToolsRequest()
    data = {"type": "call_tool", "tool_name": "add", "arguments": {"a": 1}}
    assert parse_tool_action(data) == CallToolRequest("add", {"a": 1})
    assert call_tool_action("add", {"a": 1}) == data
    assert parse_tool_action(call_tool_action("add", {}, timeout_s=2)) == CallToolRequest("add", {}, 2.0)
    # OpenEnv's actions carry metadata; a null arguments object is no arguments.
    assert parse_tool_action({"type": "call_tool", "tool_name": "x", "arguments": None, "metadata": {}}) == (
        CallToolRequest("x", {})
    )


def test_other_step_data_is_no_tool_action() -> None:
    """An env's own actions (no type, or another type) are left to the env."""
    assert parse_tool_action({"message": "hi"}) is None
    assert parse_tool_action({"type": "move"}) is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "call_tool"}, "needs tool_name"),
        ({"type": "call_tool", "tool_name": ""}, "needs tool_name"),
        ({"type": "call_tool", "tool_name": 3}, "needs tool_name"),
        ({"type": "call_tool", "tool_name": "x", "arguments": [1]}, "must be an object, got list"),
        ({"type": "call_tool", "tool_name": "x", "extra": 1}, "unexpected fields ['extra']"),
        ({"type": "list_tools", "tool_name": "x"}, "unexpected fields ['tool_name']"),
        ({"type": "call_tool", "tool_name": "x", "timeout_s": 0}, "timeout_s must be a positive"),
        ({"type": "call_tool", "tool_name": "x", "timeout_s": True}, "timeout_s must be a positive"),
        ({"type": "call_tool", "tool_name": "x", "timeout_s": "5"}, "timeout_s must be a positive"),
        # Found by tests/fuzz: an integer past float's range raised OverflowError.
        ({"type": "call_tool", "tool_name": "x", "timeout_s": 10**400}, "timeout_s must be a positive"),
    ],
)
def test_malformed_tool_actions_are_validation_errors(data: dict, message: str) -> None:
    with pytest.raises(ProtocolError, match=message.replace("[", r"\[").replace("]", r"\]")) as exc_info:
        parse_tool_action(data)
    assert exc_info.value.code == ErrorCode.VALIDATION_ERROR.value


def test_listing_tools_needs_no_reset_but_calling_one_does() -> None:
    """As in OpenEnv, list_tools may come first; a call is a step and needs an episode."""
    session = ServerSession()
    assert session.receive('{"type":"step","data":{"type":"list_tools"}}') == StepFrame({"type": "list_tools"})
    reply = session.receive('{"type":"step","data":{"type":"call_tool","tool_name":"x"}}')
    assert_error_frame(reply, ErrorCode.SESSION_ERROR)


def test_mcp_frames_parse_both_ways() -> None:
    request = {"jsonrpc": "2.0", "method": "tools/list", "id": 1}
    assert parse_client_frame(McpFrame(request).serialize()) == McpFrame(request)
    response = jsonrpc.result_response(1, {"tools": []})
    assert parse_server_frame(json.dumps({"type": "mcp", "data": response})) == McpFrame(response)


# Results ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["hi", "", {"message": "hi", "length": 2}, 3, 10.0, True, None])
def test_results_are_shaped_as_fastmcp_shapes_them(value: object) -> None:
    """For the types FastMCP wraps the same way, our CallToolResult has FastMCP's content,
    structured_content, data and is_error (FastMCP is what OpenEnv's MCP envs run)."""
    from fastmcp import Client, FastMCP  # a test dependency, through openenv-core

    server = FastMCP("probe")
    annotation = {str: str, dict: dict, int: int, float: float, bool: bool, type(None): None}[type(value)]

    def probe():  # returns the value, annotated with its type, as a FastMCP tool would be
        return value

    probe.__annotations__ = {"return": annotation}
    server.tool(probe)

    async def call():
        async with Client(server) as client:
            return await client.call_tool("probe", {})

    theirs = asyncio.run(call())
    ours = call_tool_result(value)
    assert ours["data"] == theirs.data
    assert ours["structured_content"] == theirs.structured_content
    assert ours["is_error"] is theirs.is_error is False
    assert [part["text"] for part in ours["content"]] == [part.text for part in theirs.content]


def test_result_text_is_what_a_model_reads() -> None:
    assert result_text(call_tool_result({"a": 1})) == '{"a":1}'
    assert result_text(
        {"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}
    ) == ("a\nb")
    assert result_text({"content": [], "structured_content": {"x": 1}}) == '{"x":1}'
    assert result_text(None) == ""


# The OpenAI face --------------------------------------------------------------------------------


def test_openai_tool_format_takes_either_schema_key() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    expected = {"type": "function", "function": {"name": "f", "description": "", "parameters": schema}}
    assert openai_tool({"name": "f", "description": None, "input_schema": schema}) == expected
    assert openai_tool({"name": "f", "inputSchema": schema}) == expected


@pytest.mark.parametrize(
    "call",
    [
        '{"name": "add", "arguments": {"a": 1}}',
        '{"tool_name": "add", "arguments": {"a": 1}}',
        '{"type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 1}"}}',
        {"name": "add", "arguments": {"a": 1}},
        '  {"id": "call_1", "name": "add", "arguments": {"a": 1}}\n',
        '<think>1 + 2?</think>\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>',
        '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call><tool_call>{"name": "x"}</tool_call>',
    ],
)
def test_tool_calls_parse_in_the_shapes_models_write(call: object) -> None:
    assert parse_tool_call(call) == ("add", {"a": 1})


def test_a_call_without_arguments_has_none() -> None:
    assert parse_tool_call('{"name": "ping"}') == ("ping", {})
    assert parse_tool_call('{"name": "ping", "arguments": ""}') == ("ping", {})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("add(1, 2)", "not valid JSON"),
        ("[1]", "is a JSON object, got list"),
        ('{"arguments": {}}', 'needs a "name"'),
        ('{"name": "add", "arguments": [1]}', "JSON object, got list"),
        ('{"name": "add", "arguments": "{oops"}', "arguments of the tool call are not valid JSON"),
        ('{"name": "add", "args": {}}', "unexpected keys ['args']"),
        ("[" * 100_000, "not valid JSON"),
        ("<tool_call>add(1)</tool_call>", "not valid JSON"),
    ],
)
def test_bad_tool_calls_say_what_is_wrong(call: str, message: str) -> None:
    with pytest.raises(ToolCallError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_tool_call(call)


# JSON-RPC ---------------------------------------------------------------------------------------


def test_jsonrpc_requests_name_their_tool_requests() -> None:
    assert jsonrpc.parse_request({"jsonrpc": "2.0", "method": "tools/list", "id": "a"}) == ("a", ListToolsRequest())
    call = {"jsonrpc": "2.0", "method": "tools/call", "id": 7, "params": {"name": "f", "arguments": {"x": 1}}}
    assert jsonrpc.parse_request(call) == (7, CallToolRequest("f", {"x": 1}))


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"method": "tools/list", "id": 1}, jsonrpc.JsonRpcCode.INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 1}, jsonrpc.JsonRpcCode.INVALID_REQUEST),
        ({"jsonrpc": "2.0", "method": "nope/x", "id": 1}, jsonrpc.JsonRpcCode.METHOD_NOT_FOUND),
        ({"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": {}}, jsonrpc.JsonRpcCode.INVALID_PARAMS),
        ({"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": []}, jsonrpc.JsonRpcCode.INVALID_PARAMS),
        (
            {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": {"name": "f", "arguments": 3}},
            jsonrpc.JsonRpcCode.INVALID_PARAMS,
        ),
    ],
)
def test_bad_jsonrpc_requests_get_their_codes(request_: dict, code: jsonrpc.JsonRpcCode) -> None:
    request_id, error = jsonrpc.parse_request(request_)
    assert isinstance(error, jsonrpc.JsonRpcError)
    response = error.response(request_id)
    assert response["error"]["code"] == code.value
    assert response["id"] == 1 if "id" in request_ else response["id"] is None
    assert "result" not in response


def test_jsonrpc_results_carry_both_spellings() -> None:
    """OpenEnv's snake_case keys and MCP's camelCase ones, so either kind of client reads them."""
    listed = jsonrpc.list_tools_result([{"name": "f", "description": "", "input_schema": {"type": "object"}}])
    assert listed["tools"][0]["inputSchema"] == listed["tools"][0]["input_schema"] == {"type": "object"}
    result = jsonrpc.tool_result(call_tool_result(1))
    assert result["structuredContent"] == result["structured_content"] == {"result": 1}
    assert result["isError"] is result["is_error"] is False
    failed = jsonrpc.error_result("boom")
    assert failed["isError"] is True and failed["content"][0]["text"] == "boom"


def test_a_jsonrpc_timeout_past_floats_range_is_invalid_params() -> None:
    """Found by tests/fuzz: float(10**400) raised OverflowError out of parse_request."""
    from openenv_gym.protocol.jsonrpc import JsonRpcCode, JsonRpcError, parse_request

    params = {"name": "x", "timeout_s": 10**400}
    _, parsed = parse_request({"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": params})
    assert isinstance(parsed, JsonRpcError) and parsed.code is JsonRpcCode.INVALID_PARAMS


@pytest.mark.parametrize("kind", [{"code": "print(1)"}, ["call_tool"], 3, None])
def test_a_step_whose_type_is_no_string_is_no_tool_action(kind: object) -> None:
    """Found by atheris: ``{"type": {...}}`` raised TypeError (unhashable) instead of being an env's action."""
    assert parse_tool_action({"type": kind, "timeout_s": 0.0}) is None
