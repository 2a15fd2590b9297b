"""Anthropic Messages (``POST /v1/messages``): ``system``, content blocks (``text``, ``image``,
``tool_use``, ``tool_result``) and tools with an ``input_schema`` read into the observation; a reply
written as a ``message``, or as the ``message_start`` ... ``message_stop`` events that stream one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .forms import Dialect, ModelCall, Reply, Stamp
from .reading import Fields, chat_content, function_tool
from .sse import sse_event

__all__ = ["content_blocks", "read_request", "reply_body", "reply_events"]

_fields = Fields(Dialect.ANTHROPIC_MESSAGES)

_PARAMS = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens", "stop_sequences": "stop"}

# The model's own reasoning, handed back by the agent: no turn of the conversation in chat form.
_SKIPPED_BLOCKS = ("thinking", "redacted_thinking")  # a tuple: a kind that is a list is compared, never hashed

# Anthropic's tool_choice -> chat completions'.
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def read_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The observation of a Messages request."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _text(system, "system")})
    for i, message in enumerate(_fields.list(body.get("messages"), "messages")):
        _read_message(_fields.object(message, f"messages[{i}]"), f"messages[{i}]", messages)
    tools = [
        function_tool(_fields, tool.get("name"), tool.get("description"), tool.get("input_schema"), f"tools[{i}]")
        for i, tool in enumerate(_fields.list(body.get("tools") or [], "tools"))
        # A tool with another type is one of Anthropic's own (bash_20250124, web_search...).
        if isinstance(tool, Mapping) and tool.get("type", "custom") == "custom"
    ]
    params = _fields.params(body, _PARAMS)
    choice = body.get("tool_choice")
    if choice is not None:
        choice = _fields.object(choice, "tool_choice")
        kind = choice.get("type")
        if kind == "tool":
            params["tool_choice"] = {
                "type": "function",
                "function": {"name": _fields.name(choice.get("name"), "tool_choice.name")},
            }
        elif isinstance(kind, str) and kind in _TOOL_CHOICES:
            params["tool_choice"] = _TOOL_CHOICES[kind]
        else:
            raise _fields.error("tool_choice.type", f"expected auto, any, tool or none, got {kind!r:.40}")
        if choice.get("disable_parallel_tool_use"):
            params["parallel_tool_calls"] = False
    return {"messages": messages, "tools": tools, "params": params}


def _read_message(message: Mapping[str, Any], where: str, messages: list[dict[str, Any]]) -> None:
    role = message.get("role")
    content = message.get("content")
    if role == "system":  # Claude Code puts system reminders among the messages
        messages.append({"role": "system", "content": _text(content, f"{where}.content")})
        return
    if role not in ("user", "assistant"):
        raise _fields.error(f"{where}.role", f"expected user, assistant or system, got {role!r:.40}")
    if isinstance(content, str):
        messages.append({"role": role, "content": content})
        return
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(_fields.list(content, f"{where}.content")):
        at = f"{where}.content[{i}]"
        block = _fields.object(block, at)
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": _fields.string(block.get("text"), f"{at}.text")})
        elif kind == "image":
            parts.append(_image(block, at))
        elif kind == "tool_use" and role == "assistant":
            calls.append(_history_call(block, at))
        elif kind == "tool_result" and role == "user":
            # Results answer the previous turn's calls: each its own tool message, before the user's text.
            call_id = _fields.name(block.get("tool_use_id"), f"{at}.tool_use_id")
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": _result(block.get("content"), f"{at}.content")}
            )
        elif kind not in _SKIPPED_BLOCKS:
            expected = "text, image, tool_use or thinking" if role == "assistant" else "text, image or tool_result"
            raise _fields.error(f"{at}.type", f"expected {expected} in a {role} message, got {kind!r:.40}")
    if role == "assistant":
        said: dict[str, Any] = {"role": "assistant", "content": chat_content(parts) if parts else None}
        if calls:
            said["tool_calls"] = calls
        messages.append(said)
    elif parts:
        messages.append({"role": "user", "content": chat_content(parts)})


def _history_call(block: Mapping[str, Any], at: str) -> dict[str, Any]:
    arguments = _fields.object(block.get("input", {}), f"{at}.input")
    return {
        "id": _fields.name(block.get("id"), f"{at}.id"),
        "type": "function",
        "function": {
            "name": _fields.name(block.get("name"), f"{at}.name"),
            "arguments": json.dumps(dict(arguments), ensure_ascii=False),
        },
    }


def _image(block: Mapping[str, Any], at: str) -> dict[str, Any]:
    source = _fields.object(block.get("source"), f"{at}.source")
    if source.get("type") == "base64":
        media = _fields.string(source.get("media_type"), f"{at}.source.media_type")
        url = f"data:{media};base64,{_fields.string(source.get('data'), f'{at}.source.data')}"
    elif source.get("type") == "url":
        url = _fields.string(source.get("url"), f"{at}.source.url")
    else:
        raise _fields.error(f"{at}.source.type", f"expected base64 or url, got {source.get('type')!r:.40}")
    return {"type": "image_url", "image_url": {"url": url}}


def _result(content: Any, where: str) -> str | list[dict[str, Any]]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(_fields.list(content, where)):
        block = _fields.object(block, f"{where}[{i}]")
        if block.get("type") == "text":
            parts.append({"type": "text", "text": _fields.string(block.get("text"), f"{where}[{i}].text")})
        elif block.get("type") == "image":
            parts.append(_image(block, f"{where}[{i}]"))
        else:
            raise _fields.error(f"{where}[{i}].type", f"expected text or image, got {block.get('type')!r:.40}")
    return chat_content(parts)


def _text(content: Any, where: str) -> str:
    read = _result(content, where)
    if not isinstance(read, str):
        raise _fields.error(where, "expected text (an image has no place here)")
    return read


# Answers ------------------------------------------------------------------------------------------


def content_blocks(reply: Reply) -> list[dict[str, Any]]:
    """The content of ``reply``: a text block (unless it is only calls), then one ``tool_use`` per call."""
    blocks: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input()})
    return blocks


def _stop_reason(reply: Reply) -> str:
    if reply.truncated:
        return "max_tokens"
    return "tool_use" if reply.tool_calls else "end_turn"


def _message(
    call: ModelCall, reply: Reply, stamp: Stamp, content: list[dict[str, Any]], stop_reason: str | None
) -> dict[str, Any]:
    return {
        "id": stamp.id,
        "type": "message",
        "role": "assistant",
        "model": call.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.usage.prompt_tokens,
            "output_tokens": reply.usage.completion_tokens if stop_reason else 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def reply_body(call: ModelCall, reply: Reply, stamp: Stamp) -> dict[str, Any]:
    """The ``message`` that answers ``call`` with ``reply``."""
    return _message(call, reply, stamp, content_blocks(reply), _stop_reason(reply))


def reply_events(call: ModelCall, reply: Reply, stamp: Stamp) -> list[bytes]:
    """The events that stream ``reply``: ``message_start``; per block ``content_block_start``, its
    ``content_block_delta`` (``text_delta`` or ``input_json_delta``) and ``content_block_stop``; then
    ``message_delta`` (the stop reason and output tokens) and ``message_stop``."""
    events: list[bytes] = []

    def send(kind: str, **fields: Any) -> None:
        events.append(sse_event({"type": kind, **fields}, kind))

    send("message_start", message=_message(call, reply, stamp, [], None))
    blocks = content_blocks(reply)
    first_call = len(blocks) - len(reply.tool_calls)
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            send("content_block_start", index=index, content_block={"type": "text", "text": ""})
            if block["text"]:
                send("content_block_delta", index=index, delta={"type": "text_delta", "text": block["text"]})
        else:
            send("content_block_start", index=index, content_block={**block, "input": {}})
            # The arguments as the policy wrote them: the agent's SDK parses the JSON text it gathers.
            arguments = reply.tool_calls[index - first_call].arguments
            send("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": arguments})
        send("content_block_stop", index=index)
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    send("message_delta", delta=delta, usage={"output_tokens": reply.usage.completion_tokens})
    send("message_stop")
    return events
