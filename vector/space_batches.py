"""A server-side vector env's batches of a composite or dynamic space, in the form Gymnasium gives them.

A vector session sends the vector env's results as they are, but the wire has no tuples: a
``Tuple`` batch, a ``GraphInstance`` or a ``OneOf`` value arrives as a list. These functions put
each block's batch back into Gymnasium's form for the single space (``batch_space``'s: a tuple
of batches for ``Tuple``, a dict for ``Dict``, a tuple of the sub-envs' own values for ``Graph``,
``Sequence``, ``OneOf``, ``Text`` and user-defined spaces) and join or cut blocks as
``gymnasium.vector.utils.concatenate`` joins sub-envs. Array spaces need none of this
(:func:`is_array_space`): their batches stay :mod:`.batching`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .batching import join_batches, slice_batch

__all__ = [
    "batch_from_wire",
    "final_observations_from_wire",
    "is_array_space",
    "join_space_batches",
    "slice_space_batch",
    "value_from_wire",
]

_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def is_array_space(space: spaces.Space[Any]) -> bool:
    """Whether a batch of ``space`` is one array (Box, Discrete, MultiDiscrete, MultiBinary)."""
    return isinstance(space, _ARRAY_SPACES)


def value_from_wire(space: spaces.Space[Any], value: Any) -> Any:
    """One sub-env's value of ``space`` as the env gave it, from its wire form (tuples as lists)."""
    if value is None or is_array_space(space):
        return value
    if isinstance(space, spaces.Dict):
        return {key: value_from_wire(sub, value[key]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(value_from_wire(sub, item) for sub, item in zip(space.spaces, value))
    if isinstance(space, spaces.Sequence):
        if space.stack:  # the items stacked: a batch of the feature space
            return batch_from_wire(space.feature_space, value)
        return tuple(value_from_wire(space.feature_space, item) for item in value)
    if isinstance(space, spaces.Graph) and not isinstance(value, spaces.GraphInstance):
        return spaces.GraphInstance(*value)
    if isinstance(space, spaces.OneOf) and not isinstance(value, tuple):
        index, chosen = value
        return (index, value_from_wire(space.spaces[int(index)], chosen))
    return value


def batch_from_wire(space: spaces.Space[Any], batch: Any) -> Any:
    """A block's batch of ``space`` (the single space) in Gymnasium's batch form, from its wire form."""
    if is_array_space(space):
        return batch
    if isinstance(space, spaces.Dict):
        return {key: batch_from_wire(sub, batch[key]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(batch_from_wire(sub, part) for sub, part in zip(space.spaces, batch))
    return tuple(value_from_wire(space, value) for value in batch)


def join_space_batches(space: spaces.Space[Any], batches: list[Any]) -> Any:
    """The blocks' batches of ``space`` joined in order, as ``concatenate`` joins sub-envs."""
    if is_array_space(space):
        return join_batches(batches)
    if isinstance(space, spaces.Dict):
        return {key: join_space_batches(sub, [batch[key] for batch in batches]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        parts = range(len(space.spaces))
        return tuple(join_space_batches(space.spaces[i], [batch[i] for batch in batches]) for i in parts)
    return tuple(value for batch in batches for value in batch)


def slice_space_batch(space: spaces.Space[Any], batch: Any, start: int, stop: int) -> Any:
    """Sub-envs ``start:stop`` of a batch of ``space``."""
    if is_array_space(space):
        return slice_batch(batch, start, stop)
    if isinstance(space, spaces.Dict):
        return {key: slice_space_batch(sub, batch[key], start, stop) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(slice_space_batch(sub, part, start, stop) for sub, part in zip(space.spaces, batch))
    return tuple(batch[start:stop])


def final_observations_from_wire(space: spaces.Space[Any], infos: dict[str, Any]) -> dict[str, Any]:
    """``infos`` with SameStep's ``final_obs`` (an object array of the sub-envs' values) in the env's form."""
    finals = infos.get("final_obs")
    if not isinstance(finals, np.ndarray) or finals.dtype != object:
        return infos
    restored = np.empty(len(finals), dtype=object)
    restored[:] = [value_from_wire(space, value) for value in finals]
    return {**infos, "final_obs": restored}
