"""What the APIs' SDKs make of an answer: the text and the tool calls an agent built on each SDK sees,
non-streamed and through the SDK's streaming helpers, and the history it sends back next turn."""

from __future__ import annotations

import json
from typing import Any

from openenv_gym.protocol.model_calls import Dialect

from .model_server import ModelServer

#: What an agent sees of a reply: its text, and each call as (id, name, arguments as an object).
Seen = tuple[str, list[tuple[str, str, dict[str, Any]]]]

BASH_TOOL = {"type": "object", "properties": {"command": {"type": "string"}}}


def ask(
    server: ModelServer, dialect: Dialect, stream: bool, history: list[dict[str, Any]]
) -> tuple[Seen, list[dict[str, Any]]]:
    """One model call an agent on ``dialect``'s SDK makes with ``history`` (in that dialect): what it
    sees of the answer, and the history it holds after it (the answer appended as the SDK gave it)."""
    if dialect is Dialect.CHAT_COMPLETIONS:
        return _chat(server, stream, history)
    if dialect is Dialect.RESPONSES:
        return _responses(server, stream, history)
    return _anthropic(server, stream, history)


def _chat(server: ModelServer, stream: bool, history: list[dict[str, Any]]) -> tuple[Seen, list[dict[str, Any]]]:
    client = server.openai()
    tools: Any = [{"type": "function", "function": {"name": "bash", "parameters": BASH_TOOL}}]
    if stream:
        with client.chat.completions.stream(model="policy", messages=history, tools=tools) as events:
            for _ in events:
                pass
            message: Any = events.get_final_completion().choices[0].message
    else:
        message = client.chat.completions.create(model="policy", messages=history, tools=tools).choices[0].message
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    said = message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True)
    for call in said.get("tool_calls", []):
        call.pop("index", None)
        call["function"].pop("parsed_arguments", None)
    return (message.content or "", calls), [*history, said]


def _responses(server: ModelServer, stream: bool, history: list[dict[str, Any]]) -> tuple[Seen, list[dict[str, Any]]]:
    client = server.openai()
    tools: Any = [{"type": "function", "name": "bash", "parameters": BASH_TOOL, "strict": False}]
    if stream:
        with client.responses.stream(model="policy", input=history, tools=tools) as events:
            for _ in events:
                pass
            response: Any = events.get_final_response()
    else:
        response = client.responses.create(model="policy", input=history, tools=tools)
    calls = [
        (item.call_id, item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    # As Codex does: every output item goes back into the next request's input.
    items = [item.model_dump(exclude_none=True, exclude={"parsed_arguments"}) for item in response.output]
    for item in items:
        for part in item.get("content", []):
            part.pop("parsed", None)
    return (response.output_text, calls), [*history, *items]


def _anthropic(server: ModelServer, stream: bool, history: list[dict[str, Any]]) -> tuple[Seen, list[dict[str, Any]]]:
    client = server.anthropic()
    tools: Any = [{"name": "bash", "input_schema": BASH_TOOL}]
    if stream:
        with client.messages.stream(model="policy", max_tokens=1024, messages=history, tools=tools) as events:
            for _ in events:
                pass
            message: Any = events.get_final_message()
    else:
        message = client.messages.create(model="policy", max_tokens=1024, messages=history, tools=tools)
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = [(block.id, block.name, block.input) for block in message.content if block.type == "tool_use"]
    content = [block.model_dump(include={"type", "text", "id", "name", "input"}) for block in message.content]
    return (text, calls), [*history, {"role": "assistant", "content": content}]


def tool_results(dialect: Dialect, results: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The history entries that carry the results of calls (call id, output) in ``dialect``."""
    if dialect is Dialect.CHAT_COMPLETIONS:
        return [{"role": "tool", "tool_call_id": call_id, "content": output} for call_id, output in results]
    if dialect is Dialect.RESPONSES:
        return [{"type": "function_call_output", "call_id": call_id, "output": output} for call_id, output in results]
    blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": output} for call_id, output in results]
    return [{"role": "user", "content": blocks}]
