"""MCP's JSON-RPC 2.0 messages, as OpenEnv carries them in ``{"type": "mcp", "data": ..}`` frames on ``/ws``.

Pure functions: a request object in, the tool request it names (or the JSON-RPC error to answer)
out, and the response objects. Only the two tool methods are served, ``tools/list`` and
``tools/call``; both keep OpenEnv's snake_case keys (``input_schema``, ``structured_content``,
``is_error``) and add MCP's own camelCase ones, so an OpenEnv client and a plain MCP client
each find what they read.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tools import CallToolRequest, ListToolsRequest, ToolErrorType, call_tool_result, valid_timeout

__all__ = [
    "JsonRpcCode",
    "JsonRpcError",
    "call_response",
    "error_response",
    "error_result",
    "list_tools_result",
    "parse_request",
    "result_response",
    "tool_result",
]

TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"


class JsonRpcCode(int, enum.Enum):
    """JSON-RPC 2.0's error codes."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000  # the first of the implementation's own: OpenEnv's "at capacity"


@dataclass(frozen=True)
class JsonRpcError:
    """A request that gets an error response instead of a result."""

    code: JsonRpcCode
    message: str

    def response(self, request_id: str | int | None) -> dict[str, Any]:
        """The error response object to send."""
        return error_response(request_id, self.code, self.message)


def parse_request(
    data: Mapping[str, Any],
) -> tuple[str | int | None, ListToolsRequest | CallToolRequest | JsonRpcError]:
    """The id of a JSON-RPC request object, and the tool request it makes or the error to answer.

    The error is -32600 for an invalid request, -32601 for an unknown method and -32602 for bad
    ``tools/call`` params.

    Example:
        >>> parse_request({"jsonrpc": "2.0", "method": "tools/call", "id": 2,
        ...                "params": {"name": "add", "arguments": {"a": 1}}})
        (2, CallToolRequest(name='add', arguments={'a': 1}, timeout_s=None))
    """
    raw_id = data.get("id")
    request_id = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    if data.get("jsonrpc") != "2.0" or not isinstance(data.get("method"), str):
        return request_id, JsonRpcError(
            JsonRpcCode.INVALID_REQUEST, 'Invalid Request: a JSON-RPC 2.0 request has "jsonrpc": "2.0" and a method'
        )
    method = data["method"]
    params = data.get("params") or {}
    if not isinstance(params, dict):
        return request_id, JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Invalid params: params must be an object")
    if method == TOOLS_LIST:
        return request_id, ListToolsRequest()
    if method != TOOLS_CALL:
        return request_id, JsonRpcError(JsonRpcCode.METHOD_NOT_FOUND, f"Method not found: {method}")
    name = params.get("name")
    if not isinstance(name, str) or not name:
        return request_id, JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Invalid params: tools/call needs a name")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        return request_id, JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Invalid params: arguments must be an object")
    timeout_s = params.get("timeout_s")
    if not valid_timeout(timeout_s):
        return request_id, JsonRpcError(JsonRpcCode.INVALID_PARAMS, "Invalid params: timeout_s must be positive")
    return request_id, CallToolRequest(name, arguments, None if timeout_s is None else float(timeout_s))


def result_response(request_id: str | int | None, result: Any) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: str | int | None, code: JsonRpcCode, message: str, data: Any = None) -> dict[str, Any]:
    """An error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": int(code), "message": message, "data": data}}


def list_tools_result(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``tools/list`` result for tool descriptions ``{"name", "description", "input_schema"}``."""
    return {"tools": [{**tool, "inputSchema": tool["input_schema"]} for tool in tools]}


def call_response(
    request_id: str | int | None, result: Mapping[str, Any] | None, error: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The response to ``tools/call`` for a call's ``CallToolResult`` or its ``error`` object.

    An unknown tool is an internal error (-32603, as OpenEnv answers it), invalid arguments are
    invalid params (-32602); a tool that ran and failed, or overran its limit, is a result with
    ``isError``, as MCP reports it, for the model to read.
    """
    if error is None:
        assert result is not None, "a call has a result or an error"
        return result_response(request_id, tool_result(result))
    kind, message = error.get("error_type"), str(error.get("message", ""))
    if kind == ToolErrorType.TOOL_NOT_FOUND.value:
        return error_response(request_id, JsonRpcCode.INTERNAL_ERROR, message)
    if kind == ToolErrorType.INVALID_ARGS.value:
        return error_response(request_id, JsonRpcCode.INVALID_PARAMS, message)
    return result_response(request_id, error_result(message))


def error_result(message: str) -> dict[str, Any]:
    """The ``tools/call`` result of a tool that ran and failed: MCP reports it in the result."""
    return tool_result(call_tool_result(message, is_error=True))


def tool_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tools/call`` result for a ``CallToolResult`` in OpenEnv's snake_case form."""
    return {**result, "structuredContent": result.get("structured_content"), "isError": result.get("is_error", False)}
