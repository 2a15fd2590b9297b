"""Server-sent events as the model APIs send them: ``event:`` (Responses and Anthropic name each event,
chat completions does not), one ``data:`` line of compact JSON, a blank line."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CHAT_DONE", "CONTENT_TYPE", "sse_event"]

#: The media type of a streamed answer.
CONTENT_TYPE = "text/event-stream"

#: The last event of a chat completions stream.
CHAT_DONE = b"data: [DONE]\n\n"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def sse_event(data: dict[str, Any], event: str | None = None) -> bytes:
    """One event's bytes.

    Example:
        >>> sse_event({"type": "message_stop"}, "message_stop")
        b'event: message_stop\\ndata: {"type":"message_stop"}\\n\\n'
    """
    head = f"event: {event}\n" if event else ""
    # JSON text has no raw newline (they are escaped in strings), so one data line holds it whole.
    return f"{head}data: {_dumps(data)}\n\n".encode("utf-8", "backslashreplace")
