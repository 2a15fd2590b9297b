"""One model call through its dialect: which dialect a request is (by its path), the call read from its
body, and the answer written back (a JSON body, or the bytes of its server-sent events)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ...errors import ModelCallError
from . import anthropic_messages, chat_completions, responses
from .forms import Dialect, ModelCall, Reply, Stamp, parse_reply
from .sse import CONTENT_TYPE

__all__ = ["answer", "answer_body", "answer_events", "dialect_of", "error_body", "read_model_call"]

_MODULES: dict[Dialect, ModuleType] = {
    Dialect.CHAT_COMPLETIONS: chat_completions,
    Dialect.RESPONSES: responses,
    Dialect.ANTHROPIC_MESSAGES: anthropic_messages,
}

# The prefix of each dialect's answer id, as the APIs write theirs.
_ID_PREFIXES = {Dialect.CHAT_COMPLETIONS: "chatcmpl-", Dialect.RESPONSES: "resp_", Dialect.ANTHROPIC_MESSAGES: "msg_"}


def dialect_of(path: str) -> Dialect:
    """The dialect of a request to ``path`` (with any prefix before it, such as ``/v1``, and any query).

    Example:
        >>> dialect_of("/v1/messages?beta=true")
        <Dialect.ANTHROPIC_MESSAGES: 'anthropic_messages'>

    Raises:
        ModelCallError: no dialect posts to that path (``/v1/messages/count_tokens`` is no model call).
    """
    route = path.split("?", 1)[0].rstrip("/")
    for dialect in Dialect:
        if route.endswith(dialect.path):
            return dialect
    paths = ", ".join(f".../v1{dialect.path}" for dialect in Dialect)
    raise ModelCallError(f"no model call is posted to {path!r:.200}: the dialects' paths are {paths}")


def read_model_call(path: str, body: bytes | str | Mapping[str, Any]) -> ModelCall:
    """The model call a request to ``path`` with ``body`` (its JSON, or the object read from it) makes.

    Example:
        >>> call = read_model_call("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')
        >>> call.observation
        {'messages': [{'role': 'user', 'content': 'hi'}], 'tools': [], 'params': {'model': 'm', 'stream': False}}

    Raises:
        ModelCallError: the path is no dialect's, or the body does not follow the dialect; the message
            names the field.
    """
    dialect = dialect_of(path)
    if not isinstance(body, Mapping):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise ModelCallError(f"the body of a {dialect.value} request is not JSON ({exc})", dialect.value) from None
        if not isinstance(body, dict):
            raise ModelCallError(f"the body of a {dialect.value} request is a JSON object", dialect.value)
    request = dict(body)
    return ModelCall(dialect, _MODULES[dialect].read_request(request), request)


def answer_body(call: ModelCall, reply: Reply | str | Mapping[str, Any], stamp: Stamp | None = None) -> dict[str, Any]:
    """The JSON body that answers ``call`` with ``reply`` (an action: see :func:`.parse_reply`).

    Raises:
        ModelCallError: the reply cannot be read.
    """
    reply = reply if isinstance(reply, Reply) else parse_reply(reply)
    body: dict[str, Any] = _MODULES[call.dialect].reply_body(
        call, reply, stamp or Stamp.new(_ID_PREFIXES[call.dialect])
    )
    return body


def answer_events(call: ModelCall, reply: Reply | str | Mapping[str, Any], stamp: Stamp | None = None) -> list[bytes]:
    """The server-sent events that stream ``reply`` to ``call``, one ``bytes`` per event, in order
    (sent as ``text/event-stream``).

    Raises:
        ModelCallError: the reply cannot be read.
    """
    reply = reply if isinstance(reply, Reply) else parse_reply(reply)
    events: list[bytes] = _MODULES[call.dialect].reply_events(
        call, reply, stamp or Stamp.new(_ID_PREFIXES[call.dialect])
    )
    return events


def answer(
    call: ModelCall, reply: Reply | str | Mapping[str, Any], stamp: Stamp | None = None
) -> tuple[str, list[bytes]]:
    """The answer to ``call`` as the agent asked for it: its media type and its bytes, the events one by
    one when the request asked to stream, else the JSON body in one piece.

    Raises:
        ModelCallError: the reply cannot be read.
    """
    if call.stream:
        return CONTENT_TYPE, answer_events(call, reply, stamp)
    body = json.dumps(answer_body(call, reply, stamp), ensure_ascii=False, separators=(",", ":"))
    return "application/json", [body.encode("utf-8", "backslashreplace")]


def error_body(dialect: Dialect, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """The body of an error answer in ``dialect`` (``kind``: the API's error type, e.g. ``invalid_request_error``).

    Example:
        >>> error_body(Dialect.ANTHROPIC_MESSAGES, "messages: expected a list")
        {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'messages: expected a list'}}
    """
    if dialect is Dialect.ANTHROPIC_MESSAGES:
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
