"""OpenAI Responses (``POST /v1/responses``): ``instructions`` and ``input`` items (messages,
``function_call``, ``function_call_output``) read into the observation; a reply written as a
``response`` object, or as the ``response.*`` events that stream one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .forms import Dialect, ModelCall, Reply, ReplyToolCall, Stamp
from .reading import Fields, chat_content, function_tool
from .sse import sse_event

__all__ = ["output_items", "read_request", "reply_body", "reply_events"]

_fields = Fields(Dialect.RESPONSES)

_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_output_tokens": "max_tokens",
    "parallel_tool_calls": "parallel_tool_calls",
    # A stateful conversation: the earlier turns are the server's, not in this request.
    "previous_response_id": "previous_response_id",
}

# Items that carry no turn of the conversation in chat form: the model's reasoning, kept by the agent.
_SKIPPED_ITEMS = ("reasoning",)  # a tuple: a kind that is a list or an object is compared, never hashed


def read_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The observation of a Responses request."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        messages.append({"role": "system", "content": _fields.string(instructions, "instructions")})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    else:
        for i, item in enumerate(_fields.list(items, "input")):
            _read_item(_fields.object(item, f"input[{i}]"), f"input[{i}]", messages)
    tools = [
        function_tool(_fields, tool.get("name"), tool.get("description"), tool.get("parameters"), f"tools[{i}]")
        for i, tool in enumerate(_fields.list(body.get("tools") or [], "tools"))
        if isinstance(tool, Mapping) and tool.get("type") == "function"
    ]
    params = _fields.params(body, _PARAMS)
    if body.get("tool_choice") is not None:
        params["tool_choice"] = _fields.tool_choice(body["tool_choice"])
    return {"messages": messages, "tools": tools, "params": params}


def _read_item(item: Mapping[str, Any], where: str, messages: list[dict[str, Any]]) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("system", "developer", "user", "assistant"):
            raise _fields.error(f"{where}.role", f"expected system, developer, user or assistant, got {role!r:.40}")
        content = _content(item.get("content"), f"{where}.content")
        if role == "assistant":
            messages.append({"role": "assistant", "content": content})
        elif role == "user":
            messages.append({"role": "user", "content": content})
        elif isinstance(content, str):
            messages.append({"role": "system", "content": content})
        else:
            raise _fields.error(f"{where}.content", "a system message is text")
    elif kind == "function_call":
        call = {
            "id": _fields.name(item.get("call_id"), f"{where}.call_id"),
            "type": "function",
            "function": {
                "name": _fields.name(item.get("name"), f"{where}.name"),
                "arguments": _fields.string(item.get("arguments"), f"{where}.arguments"),
            },
        }
        last = messages[-1] if messages else None
        # Calls the model made together come back as items one after another: one assistant message.
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        call_id = _fields.name(item.get("call_id"), f"{where}.call_id")
        output = _content(item.get("output"), f"{where}.output")
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    elif kind not in _SKIPPED_ITEMS:
        expected = "message, function_call, function_call_output or reasoning"
        raise _fields.error(f"{where}.type", f"expected {expected}, got {kind!r:.40}")


def _content(content: Any, where: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(_fields.list(content, where)):
        part = _fields.object(part, f"{where}[{i}]")
        kind = part.get("type")
        if kind in ("input_text", "output_text"):
            parts.append({"type": "text", "text": _fields.string(part.get("text"), f"{where}[{i}].text")})
        elif kind == "refusal":
            parts.append({"type": "text", "text": _fields.string(part.get("refusal"), f"{where}[{i}].refusal")})
        elif kind == "input_image":
            url = _fields.string(part.get("image_url"), f"{where}[{i}].image_url")
            image = {"url": url} if part.get("detail") is None else {"url": url, "detail": part["detail"]}
            parts.append({"type": "image_url", "image_url": image})
        else:
            expected = "input_text, output_text, refusal or input_image"
            raise _fields.error(f"{where}[{i}].type", f"expected {expected}, got {kind!r:.40}")
    return chat_content(parts)


# Answers ------------------------------------------------------------------------------------------


def output_items(reply: Reply, stamp: Stamp) -> list[dict[str, Any]]:
    """The output items of ``reply``: a message with its text (unless it is only calls), then one
    ``function_call`` per call; item ids follow the response's own id."""
    suffix = stamp.id.removeprefix("resp_")
    items: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        items.append(_message_item(f"msg_{suffix}", reply.text, "completed"))
    for index, call in enumerate(reply.tool_calls):
        items.append(_call_item(f"fc_{suffix}_{index}", call, call.arguments, "completed"))
    if reply.truncated:  # the generation stopped in its last item
        items[-1]["status"] = "incomplete"
    return items


def _message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [_text_part(text)]
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _call_item(item_id: str, call: ReplyToolCall, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
    }


def _response(call: ModelCall, stamp: Stamp, status: str, output: list[dict[str, Any]], reply: Reply) -> dict[str, Any]:
    """The ``response`` object; the request's settings echoed as the API echoes them."""
    request = call.request
    usage = reply.usage
    return {
        "id": stamp.id,
        "object": "response",
        "created_at": stamp.created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "metadata": request.get("metadata") or {},
        "model": call.model,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": None
        if status == "in_progress"
        else {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total_tokens,
        },
    }


def reply_body(call: ModelCall, reply: Reply, stamp: Stamp) -> dict[str, Any]:
    """The ``response`` that answers ``call`` with ``reply``."""
    return _response(call, stamp, _status(reply), output_items(reply, stamp), reply)


def _status(reply: Reply) -> str:
    return "incomplete" if reply.truncated else "completed"


def reply_events(call: ModelCall, reply: Reply, stamp: Stamp) -> list[bytes]:
    """The events that stream ``reply``: ``response.created`` and ``response.in_progress``; per output
    item ``response.output_item.added``, its text (``response.content_part.added``,
    ``response.output_text.delta`` and ``.done``, ``response.content_part.done``) or its arguments
    (``response.function_call_arguments.delta`` and ``.done``), ``response.output_item.done``; then
    ``response.completed`` (``response.incomplete`` when it was cut) with the whole response."""
    events: list[bytes] = []

    def send(kind: str, **fields: Any) -> None:
        events.append(sse_event({"type": kind, "sequence_number": len(events), **fields}, kind))

    send("response.created", response=_response(call, stamp, "in_progress", [], reply))
    send("response.in_progress", response=_response(call, stamp, "in_progress", [], reply))
    items = output_items(reply, stamp)
    for index, item in enumerate(items):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            send("response.output_item.added", output_index=index, item=_message_item(item["id"], None, "in_progress"))
            send("response.content_part.added", **at, content_index=0, part=_text_part(""))
            if text:
                send("response.output_text.delta", **at, content_index=0, delta=text, logprobs=[])
            send("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
            send("response.content_part.done", **at, content_index=0, part=_text_part(text))
        else:
            opening = {**item, "status": "in_progress", "arguments": ""}
            send("response.output_item.added", output_index=index, item=opening)
            send("response.function_call_arguments.delta", **at, delta=item["arguments"])
            send("response.function_call_arguments.done", **at, name=item["name"], arguments=item["arguments"])
        send("response.output_item.done", output_index=index, item=item)
    status = _status(reply)
    send(f"response.{status}", response=_response(call, stamp, status, items, reply))
    return events
