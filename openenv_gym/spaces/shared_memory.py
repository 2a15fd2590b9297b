"""Which observation spaces ``AsyncVectorEnv(..., shared_memory=True)`` takes, and its errors for the others.

``RemoteVectorEnv.from_env_fns`` takes ``shared_memory`` as AsyncVectorEnv does, and honours its
rule without making the segment: a space Gymnasium's shared memory has no layout for is refused
with the error AsyncVectorEnv raises for it, a ``TypeError`` for a space whose values vary in
size (Graph, Sequence) and a ``ValueError`` for a space of your own. Which spaces have a layout is
Gymnasium's registry (``gymnasium.vector.utils.create_shared_memory``), so a layout you
registered for your own space counts.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory

__all__ = ["check_shared_memory"]


def _parts(space: spaces.Space[Any]) -> list[spaces.Space[Any]]:
    """The spaces Gymnasium's shared memory lays out one by one inside ``space``."""
    if isinstance(space, spaces.Dict):
        return list(space.spaces.values())
    if isinstance(space, (spaces.Tuple, spaces.OneOf)):
        return list(space.spaces)
    return []


def check_shared_memory(space: spaces.Space[Any]) -> None:
    """Refuse, as ``AsyncVectorEnv(..., shared_memory=True)`` does, a space its shared memory cannot hold.

    Raises:
        TypeError: a Graph or Sequence in ``space``: its values have no fixed size.
        ValueError: a space of your own in ``space`` with no shared-memory layout registered.
    """
    if isinstance(space, (spaces.Graph, spaces.Sequence)):
        raise TypeError(
            f"As {space} has a dynamic shape so its not possible to make a static shared memory. "
            "For `AsyncVectorEnv`, disable `shared_memory`: pass shared_memory=False"
        )
    if create_shared_memory.dispatch(type(space)) is create_shared_memory.dispatch(object):
        raise ValueError(
            f"{type(space).__name__} is a space of your own, which shared memory cannot hold (Gymnasium has no "
            "layout for it, as AsyncVectorEnv(..., shared_memory=True) says): pass shared_memory=False; its values "
            "then travel pickled"
        )
    for part in _parts(space):
        check_shared_memory(part)
