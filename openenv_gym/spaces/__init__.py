"""Gymnasium spaces on the wire, without I/O: spaces and their values as JSON, exactly
(:mod:`.codec`), spaces built from the pydantic JSON schemas an OpenEnv server publishes
(:mod:`.schema`), and the free-text spaces of tool envs (:mod:`.text`). The only layer of the protocol side that imports gymnasium."""

from __future__ import annotations

from .codec import (
    ACTION_FIELD,
    OBSERVATION_FIELD,
    decode,
    encode,
    from_wire,
    jsonable,
    mismatch,
    space_from_json,
    space_to_json,
    to_wire,
)
from .text import ToolCallSpace, UnicodeText

__all__ = [
    "ACTION_FIELD",
    "OBSERVATION_FIELD",
    "ToolCallSpace",
    "UnicodeText",
    "decode",
    "encode",
    "from_wire",
    "jsonable",
    "mismatch",
    "space_from_json",
    "space_to_json",
    "to_wire",
]
