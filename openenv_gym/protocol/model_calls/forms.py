"""The two forms every dialect is read into and written from: the observation (one model call, in
OpenAI chat form) and the action (the model's reply, an assistant message).

Observation ``{"messages": [...], "tools": [...], "params": {...}}``:

* ``messages``: chat messages, each ``{"role", "content"}``; ``role`` is ``system`` (a developer
  message, Responses' ``instructions`` and Anthropic's ``system`` too), ``user``, ``assistant`` (with
  ``tool_calls`` when it made calls, ``content`` then possibly ``None``) or ``tool`` (a call's result,
  with its ``tool_call_id``). ``content`` is a string when every part is text (parts joined by a
  newline), else a list of chat parts (``text``, ``image_url``).
* ``tools``: OpenAI function tools ``{"type": "function", "function": {"name", "description",
  "parameters"}}``; a dialect's built-in tools (web search...) are left out (the raw request has them).
* ``params``: ``model`` and ``stream`` always; ``temperature``, ``top_p``, ``max_tokens``, ``stop`` (a
  list), ``tool_choice`` (``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function":
  {"name"}}``), ``parallel_tool_calls`` and (Responses) ``previous_response_id`` when the request set
  them; the rest of the request (``stream_options``, ``reasoning``, ``metadata``...) is in the raw request.

Action: ``{"content": str | None, "tool_calls": [{"id", "type": "function", "function": {"name",
"arguments"}}]}`` (``arguments`` JSON text or an object; ``id`` optional, made when absent; ``usage``
``{"prompt_tokens", "completion_tokens"}`` optional; ``finish_reason: "length"`` for a generation cut
at its token limit, which each dialect reports as its own), or plain text.
"""

from __future__ import annotations

import enum
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ModelCallError

__all__ = [
    "Dialect",
    "ModelCall",
    "Reply",
    "ReplyToolCall",
    "Stamp",
    "Usage",
    "parse_reply",
]


class Dialect(str, enum.Enum):
    """An API dialect an agent talks to its model in, and the path it posts to (after any prefix)."""

    CHAT_COMPLETIONS = "chat_completions"
    RESPONSES = "responses"
    ANTHROPIC_MESSAGES = "anthropic_messages"

    @property
    def path(self) -> str:
        """The path's last segments: ``/v1`` or another prefix comes before them."""
        return _PATHS[self]


_PATHS = {
    Dialect.CHAT_COMPLETIONS: "/chat/completions",
    Dialect.RESPONSES: "/responses",
    Dialect.ANTHROPIC_MESSAGES: "/messages",
}


@dataclass(frozen=True)
class ModelCall:
    """One model call an agent made: its observation, and the request as it came, in its dialect."""

    dialect: Dialect
    observation: dict[str, Any]
    request: dict[str, Any]

    @property
    def stream(self) -> bool:
        """Whether the agent asked for its answer as server-sent events."""
        return bool(self.observation["params"]["stream"])

    @property
    def model(self) -> str:
        """The model the agent asked for (``""`` when it named none)."""
        model = self.observation["params"].get("model")
        return model if isinstance(model, str) else ""

    def info(self) -> dict[str, Any]:
        """What a step's ``info`` carries of the call: its dialect and the request as the agent sent it."""
        return {"dialect": self.dialect.value, "request": self.request}


