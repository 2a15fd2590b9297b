"""An agent's model calls on the wire: each request a coding agent (Codex CLI, Claude Code,
mini-swe-agent...) sends to its model, read from its API dialect into one observation, and the model's
reply written back in that dialect, as a JSON body or streamed. Pure functions, no I/O.

Dialects (:class:`Dialect`), told apart by the request's path: OpenAI chat completions
(``POST /v1/chat/completions``, :mod:`.chat_completions`), OpenAI Responses (``POST /v1/responses``,
:mod:`.responses`), Anthropic Messages (``POST /v1/messages``, :mod:`.anthropic_messages`).

The observation (``ModelCall.observation``) is ``{"messages", "tools", "params"}`` in OpenAI chat form,
the request as sent and its dialect beside it (``ModelCall.info()``); the action is an assistant
message ``{"content", "tool_calls"}`` or text (:func:`parse_reply`). Both forms are spelled out in
:mod:`.forms`. A request or reply that does not fit raises :class:`~openenv_gym.errors.ModelCallError`.

Example:
    >>> call = read_model_call("/v1/messages", {"model": "m", "max_tokens": 64,
    ...     "messages": [{"role": "user", "content": "list the files"}]})
    >>> call.observation["messages"]
    [{'role': 'user', 'content': 'list the files'}]
    >>> answer_body(call, {"content": None, "tool_calls": [
    ...     {"id": "toolu_1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]})["content"]
    [{'type': 'tool_use', 'id': 'toolu_1', 'name': 'bash', 'input': {'command': 'ls'}}]
"""

from __future__ import annotations

from .dialects import answer, answer_body, answer_events, dialect_of, error_body, read_model_call
from .forms import Dialect, ModelCall, Reply, ReplyToolCall, Stamp, Usage, parse_reply
from .sse import CONTENT_TYPE

__all__ = [
    "CONTENT_TYPE",
    "Dialect",
    "ModelCall",
    "Reply",
    "ReplyToolCall",
    "Stamp",
    "Usage",
    "answer",
    "answer_body",
    "answer_events",
    "dialect_of",
    "error_body",
    "parse_reply",
    "read_model_call",
]
