"""Gymnasium spaces on the wire, without I/O: spaces and their values as JSON, exactly
(:mod:`.codec`), spaces built from the pydantic JSON schemas an OpenEnv server publishes
(:mod:`.schema`), and the free-text spaces of tool envs (:mod:`.text`). The only layer of the protocol side that imports gymnasium."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
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

# Each name imports its module on first use: importing the package alone loads none of them.
_EXPORTS = {
    "ACTION_FIELD": ".codec",
    "OBSERVATION_FIELD": ".codec",
    "decode": ".codec",
    "encode": ".codec",
    "from_wire": ".codec",
    "jsonable": ".codec",
    "mismatch": ".codec",
    "space_from_json": ".codec",
    "space_to_json": ".codec",
    "to_wire": ".codec",
    "ToolCallSpace": ".text",
    "UnicodeText": ".text",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