@dataclass(frozen=True)
class Usage:
    """Token counts a reply reports; agents read them (to compact their context, to show cost)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ReplyToolCall:
    """One tool call of a reply: ``arguments`` is JSON text of an object."""

    id: str
    name: str
    arguments: str

    def input(self) -> dict[str, Any]:
        """The arguments as an object (Anthropic's ``input``)."""
        value: dict[str, Any] = json.loads(self.arguments)
        return value

    def message_form(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Reply:
    """The model's reply to a call: text, tool calls or both."""

    content: str | None
    tool_calls: tuple[ReplyToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    #: The generation stopped at its token limit, not by itself.
    truncated: bool = False

    @property
    def text(self) -> str:
        return self.content or ""

    def message(self) -> dict[str, Any]:
        """The reply as the chat message an observation's history holds it."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.message_form() for call in self.tool_calls]
        return message


@dataclass(frozen=True)
class Stamp:
    """What sets one answer apart: its id and its creation time (Unix seconds)."""

    id: str
    created: int

    @classmethod
    def new(cls, prefix: str) -> Stamp:
        return cls(new_id(prefix), int(time.time()))


_REPLY_KEYS = {"role", "content", "tool_calls", "usage", "finish_reason"}
_FINISH_REASONS = (None, "stop", "tool_calls", "length")


def parse_reply(action: str | Mapping[str, Any]) -> Reply:
    """The reply an action holds: plain text, or an assistant message.

    Example:
        >>> parse_reply("hi").message()
        {'role': 'assistant', 'content': 'hi'}
        >>> reply = parse_reply({"content": None, "tool_calls": [{"function": {"name": "ls", "arguments": {}}}]})
        >>> (reply.tool_calls[0].name, reply.tool_calls[0].arguments, reply.tool_calls[0].id[:5])
        ('ls', '{}', 'call_')

    Raises:
        ModelCallError: the action is neither, or a call's arguments are not a JSON object.
    """
    if isinstance(action, str):
        return Reply(action)
    if not isinstance(action, Mapping):
        raise ModelCallError(f"a reply is text or an assistant message (a dict), got {type(action).__name__}")
    extra = action.keys() - _REPLY_KEYS
    if extra:
        raise ModelCallError(f"unexpected keys {sorted(extra)} in the reply: it has {sorted(_REPLY_KEYS)}")
    if action.get("role", "assistant") != "assistant":
        raise ModelCallError(f"a reply's role is 'assistant', got {action['role']!r}")
    content = action.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelCallError(f"a reply's content is a string or None, got {type(content).__name__}")
    calls = action.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ModelCallError(f"a reply's tool_calls is a list, got {type(calls).__name__}")
    tool_calls = tuple(_reply_tool_call(call, f"tool_calls[{index}]") for index, call in enumerate(calls))
    if len({call.id for call in tool_calls}) < len(tool_calls):
        raise ModelCallError("two tool calls of the reply share an id")
    finish_reason = action.get("finish_reason")
    if finish_reason not in _FINISH_REASONS:
        raise ModelCallError(f"a reply's finish_reason is 'stop', 'tool_calls' or 'length', got {finish_reason!r:.40}")
    # One spelling of "no text": None beside calls, "" alone (every dialect writes both back so).
    content = (content or None) if tool_calls else (content or "")
    return Reply(content, tool_calls, _usage(action.get("usage")), finish_reason == "length")


def _reply_tool_call(call: Any, where: str) -> ReplyToolCall:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise ModelCallError(f'{where} is {{"id", "type": "function", "function": {{"name", "arguments"}}}}')
    if call.get("type", "function") != "function":
        raise ModelCallError(f"{where}.type is 'function', got {call['type']!r:.40}")
    function = call["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ModelCallError(f"{where}.function.name must be a non-empty string")
    call_id = call.get("id")
    if call_id is None:
        call_id = new_id("call_")
    elif not isinstance(call_id, str) or not call_id:
        raise ModelCallError(f"{where}.id must be a non-empty string")
    return ReplyToolCall(call_id, name, _arguments_text(function.get("arguments", {}), f"{where}.function.arguments"))


def _arguments_text(arguments: Any, where: str) -> str:
    """A call's arguments as JSON text of an object, as chat completions and Responses carry them
    (each API's ``arguments`` is text, Anthropic's ``input`` an object: only an object fits all three).
    Strict JSON: no NaN or Infinity, which a client's parser refuses."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments, parse_constant=_refuse_constant) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise ModelCallError(f"{where} is not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ModelCallError(f"{where} must be a JSON object, got {type(value).__name__}")
        return arguments if arguments.strip() else "{}"
    if not isinstance(arguments, Mapping):
        raise ModelCallError(f"{where} must be a JSON object or its text, got {type(arguments).__name__}")
    try:
        return json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ModelCallError(f"{where} is not JSON data ({exc})") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    if not isinstance(usage, Mapping):
        raise ModelCallError(f"a reply's usage is {{'prompt_tokens', 'completion_tokens'}}, got {usage!r:.80}")
    counts = [usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)]
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
        raise ModelCallError(f"a reply's token counts are non-negative integers, got {dict(usage)!r:.80}")
    return Usage(counts[0], counts[1])


def new_id(prefix: str) -> str:
    """A fresh id in the style of the APIs' own (``chatcmpl-``, ``resp_``, ``msg_``, ``call_``...)."""
    return prefix + uuid.uuid4().hex[:24]
