"""Text spaces for what LLM agents read and write: any Unicode string, and one tool call as JSON text.

Gymnasium's ``Text`` checks every character against a charset (alphanumeric by default), so its
``contains`` refuses JSON, code and anything beyond ASCII that a model may well write. These
subclasses keep ``Text``'s interface (``max_length``, ``sample``, ``seed``) and make
``contains`` honest for free text: any ``str`` up to ``max_length`` characters.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["DEFAULT_MAX_TEXT", "ToolCallSpace", "UnicodeText"]

#: The longest text a tool env's actions and observations hold unless told otherwise.
DEFAULT_MAX_TEXT = 2**20


class UnicodeText(spaces.Text):
    """Any Unicode string of at most ``max_length`` characters (``min_length`` is 0).

    ``sample()`` draws printable ASCII, as a charset is needed to draw from; ``contains`` takes
    every character.

    Example:
        >>> UnicodeText(100).contains('{"name": "é"}')
        True
    """

    def __init__(self, max_length: int = DEFAULT_MAX_TEXT, *, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length, min_length=0, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash((type(self), self.max_length))


class ToolCallSpace(UnicodeText):
    """The action space of a tool env: one tool call as JSON text, ``{"name": .., "arguments": {..}}``.

    Any string is in the space, since a model may write anything: a malformed call gets an error
    observation, not an exception. ``sample()`` draws a call of one of the tools, without
    arguments (a random agent's call, which the env may well refuse).

    Attributes:
        tool_names: the names of the tools, as listed when the env was made.
    """

    def __init__(
        self,
        tool_names: Sequence[str] = (),
        max_length: int = DEFAULT_MAX_TEXT,
        *,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, seed=seed)
        self.tool_names = tuple(tool_names)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if not self.tool_names or mask is not None or probability is not None:
            return super().sample(mask, probability)
        name = self.tool_names[int(self.np_random.integers(len(self.tool_names)))]
        return json.dumps({"name": name, "arguments": {}})

    def __repr__(self) -> str:
        return f"ToolCallSpace({list(self.tool_names)}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and super().__eq__(other) and other.tool_names == self.tool_names

    def __hash__(self) -> int:
        return hash((type(self), self.max_length, self.tool_names))
