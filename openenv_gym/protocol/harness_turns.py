"""OpenEnv 0.10's turn-based harness socket (``/harness``, its RFC 005) on the wire.

A client connects, and the server answers ``session_started`` once the harness is ready. Each client
frame ``{"type": "message", "content": TEXT}`` is one conversational turn: the server runs the agent on
it and streams what happens as events, ``{"type", "timestamp", "data"}``, the last of a turn always
``turn_complete`` (``data``: ``response``, the agent's last text, and ``done``). A frame that is no
such message gets a ``protocol_error`` and starts nothing: the connection stays usable. A turn that
fails ends with an ``error`` event (``recoverable`` false) and the server closes the session.

The events of a turn, each model call of the agent in order: ``llm_request`` (``messages``,
``model``), ``llm_response`` (``content``, ``usage``, and ours: ``tool_calls``), a ``tool_call``
(``tool_name``, ``arguments``) for each call of the reply, and, read from the agent's next request, a
``tool_result`` (``tool_name``, ``result``, ``error``) for each of them. Pure functions, no I/O.

Example:
    >>> read_turn('{"type": "message", "content": "fix the tests"}')
    'fix the tests'
    >>> turn_event("tool_call", tool_name="bash", arguments={"command": "ls"}, timestamp=0.0)
    {'type': 'tool_call', 'timestamp': 0.0, 'data': {'tool_name': 'bash', 'arguments': {'command': 'ls'}}}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ProtocolError
from .codes import ErrorCode
from .model_calls import Reply

__all__ = [
    "HARNESS_PATH",
    "TURN_EVENTS",
    "Model",
    "protocol_error",
    "read_turn",
    "session_started",
    "tool_results",
    "turn_event",
]

HARNESS_PATH = "/harness"

#: The model a turn asks each of the agent's calls: the call's observation (``{"messages", "tools",
#: "params"}``) in, the reply out.
Model = Callable[[Mapping[str, Any]], Reply]

#: The event types of a turn (OpenEnv's ``HarnessEventType``), ``turn_complete`` last.
TURN_EVENTS = (
    "llm_request",
    "llm_response",
    "llm_chunk",
    "tool_call",
    "tool_result",
    "text_output",
    "error",
    "turn_complete",
)


def read_turn(text: str | bytes) -> str:
    """The user message a client frame holds.

    Raises:
        ProtocolError: not JSON (``INVALID_JSON``), or not ``{"type": "message", "content":
            text}`` (``VALIDATION_ERROR``).
    """
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON.value, f"Invalid JSON: {exc}") from None
    if not isinstance(frame, dict) or frame.get("type") != "message" or not isinstance(frame.get("content"), str):
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR.value, 'Invalid message: expected {"type": "message", "content": "..."}'
        )
    extra = frame.keys() - {"type", "content"}
    if extra:
        raise ProtocolError(ErrorCode.VALIDATION_ERROR.value, f"Invalid message: unexpected keys {sorted(extra)}")
    content: str = frame["content"]
    return content


def turn_event(kind: str, *, timestamp: float | None = None, **data: Any) -> dict[str, Any]:
    """One event of a turn, ``kind`` one of :data:`TURN_EVENTS`."""
    if kind not in TURN_EVENTS:
        raise ValueError(f"{kind!r} is no harness event; expected one of {list(TURN_EVENTS)}")
    return {"type": kind, "timestamp": time.time() if timestamp is None else timestamp, "data": data}


def session_started(session_id: str, harness: str) -> dict[str, Any]:
    """The frame that says the session's harness is ready for its first turn."""
    return {"type": "session_started", "data": {"session_id": session_id, "harness": harness}}


def protocol_error(error: ProtocolError) -> dict[str, Any]:
    """The answer to a frame that is no turn; the connection stays usable."""
    return {"type": "protocol_error", "data": {"message": error.message, "code": error.code}}


def tool_results(messages: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The ``tool_result`` events of a request's history: its tool messages after the last assistant
    message (the results of the reply before it), each named by its call's id in ``names``."""
    last_reply = max((i for i, message in enumerate(messages) if message.get("role") == "assistant"), default=-1)
    events = []
    for message in messages[last_reply + 1 :]:
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if not isinstance(content, str):  # parts: their text
            content = "".join(part.get("text", "") for part in content or () if isinstance(part, Mapping))
        call_id = message.get("tool_call_id")
        name = names.get(call_id, "") if isinstance(call_id, str) else ""
        events.append(turn_event("tool_result", tool_name=name, result=content, error=None))
    return events
