"""Tool calls on the wire, as OpenEnv's MCP environments speak them, and as LLM trainers write them.

Three shapes of the same thing, converted by pure functions:

* OpenEnv's step actions ``{"type": "list_tools"}`` and ``{"type": "call_tool", "tool_name": ..,
  "arguments": {..}}``, answered by observations ``{"tools": [..]}`` and ``{"tool_name", "result",
  "error"}`` whose ``result`` is shaped like an MCP ``CallToolResult``;
* a tool's description ``{"name", "description", "input_schema"}``, and the same in the OpenAI /
  TRL function format ``{"type": "function", "function": {"name", "description", "parameters"}}``;
* one tool call as a model writes it: ``'{"name": "add", "arguments": {"a": 1}}'``.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolCallError
from ._json import dumps, invalid

__all__ = [
    "CALL_FORMS",
    "LIST_TOOLS",
    "RESERVED_TOOL_NAMES",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "CallToolRequest",
    "ListToolsRequest",
    "ToolErrorType",
    "call_tool_action",
    "call_tool_observation",
    "call_tool_result",
    "list_tools_observation",
    "openai_tool",
    "parse_tool_action",
    "parse_tool_call",
    "result_text",
    "tool_error",
]

#: Names a tool may not take: they are the session's own calls (as in OpenEnv).
RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})

#: The tags around a call in a Hermes / Qwen chat template's completion.
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"

#: What a model is told a call looks like when its call cannot be read.
CALL_FORMS = (
    'write one call as JSON, {"name": "<tool>", "arguments": {...}}, '
    f"alone or inside {TOOL_CALL_OPEN}...{TOOL_CALL_CLOSE}"
)

#: The step action that lists an environment's tools.
LIST_TOOLS: dict[str, Any] = {"type": "list_tools"}


class ToolErrorType(str, enum.Enum):
    """The ``error_type`` of a failed tool call, as OpenEnv names them."""

    TOOL_NOT_FOUND = "tool_not_found"
    INVALID_ARGS = "invalid_args"
    EXECUTION_ERROR = "execution_error"
    TIMEOUT = "timeout"
    TRANSPORT_ERROR = "transport_error"


@dataclass(frozen=True)
class ListToolsRequest:
    """A step that asks for the tool list; allowed before the first reset, as in OpenEnv."""


@dataclass(frozen=True)
class CallToolRequest:
    """A step that calls one tool.

    ``timeout_s`` is our extension (OpenEnv's ``/ws`` cannot carry a per-call limit): the call's
    time limit in seconds, instead of the tool's or the environment's.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None


_ACTION_KEYS = {
    "list_tools": {"type", "metadata"},
    "call_tool": {"type", "tool_name", "arguments", "timeout_s", "metadata"},
}


def parse_tool_action(data: Mapping[str, Any]) -> ListToolsRequest | CallToolRequest | None:
    """The tool request a step frame's ``data`` holds, or None when it is not one.

    Raises:
        ProtocolError: ``VALIDATION_ERROR`` for a tool action of the wrong shape (OpenEnv's
            actions forbid unknown fields too).
    """
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in _ACTION_KEYS:  # an object or a list would not even hash
        return None
    extra = data.keys() - _ACTION_KEYS[kind]
    if extra:
        raise invalid(
            f"unexpected fields {sorted(extra)} in a {kind} action",
            errors=[{"type": "extra_forbidden", "loc": [key]} for key in sorted(extra)],
        )
    if kind == "list_tools":
        return ListToolsRequest()
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise invalid("a call_tool action needs tool_name, a non-empty string")
    arguments = data.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid(f"the arguments of a call_tool action must be an object, got {type(arguments).__name__}")
    timeout_s = data.get("timeout_s")
    if not valid_timeout(timeout_s):
        raise invalid(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return CallToolRequest(name, arguments, None if timeout_s is None else float(timeout_s))


def valid_timeout(timeout_s: Any) -> bool:
    """Whether a call's ``timeout_s`` is absent or a positive, finite number of seconds."""
    if timeout_s is None:
        return True
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        return False
    try:
        seconds = float(timeout_s)
    except OverflowError:  # an integer past float's range (JSON's are unbounded)
        return False
    return 0 < seconds < math.inf


def call_tool_action(name: str, arguments: Mapping[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
    """The step action that calls ``name`` with ``arguments`` (the inverse of :func:`parse_tool_action`)."""
    action: dict[str, Any] = {"type": "call_tool", "tool_name": name, "arguments": dict(arguments)}
    if timeout_s is not None:
        action["timeout_s"] = timeout_s
    return action


# Results and errors --------------------------------------------------------------------------


def call_tool_result(value: Any, is_error: bool = False) -> dict[str, Any]:
    """A tool's return value as an MCP ``CallToolResult``, the way FastMCP shapes one.

    A string is its own text; other values travel as compact JSON text. ``structured_content``
    is an object (a non-object value is wrapped as ``{"result": value}``) and ``data`` the value
    itself; ``None`` has no content. ``value`` must already be plain JSON data.

    Example:
        >>> call_tool_result("hi")["content"]
        [{'type': 'text', 'text': 'hi', 'annotations': None, 'meta': None}]
        >>> call_tool_result({"length": 2})["structured_content"]
        {'length': 2}
    """
    if value is None:
        content: list[dict[str, Any]] = []
        structured = None
    else:
        text = value if isinstance(value, str) else dumps(value)
        content = [{"type": "text", "text": text, "annotations": None, "meta": None}]
        structured = value if isinstance(value, dict) else {"result": value}
    return {"content": content, "structured_content": structured, "data": value, "is_error": is_error}


def tool_error(kind: ToolErrorType, message: str) -> dict[str, Any]:
    """The ``error`` object of a failed call."""
    return {"error_type": kind.value, "message": message}


def call_tool_observation(
    name: str, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The observation of a tool call: its result, or the error that stopped it."""
    return {"tool_name": name, "result": result, "error": error}


def list_tools_observation(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The observation that lists tools (each ``{"name", "description", "input_schema"}``)."""
    return {"tools": tools}


def result_text(result: Mapping[str, Any] | None) -> str:
    """What a model reads of a ``CallToolResult``: its text parts joined, else its data as JSON.

    Example:
        >>> result_text(call_tool_result(10.0))
        '10.0'
        >>> result_text({"content": [], "data": None})
        ''
    """
    if not result:
        return ""
    content = result.get("content") or []
    texts = [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
    if texts:
        return "\n".join(texts)
    data = result.get("data", result.get("structured_content", result.get("structuredContent")))
    if data is None:
        return ""
    return data if isinstance(data, str) else dumps(data)


# The OpenAI / TRL face -----------------------------------------------------------------------


def openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool description in the OpenAI function format that TRL and chat templates take.

    Accepts OpenEnv's ``input_schema`` and MCP's ``inputSchema`` alike.

    Example:
        >>> openai_tool({"name": "echo", "description": "Echo it.", "input_schema": {"type": "object"}})
        {'type': 'function', 'function': {'name': 'echo', 'description': 'Echo it.', 'parameters': {'type': 'object'}}}
    """
    schema = tool.get("input_schema", tool.get("inputSchema")) or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": tool.get("description") or "", "parameters": schema},
    }


def parse_tool_call(action: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool name and arguments of one call as a model writes it.

    Takes the OpenAI function-call shape ``{"name": .., "arguments": {..}}`` as JSON text or as a
    dict; ``tool_name`` is accepted for ``name``, a ``{"function": {..}}`` wrapper is unwrapped,
    and ``arguments`` may itself be JSON text (as OpenAI's API sends it). A whole completion in
    the Hermes / Qwen form, text around ``<tool_call>{...}</tool_call>``, gives its first call.

    Example:
        >>> parse_tool_call('{"name": "add", "arguments": {"a": 1}}')
        ('add', {'a': 1})
        >>> parse_tool_call('Let me add. <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
        ('add', {'a': 1})

    Raises:
        ToolCallError: the text is not JSON, or not a call; the message says what a call looks like.
    """
    call: Any = action
    if isinstance(action, str):
        if TOOL_CALL_OPEN in action:
            action = action.split(TOOL_CALL_OPEN, 1)[1].split(TOOL_CALL_CLOSE, 1)[0]
        try:
            call = json.loads(action)
        except ValueError as exc:
            raise _unreadable(f"the tool call is not valid JSON ({exc})") from None
        except RecursionError:
            raise _unreadable("the tool call is not valid JSON (nested too deeply)") from None
    if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
        call = call["function"]
    if not isinstance(call, Mapping):
        raise _unreadable(f"a tool call is a JSON object, got {type(call).__name__}")
    name = call.get("name", call.get("tool_name"))
    if not isinstance(name, str) or not name:
        raise _unreadable('a tool call needs a "name": the tool to call')
    extra = call.keys() - {"name", "tool_name", "arguments", "type", "id"}
    if extra:
        raise _unreadable(f"unexpected keys {sorted(extra)} in the tool call: it has only name and arguments")
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise _unreadable(f"the arguments of the tool call are not valid JSON ({exc})") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _unreadable(f'the "arguments" of a tool call are a JSON object, got {type(arguments).__name__}')
    return name, arguments


def _unreadable(problem: str) -> ToolCallError:
    """The error of a call that cannot be read: what is wrong, then what a call looks like, in one line."""
    return ToolCallError(f"{problem}; {CALL_FORMS}")
