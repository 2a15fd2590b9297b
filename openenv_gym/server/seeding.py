"""A seed an environment's reset cannot take is refused, not dropped.

A server keeps only the keyword arguments an environment's ``reset`` takes (as OpenEnv's does), so
a seed sent to an env whose ``reset`` has no ``seed`` parameter would be dropped without a word and
the episode would look seeded (OpenEnv #1102). Gymnasium's promise is that the same seed gives the
same episode: a reset that cannot keep it says so instead, and the client learns why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .session import _parameters_of

__all__ = ["refuse_unseedable"]


def refuse_unseedable(reset: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Raise if ``kwargs`` hold a seed ``reset`` cannot take.

    Raises:
        ValueError: a seed is given and ``reset`` has neither a ``seed`` parameter nor ``**kwargs``.
    """
    if kwargs.get("seed") is None:
        return
    accepted = _parameters_of(getattr(reset, "__func__", reset))
    if accepted is not None and "seed" not in accepted:
        name = getattr(reset, "__qualname__", "reset")
        raise ValueError(f"{name}() takes no seed, so a seeded reset cannot be honoured: reset without a seed")
