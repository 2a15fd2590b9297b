"""JSON helpers the protocol modules share: compact dumps, bounded loads of one frame object."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ProtocolError
from .codes import ErrorCode

__all__ = ["data_object", "dumps", "elide", "invalid", "load_object", "loads", "utf8"]

dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
loads = json.loads


def utf8(text: str) -> bytes:
    """JSON text as UTF-8, a lone surrogate (what a ``"\\ud800"`` escape reads as) written back as
    that escape: in text ``dumps`` wrote, one can stand only inside a string, where the escape
    means the same, so a frame echoing one still travels (strict UTF-8 refuses surrogates).

    Example:
        >>> utf8(dumps({"type": "\\ud800"}))
        b'{"type":"\\\\ud800"}'
    """
    return text.encode("utf-8", "backslashreplace")


def elide(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for logs."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...[{len(text)} chars]"


def invalid(message: str, **details: Any) -> ProtocolError:
    """A ``VALIDATION_ERROR`` for a frame of the wrong shape."""
    return ProtocolError(ErrorCode.VALIDATION_ERROR.value, message, details)


def text_of(message: str | bytes) -> str:
    """A text frame's text; ``INVALID_JSON`` for a binary frame, where only text holds JSON."""
    if not isinstance(message, str):
        raise ProtocolError(
            ErrorCode.INVALID_JSON.value,
            "binary frames are not accepted on this session: send JSON text frames",
        )
    return message


def load_object(message: str | bytes) -> dict[str, Any]:
    """The JSON object a text frame holds; ``INVALID_JSON`` or ``VALIDATION_ERROR`` otherwise."""
    text = text_of(message)
    try:
        obj = loads(text)
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON.value, f"Invalid JSON: {exc}") from exc
    except RecursionError as exc:  # hostile nesting: refuse it like any other bad JSON
        raise ProtocolError(ErrorCode.INVALID_JSON.value, "Invalid JSON: nested too deeply") from exc
    if not isinstance(obj, dict):
        raise invalid(f"a frame must be a JSON object, got {type(obj).__name__}")
    return obj


def data_object(frame: dict[str, Any], kind: str) -> dict[str, Any]:
    """A frame's ``data`` object (``{}`` when absent or null)."""
    data = frame.get("data", {})
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise invalid(f"the data of a {kind} frame must be a JSON object, got {type(data).__name__}")
    return data
