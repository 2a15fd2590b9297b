"""OpenAI chat completions (``POST /v1/chat/completions``): a request read into the observation (already
nearly its form), a reply written as a ``chat.completion`` or as ``chat.completion.chunk`` events; and
the other way, for a server that asks a model itself, an observation as the request that asks a model
for it (:func:`completion_request`) and the ``chat.completion`` it answers read as a reply
(:func:`completion_reply`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ModelCallError
from .forms import Dialect, ModelCall, Reply, Stamp, parse_reply
from .reading import Fields, chat_content, function_tool
from .sse import CHAT_DONE, sse_event

__all__ = ["completion_reply", "completion_request", "read_request", "reply_body", "reply_events"]

_fields = Fields(Dialect.CHAT_COMPLETIONS)

# The request's field -> the observation's parameter (the newer max_completion_tokens wins).
_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "stop": "stop",
    "parallel_tool_calls": "parallel_tool_calls",
}


def read_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The observation of a chat completions request."""
    messages = [
        _message(message, f"messages[{i}]") for i, message in enumerate(_fields.list(body.get("messages"), "messages"))
    ]
    tools = [
        _tool(tool, f"tools[{i}]")
        for i, tool in enumerate(_fields.list(body.get("tools") or [], "tools"))
        if isinstance(tool, Mapping) and tool.get("type", "function") == "function"
    ]
    params = _fields.params(body, _PARAMS)
    if body.get("tool_choice") is not None:
        params["tool_choice"] = _fields.tool_choice(body["tool_choice"])
    return {"messages": messages, "tools": tools, "params": params}


def _message(message: Any, where: str) -> dict[str, Any]:
    message = _fields.object(message, where)
    role = message.get("role")
    content = message.get("content")
    if role in ("system", "developer"):
        return {"role": "system", "content": _text(content, f"{where}.content")}
    if role == "user":
        return {"role": "user", "content": _content(content, f"{where}.content")}
    if role == "tool":
        call_id = _fields.name(message.get("tool_call_id"), f"{where}.tool_call_id")
        return {"role": "tool", "tool_call_id": call_id, "content": _text(content, f"{where}.content")}
    if role == "assistant":
        said: dict[str, Any] = {
            "role": "assistant",
            "content": None if content is None else _content(content, f"{where}.content"),
        }
        calls = _fields.list(message.get("tool_calls") or [], f"{where}.tool_calls")
        if calls:
            said["tool_calls"] = [_history_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)]
        return said
    raise _fields.error(f"{where}.role", f"expected system, developer, user, assistant or tool, got {role!r:.40}")


def _content(content: Any, where: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(_fields.list(content, where)):
        part = _fields.object(part, f"{where}[{i}]")
        if part.get("type") == "text":
            parts.append({"type": "text", "text": _fields.string(part.get("text"), f"{where}[{i}].text")})
        elif part.get("type") == "refusal":
            parts.append({"type": "text", "text": _fields.string(part.get("refusal"), f"{where}[{i}].refusal")})
        elif part.get("type") == "image_url":
            image = _fields.object(part.get("image_url"), f"{where}[{i}].image_url")
            _fields.string(image.get("url"), f"{where}[{i}].image_url.url")
            parts.append({"type": "image_url", "image_url": dict(image)})
        else:
            raise _fields.error(
                f"{where}[{i}].type", f"expected text, refusal or image_url, got {part.get('type')!r:.40}"
            )
    return chat_content(parts)


def _text(content: Any, where: str) -> str:
    read = _content(content, where)
    if not isinstance(read, str):
        raise _fields.error(where, "expected text (an image has no place here)")
    return read


def _history_call(call: Any, where: str) -> dict[str, Any]:
    call = _fields.object(call, where)
    function = _fields.object(call.get("function"), f"{where}.function")
    return {
        "id": _fields.name(call.get("id"), f"{where}.id"),
        "type": "function",
        "function": {
            "name": _fields.name(function.get("name"), f"{where}.function.name"),
            "arguments": _fields.string(function.get("arguments"), f"{where}.function.arguments"),
        },
    }


def _tool(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    function = _fields.object(tool.get("function"), f"{where}.function")
    return function_tool(
        _fields, function.get("name"), function.get("description"), function.get("parameters"), f"{where}.function"
    )


# Answers ------------------------------------------------------------------------------------------


def _finish_reason(reply: Reply) -> str:
    if reply.truncated:
        return "length"
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(reply: Reply) -> dict[str, int]:
    usage = reply.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def reply_body(call: ModelCall, reply: Reply, stamp: Stamp) -> dict[str, Any]:
    """The ``chat.completion`` that answers ``call`` with ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [tool_call.message_form() for tool_call in reply.tool_calls]
    return {
        "id": stamp.id,
        "object": "chat.completion",
        "created": stamp.created,
        "model": call.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(reply),
    }


def reply_events(call: ModelCall, reply: Reply, stamp: Stamp) -> list[bytes]:
    """The ``chat.completion.chunk`` events that stream ``reply``, ``data: [DONE]`` last: the role, the
    text, each call's id and name then its arguments, the finish reason, and the usage when the request's
    ``stream_options`` asked for it."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse_event({**head, "choices": [choice]})

    head = {"id": stamp.id, "object": "chat.completion.chunk", "created": stamp.created, "model": call.model}
    events = [chunk({"role": "assistant", "content": "" if reply.content is not None else None})]
    if reply.content:
        events.append(chunk({"content": reply.content}))
    for index, tool_call in enumerate(reply.tool_calls):
        opening = {
            "index": index,
            "id": tool_call.id,
            "type": "function",
            "function": {"name": tool_call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [opening]}))
        events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": tool_call.arguments}}]}))
    events.append(chunk({}, _finish_reason(reply)))
    options = call.request.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        events.append(sse_event({**head, "choices": [], "usage": _usage(reply)}))
    events.append(CHAT_DONE)
    return events


# Asking a model ------------------------------------------------------------------------------------


def completion_request(observation: Mapping[str, Any], model: str | None = None) -> dict[str, Any]:
    """The chat completions request that asks a model to answer ``observation``'s call: its messages,
    tools and parameters, not streamed, and ``model`` in place of the model the agent named.

    >>> completion_request({"messages": [{"role": "user", "content": "hi"}], "tools": [],
    ...     "params": {"model": "agent-default", "stream": True, "temperature": 0.2}}, model="served")
    {'model': 'served', 'messages': [{'role': 'user', 'content': 'hi'}], 'stream': False, 'temperature': 0.2}
    """
    params = {name: value for name, value in observation["params"].items() if name not in ("model", "stream")}
    body: dict[str, Any] = {
        "model": model or observation["params"].get("model") or "",
        "messages": list(observation["messages"]),
        "stream": False,
    }
    if observation.get("tools"):
        body["tools"] = list(observation["tools"])
    return {**body, **params}


def completion_reply(completion: Any) -> Reply:
    """The reply a ``chat.completion`` holds: its first choice's text and tool calls, its usage, and
    whether it stopped at its token limit.

    Raises:
        ModelCallError: the answer is no ``chat.completion``, or its message no reply.
    """
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ModelCallError(f"the model's answer has no choices: {str(completion)[:200]}")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise ModelCallError("the model's answer has no message in its first choice")
    reason = choices[0].get("finish_reason")
    return parse_reply(
        {
            "content": message.get("content"),
            "tool_calls": message.get("tool_calls"),
            "usage": completion.get("usage"),
            "finish_reason": reason if reason in ("stop", "tool_calls", "length") else None,
        }
    )
