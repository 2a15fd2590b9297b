"""Spaces of your own (a subclass of ``gymnasium.spaces.Space`` that is none of Gymnasium's) and their values, pickled.

Such a space has no JSON form, so it travels as its pickle (cloudpickle, in base64), and so do its
values::

    {"type": "Pickled", "class": "my_module.CustomSpace", "pickle": "gASV..."}

Unpickling runs whatever code the pickle names, so it happens only where a session already trusts
pickles: the servers ``RemoteVectorEnv.from_env_fns`` starts (which unpickle its factories) and
that vector env itself. There, :func:`carry_pickled_values` marks the spaces whose values travel
pickled (the server's sub-envs' spaces; the client's are those :func:`from_json` unpickles).
Everywhere else such a space is refused, saying why (:func:`no_json_form`); a process reads
without being told to trust them only the pickles it wrote itself (they name only code it runs).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import weakref
from typing import Any

from gymnasium import spaces

from ..errors import SpaceCodecError, UnsupportedSpaceError

__all__ = [
    "PICKLED",
    "carries_pickled_values",
    "carry_pickled_values",
    "decode",
    "describe",
    "encode",
    "from_json",
    "same_space",
]

#: The ``type`` of a pickled space's description.
PICKLED = "Pickled"

# The digests of the space pickles this process wrote (bounded: the oldest are forgotten first).
_written: dict[str, None] = {}
_MAX_WRITTEN = 4096
# The spaces whose values travel pickled, by id (weakly: a space that is gone is forgotten).
_carriers: weakref.WeakValueDictionary[int, spaces.Space[Any]] = weakref.WeakValueDictionary()


def no_json_form(space: spaces.Space[Any]) -> UnsupportedSpaceError:
    """The error of a space of your own where pickles are not trusted: why, and what to do."""
    return UnsupportedSpaceError(
        f"{type(space).__name__} has no JSON form: it is a space of your own, not one of Gymnasium's (Box, "
        "Discrete, MultiDiscrete, MultiBinary, Text, Dict, Tuple, Graph, Sequence, OneOf). It can travel only "
        "pickled, and unpickling runs code, so only where a session already trusts pickles: "
        "RemoteVectorEnv.from_env_fns's servers. Serve the env with Gymnasium's spaces, or run it with from_env_fns"
    )


def _name(space: spaces.Space[Any]) -> str:
    kind = type(space)
    return f"{kind.__module__}.{kind.__qualname__}"


def _pickle(value: Any) -> str:
    import cloudpickle

    return base64.b64encode(cloudpickle.dumps(value)).decode("ascii")


def _unpickle(text: Any, what: str) -> Any:
    import pickle

    if not isinstance(text, str):
        raise SpaceCodecError(f"{what} travels as base64 text, got {type(text).__name__}")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SpaceCodecError(f"{what} is not base64: {exc}") from None
    try:
        return pickle.loads(data)  # cloudpickle writes pickles the standard loader reads
    except Exception as exc:  # whatever the pickle's code raises (a module this process cannot import...)
        raise SpaceCodecError(f"{what} could not be unpickled here: {type(exc).__name__}: {exc}") from exc


def describe(space: spaces.Space[Any]) -> dict[str, Any]:
    """``space``'s description, by its pickle; this process will read it back untold."""
    text = _pickle(space)
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()
    if len(_written) >= _MAX_WRITTEN:
        del _written[next(iter(_written))]
    _written[digest] = None
    return {"type": PICKLED, "class": _name(space), "pickle": text}


def from_json(data: dict[str, Any], pickles: bool) -> spaces.Space[Any]:
    """The space a pickled description holds, whose values then travel pickled.

    Raises:
        SpaceCodecError: ``pickles`` is off and this process did not write the pickle itself, or
            it cannot be read (not base64, a class this process cannot import, not a space).
    """
    text, name = data.get("pickle"), data.get("class", "a space")
    if not pickles and not (isinstance(text, str) and hashlib.sha256(text.encode()).hexdigest() in _written):
        raise SpaceCodecError(
            f"{name} is a space of your own, described by its pickle, and unpickling runs code: only a session "
            "that trusts pickles reads it (RemoteVectorEnv.from_env_fns's); serve the env with Gymnasium's spaces"
        )
    space = _unpickle(text, f"the pickled space {name}")
    if not isinstance(space, spaces.Space):
        raise SpaceCodecError(f"the pickled space {name} holds a {type(space).__name__}, not a gymnasium Space")
    carry_pickled_values(space)
    return space


def _subspaces(space: spaces.Space[Any]) -> list[spaces.Space[Any]]:
    if isinstance(space, spaces.Dict):
        return list(space.spaces.values())
    if isinstance(space, (spaces.Tuple, spaces.OneOf)):
        return list(space.spaces)
    if isinstance(space, spaces.Sequence):
        return [space.feature_space]
    if isinstance(space, spaces.Graph):
        graph_parts: list[spaces.Space[Any]] = [space.node_space]
        return graph_parts if space.edge_space is None else [*graph_parts, space.edge_space]
    return []


def carry_pickled_values(space: spaces.Space[Any]) -> bool:
    """Let the values of every space of your own in ``space`` (itself, or nested in Gymnasium's
    composite spaces) travel pickled: for a session that trusts pickles. Whether there was one."""
    from .codec import space_to_json

    if space_to_json.dispatch(type(space)) is space_to_json.dispatch(object):  # none of Gymnasium's
        _carriers[id(space)] = space
        return True
    found = [carry_pickled_values(sub) for sub in _subspaces(space)]
    return any(found)


def carries_pickled_values(space: spaces.Space[Any]) -> bool:
    """Whether the values of ``space`` travel pickled (:func:`carry_pickled_values` said so)."""
    return _carriers.get(id(space)) is space


def encode(space: spaces.Space[Any], value: Any) -> str:
    """A value of a space whose values travel pickled, as base64 text.

    Raises:
        UnsupportedSpaceError: ``space`` is not one (:func:`no_json_form`).
    """
    if not carries_pickled_values(space):
        raise no_json_form(space)
    return _pickle(value)


def decode(space: spaces.Space[Any], data: Any) -> Any:
    """The value :func:`encode` wrote.

    Raises:
        UnsupportedSpaceError: ``space``'s values do not travel pickled here.
        SpaceCodecError: ``data`` is not such a value.
    """
    if not carries_pickled_values(space):
        raise no_json_form(space)
    return _unpickle(data, f"a value of {type(space).__name__}")


def _holds_pickle(description: Any) -> bool:
    if isinstance(description, dict):
        return description.get("type") == PICKLED or any(_holds_pickle(item) for item in description.values())
    return isinstance(description, list) and any(_holds_pickle(item) for item in description)


def same_space(got: Any, expected: Any) -> bool:
    """Whether the description ``got`` describes the space ``expected`` describes, for a session that
    trusts pickles: equal descriptions, or, where they hold pickles (whose bytes follow a space's
    state, such as its random generator), equal spaces once read, as AsyncVectorEnv compares them."""
    if got == expected:
        return True
    if not (_holds_pickle(got) and _holds_pickle(expected)):
        return False
    from .codec import space_from_json

    try:
        return bool(space_from_json(got, pickles=True) == space_from_json(expected, pickles=True))
    except SpaceCodecError:
        return False
