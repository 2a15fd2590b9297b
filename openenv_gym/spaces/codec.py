"""Gymnasium spaces and their values as JSON, exactly and without I/O.

Three conversions, each one function per space type (``functools.singledispatch``):

* :func:`space_to_json` / :func:`space_from_json`: a space's description, as served in the
  ``spaces`` field of ``/schema``. Round trips are exact (dtypes, bounds, charsets, key order);
  infinite Box bounds become the strings ``"inf"`` / ``"-inf"`` because JSON has no infinity.
  Every Gymnasium space has one (``Graph``, ``Sequence`` and ``OneOf``: :mod:`.dynamic`); a space
  of your own travels pickled, only where a session trusts pickles (:mod:`.user_spaces`).
* :func:`encode` / :func:`decode`: a value of a space (an observation or an action).
* :func:`to_wire` / :func:`from_wire`: the wire form of an action or observation, which OpenEnv
  requires to be a JSON object. A :class:`~gymnasium.spaces.Dict` space maps to the object's
  fields; any other space travels as the single field named by ``field``
  (``{"action": 1}``, ``{"observation": [0.1, ...]}``).

:func:`mismatch` says why a value is not one a space holds, so a client refuses a wrong action
before sending it instead of coercing it (``str(None)`` as a program, ``int(1.7)`` as ``1``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from ..errors import SpaceCodecError

__all__ = [
    "ACTION_FIELD",
    "OBSERVATION_FIELD",
    "decode",
    "encode",
    "from_wire",
    "jsonable",
    "mismatch",
    "space_from_json",
    "space_to_json",
    "to_wire",
]

ACTION_FIELD = "action"
OBSERVATION_FIELD = "observation"


# Space descriptions ----------------------------------------------------------------------------


def _number_to_json(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "-inf", "nan"
    return value


def _array_to_json(array: np.ndarray) -> Any:
    """A uniform array as one scalar, any other as nested lists; non-finite floats as strings."""
    flat = array.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return _number_to_json(flat[0].item())
    listed = array.tolist()
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        listed = _map_nested(listed, _number_to_json)
    return listed


def _map_nested(value: Any, fn: Any) -> Any:
    if isinstance(value, list):
        return [_map_nested(item, fn) for item in value]
    return fn(value)


def _array_from_json(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    value = _map_nested(value, lambda v: float(v) if isinstance(v, str) else v)
    array = np.asarray(value, dtype=dtype)
    if array.size == 0 and math.prod(shape) == 0:  # tolist() of a (0, 3) array is []: no shape left to read
        return array.reshape(shape)
    return np.broadcast_to(array, shape).copy() if array.shape != shape else array


@functools.singledispatch
def space_to_json(space: spaces.Space[Any], pickles: bool = False) -> dict[str, Any]:
    """Describe ``space`` as a JSON object that :func:`space_from_json` turns back into an equal space.

    Args:
        space: any of Gymnasium's spaces, nested as deep as they go.
        pickles: describe a space of your own (a subclass of ``gymnasium.spaces.Space`` that is
            none of Gymnasium's) by its pickle; only for a session that trusts pickles.

    Raises:
        UnsupportedSpaceError: a space of your own, without ``pickles``.

    Example:
        >>> space_to_json(spaces.Discrete(3))
        {'type': 'Discrete', 'n': 3, 'start': 0, 'dtype': 'int64'}
    """
    from . import user_spaces

    if pickles:
        return user_spaces.describe(space)
    raise user_spaces.no_json_form(space)


@space_to_json.register
def _(space: spaces.Box, pickles: bool = False) -> dict[str, Any]:
    return {
        "type": "Box",
        "shape": list(space.shape),
        "dtype": space.dtype.name,
        "low": _array_to_json(space.low),
        "high": _array_to_json(space.high),
    }


@space_to_json.register
def _(space: spaces.Discrete, pickles: bool = False) -> dict[str, Any]:
    return {"type": "Discrete", "n": int(space.n), "start": int(space.start), "dtype": space.dtype.name}


@space_to_json.register
def _(space: spaces.MultiDiscrete, pickles: bool = False) -> dict[str, Any]:
    return {
        "type": "MultiDiscrete",
        "nvec": space.nvec.tolist(),
        "start": space.start.tolist(),
        "dtype": space.dtype.name,
    }


@space_to_json.register
def _(space: spaces.MultiBinary, pickles: bool = False) -> dict[str, Any]:
    return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}


@space_to_json.register
def _(space: spaces.Text, pickles: bool = False) -> dict[str, Any]:
    return {
        "type": "Text",
        "min_length": space.min_length,
        "max_length": space.max_length,
        "charset": "".join(space.character_list),
    }


@space_to_json.register
def _(space: spaces.Dict, pickles: bool = False) -> dict[str, Any]:
    return {"type": "Dict", "spaces": {key: space_to_json(sub, pickles) for key, sub in space.spaces.items()}}


@space_to_json.register(
    spaces.Tuple
)  # the class itself: singledispatch takes no generic alias (spaces.Tuple[Any]) from an annotation
def _(space: spaces.Tuple[Any], pickles: bool = False) -> dict[str, Any]:
    return {"type": "Tuple", "spaces": [space_to_json(sub, pickles) for sub in space.spaces]}


@space_to_json.register(spaces.Graph)
@space_to_json.register(spaces.Sequence)
@space_to_json.register(spaces.OneOf)
def _(space: spaces.Space[Any], pickles: bool = False) -> dict[str, Any]:
    from . import dynamic  # loaded by the first such space: a plain env's import stays as small

    return dynamic.describe(space, pickles)


def _require(data: dict[str, Any], key: str, kind: str) -> Any:
    try:
        return data[key]
    except KeyError:
        raise SpaceCodecError(f"a {kind} space description needs {key!r}, got keys {sorted(data)}") from None


# A dtype as space_to_json writes it ("float32", "<u1"): never numpy's comma or tuple forms,
# whose parser evaluates Python literals and raises whatever they raise.
_DTYPE_NAME = re.compile(r"[<>|=]?(?!a\d*\Z)[A-Za-z][A-Za-z0-9]*")  # not "a8": numpy 2 deprecates it


def _dtype(data: dict[str, Any], default: str) -> np.dtype:
    name = data.get("dtype", default)
    if not isinstance(name, str) or not _DTYPE_NAME.fullmatch(name):
        raise SpaceCodecError(f"a space's dtype is a dtype name like 'float32', got {name!r}")
    dtype = np.dtype(name)
    if dtype.kind == "c" or (dtype.kind == "f" and dtype.itemsize > 8):
        # Their bounds (numpy scalars, not floats, from tolist()) have no JSON form to send back.
        raise SpaceCodecError(f"a space's dtype cannot be {dtype.name}: its bounds have no JSON form")
    return dtype


def _box_from_json(data: dict[str, Any], pickles: bool) -> spaces.Box:
    shape = tuple(int(n) for n in _require(data, "shape", "Box"))
    dtype = _dtype(data, "float32")
    low = _array_from_json(_require(data, "low", "Box"), shape, dtype)
    high = _array_from_json(_require(data, "high", "Box"), shape, dtype)
    return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def _dict_from_json(data: dict[str, Any], pickles: bool) -> spaces.Dict:
    subspaces = _require(data, "spaces", "Dict")
    # A plain dict would be sorted by key; keep the order the server declared.
    return spaces.Dict([(key, space_from_json(sub, pickles=pickles)) for key, sub in subspaces.items()])


def _elsewhere(module: str, name: str) -> Callable[[dict[str, Any], bool], spaces.Space[Any]]:
    """The builder ``name`` of ``module``, imported when a description first needs it."""

    def build(data: dict[str, Any], pickles: bool) -> spaces.Space[Any]:
        import importlib

        built: spaces.Space[Any] = getattr(importlib.import_module(module, __package__), name)(data, pickles)
        return built

    return build


# Each builder takes the description and whether pickled spaces may be read.
_FROM_JSON: dict[str, Callable[[dict[str, Any], bool], spaces.Space[Any]]] = {
    "Box": _box_from_json,
    "Discrete": lambda d, _: spaces.Discrete(
        int(_require(d, "n", "Discrete")), start=int(d.get("start", 0)), dtype=_dtype(d, "int64")
    ),
    "MultiDiscrete": lambda d, _: spaces.MultiDiscrete(
        np.asarray(_require(d, "nvec", "MultiDiscrete")),
        dtype=_dtype(d, "int64"),
        start=np.asarray(d["start"]) if "start" in d else None,
    ),
    "MultiBinary": lambda d, _: spaces.MultiBinary(_require(d, "n", "MultiBinary")),
    "Text": lambda d, _: spaces.Text(
        int(_require(d, "max_length", "Text")),
        min_length=int(d.get("min_length", 0)),
        charset=_require(d, "charset", "Text"),
    ),
    "Dict": _dict_from_json,
    "Tuple": lambda d, p: spaces.Tuple([space_from_json(sub, pickles=p) for sub in _require(d, "spaces", "Tuple")]),
    "Graph": _elsewhere(".dynamic", "graph_from_json"),
    "Sequence": _elsewhere(".dynamic", "sequence_from_json"),
    "OneOf": _elsewhere(".dynamic", "one_of_from_json"),
    "Pickled": _elsewhere(".user_spaces", "from_json"),
}


def space_from_json(data: dict[str, Any], *, pickles: bool = False) -> spaces.Space[Any]:
    """Build the space that :func:`space_to_json` described.

    Args:
        data: the description.
        pickles: read a pickled space of your own even if this process did not pickle it itself
            (unpickling runs code: only for a session that trusts pickles).

    Raises:
        SpaceCodecError: the description is malformed, names an unknown space type, or holds a
            pickle this process may not read.
    """
    if not isinstance(data, dict):
        raise SpaceCodecError(f"a space description must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    build = _FROM_JSON.get(kind) if isinstance(kind, str) else None  # a list would not even hash
    if build is None:
        raise SpaceCodecError(f"unknown space type {kind!r}; expected one of {sorted(_FROM_JSON)}")
    try:
        return build(data, pickles)
    except SpaceCodecError:
        raise
    except RecursionError:  # hostile nesting of Dict/Tuple: its repr would recurse as deep
        raise SpaceCodecError("a space description nested too deeply") from None
    # OverflowError: a number past int64 (n=10**30); MemoryError: a Box too big to allocate.
    except (TypeError, ValueError, AssertionError, OverflowError, MemoryError) as exc:
        raise SpaceCodecError(f"invalid {kind} space description {data!r}: {exc}") from exc


# Values ----------------------------------------------------------------------------------------


@functools.singledispatch
def encode(space: spaces.Space[Any], value: Any) -> Any:
    """Turn a value of ``space`` into plain JSON types (lists, numbers, strings, dicts)."""
    from . import user_spaces

    return user_spaces.encode(space, value)


@encode.register(spaces.Box)
@encode.register(spaces.MultiDiscrete)
@encode.register(spaces.MultiBinary)
def _(space: spaces.Space[Any], value: Any) -> Any:
    return np.asarray(value).tolist()


@encode.register
def _(space: spaces.Discrete, value: Any) -> Any:
    return int(value)


@encode.register
def _(space: spaces.Text, value: Any) -> Any:
    return str(value)


@encode.register
def _(space: spaces.Dict, value: Any) -> Any:
    return {key: encode(sub, value[key]) for key, sub in space.spaces.items()}


@encode.register(spaces.Tuple)
def _(space: spaces.Tuple[Any], value: Any) -> Any:
    return [encode(sub, item) for sub, item in zip(space.spaces, value, strict=True)]


@encode.register(spaces.Graph)
@encode.register(spaces.Sequence)
@encode.register(spaces.OneOf)
def _(space: spaces.Space[Any], value: Any) -> Any:
    from . import dynamic

    return dynamic.encode(space, value)


@functools.singledispatch
def decode(space: spaces.Space[Any], data: Any) -> Any:
    """Turn the JSON form of a value back into the value ``space`` expects (arrays of its dtype...).

    Raises:
        SpaceCodecError: ``data`` does not have the shape or type the space needs.
    """
    from . import user_spaces

    return user_spaces.decode(space, data)


@decode.register(spaces.Graph)
@decode.register(spaces.Sequence)
@decode.register(spaces.OneOf)
def _(space: spaces.Space[Any], data: Any) -> Any:
    from . import dynamic

    return dynamic.decode(space, data)


@decode.register(spaces.Box)
@decode.register(spaces.MultiDiscrete)
@decode.register(spaces.MultiBinary)
def _(space: spaces.Space[Any], data: Any) -> Any:
    try:
        with np.errstate(over="raise"):  # 65520 for float16 would be inf, and a warning
            array = np.asarray(data, dtype=space.dtype)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as exc:
        raise SpaceCodecError(f"expected {space.dtype} numbers of shape {space.shape}, got {data!r:.200}") from exc
    if array.shape != space.shape:
        raise SpaceCodecError(f"expected an array of shape {space.shape}, got shape {array.shape}")
    if array.dtype.kind in "iub" and not np.array_equal(array, np.asarray(data)):
        raise SpaceCodecError(f"expected integers for {space}, got {data!r:.200}")
    return array


@decode.register
def _(space: spaces.Discrete, data: Any) -> Any:
    if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data) or int(data) != data:
        raise SpaceCodecError(f"expected an integer for {space}, got {data!r:.200}")
    try:
        return space.dtype.type(data)
    except OverflowError as exc:
        raise SpaceCodecError(f"{data!r:.200} does not fit {space.dtype} for {space}") from exc


@decode.register
def _(space: spaces.Text, data: Any) -> Any:
    if not isinstance(data, str):
        raise SpaceCodecError(f"expected a string for {space}, got {type(data).__name__}")
    return data


@decode.register
def _(space: spaces.Dict, data: Any) -> Any:
    if not isinstance(data, dict):
        raise SpaceCodecError(f"expected an object with keys {list(space.spaces)}, got {type(data).__name__}")
    if data.keys() != space.spaces.keys():
        missing = [key for key in space.spaces if key not in data]
        extra = [key for key in data if key not in space.spaces]
        raise SpaceCodecError(f"object does not fit the Dict space: missing {missing}, unexpected {extra}")
    return {key: decode(sub, data[key]) for key, sub in space.spaces.items()}


@decode.register(spaces.Tuple)
def _(space: spaces.Tuple[Any], data: Any) -> Any:
    if not isinstance(data, list) or len(data) != len(space.spaces):
        raise SpaceCodecError(f"expected a list of {len(space.spaces)} items, got {data!r:.200}")
    return tuple(decode(sub, item) for sub, item in zip(space.spaces, data))


@functools.singledispatch
def mismatch(space: spaces.Space[Any], value: Any) -> str | None:
    """Why ``value`` is not a value of ``space``, or ``None`` when it is.

    As strict as the space's ``contains`` (and as a server decoding the value: a ``bool`` is no
    ``Discrete`` action, an array of floats no integer one), except that a ``Text`` value's
    characters are left to the server: its charset is often narrower than what it takes (a
    program may hold any Unicode character). A space of your own whose values travel pickled
    leaves them to its env, as Gymnasium's vector envs do (its ``contains`` is yours and need not
    take every value the env does).
    """
    from . import user_spaces  # Graph, Sequence, OneOf and spaces of your own come here

    if user_spaces.carries_pickled_values(space):
        return None
    try:
        inside = bool(space.contains(value))
    except Exception:  # a contains() that cannot handle the type: not a value of the space
        inside = False
    return None if inside else f"not a value of {space}"


@mismatch.register
def _(space: spaces.Discrete, value: Any) -> str | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, np.ndarray)):
        return f"expected an integer, got {type(value).__name__}"
    if not space.contains(value):
        return f"expected an integer in [{space.start}, {space.start + space.n})"
    return None


@mismatch.register(spaces.Box)
@mismatch.register(spaces.MultiDiscrete)
@mismatch.register(spaces.MultiBinary)
def _(space: spaces.Space[Any], value: Any) -> str | None:
    if isinstance(value, (str, bytes, dict)):
        return f"expected an array of shape {space.shape}, got {type(value).__name__}"
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return f"expected an array of shape {space.shape}"
    assert space.dtype is not None and space.shape is not None
    # What the server's decoder takes: numbers for float arrays, integers (or bools, as 0/1) for
    # integer Box and MultiBinary arrays, integers alone for MultiDiscrete (as for Discrete).
    kinds = "biuf" if space.dtype.kind == "f" else ("iu" if isinstance(space, spaces.MultiDiscrete) else "biu")
    if array.dtype.kind not in kinds:
        return f"expected {'numbers' if 'f' in kinds else 'integers'}, got an array of {array.dtype}"
    if array.shape != space.shape:
        return f"expected shape {space.shape}, got shape {array.shape}"
    if isinstance(space, spaces.MultiDiscrete):
        # What contains() checks, on the integers as given (exact in any integer dtype) and at a
        # fraction of its cost: a vector env checks a batch of Discrete actions this way per step.
        in_bounds = ((array >= space.start) & (array < space.start + space.nvec)).all()
        return None if in_bounds else "outside the bounds"
    with np.errstate(over="ignore", invalid="ignore"):  # out-of-range values fail contains() below
        inside = space.contains(array.astype(space.dtype))
    return None if inside else "outside the bounds"


@mismatch.register
def _(space: spaces.Text, value: Any) -> str | None:
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not space.min_length <= len(value) <= space.max_length:
        return f"expected {space.min_length} to {space.max_length} characters, got {len(value)}"
    return None


@mismatch.register
def _(space: spaces.Dict, value: Any) -> str | None:
    if not isinstance(value, dict):
        fields = ", ".join(f"{key!r}: ..." for key in space.spaces)
        return f"a Dict action is a dict of its fields, {{{fields}}}; got {type(value).__name__}"
    if value.keys() != space.spaces.keys():
        missing = [key for key in space.spaces if key not in value]
        extra = [key for key in value if key not in space.spaces]
        return f"expected the keys {list(space.spaces)}: missing {missing}, unexpected {extra}"
    for key, sub in space.spaces.items():
        problem = mismatch(sub, value[key])
        if problem is not None:
            return f"{key!r}: {problem}"
    return None


@mismatch.register(spaces.Tuple)
def _(space: spaces.Tuple[Any], value: Any) -> str | None:
    if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
        return f"expected a tuple of {len(space.spaces)} items"
    for index, (sub, item) in enumerate(zip(space.spaces, value)):
        problem = mismatch(sub, item)
        if problem is not None:
            return f"item {index}: {problem}"
    return None


def to_wire(space: spaces.Space[Any], value: Any, field: str) -> dict[str, Any]:
    """The JSON object that carries ``value`` on the wire (see the module docstring)."""
    if isinstance(space, spaces.Dict):
        wire: dict[str, Any] = encode(space, value)  # a Dict space's values encode to objects
        return wire
    return {field: encode(space, value)}


def from_wire(space: spaces.Space[Any], data: dict[str, Any], field: str) -> Any:
    """The value carried by the wire object ``data``; the inverse of :func:`to_wire`.

    Raises:
        SpaceCodecError: ``data`` does not fit ``space``.
    """
    if isinstance(space, spaces.Dict):
        return decode(space, data)
    if not isinstance(data, dict) or data.keys() != {field}:
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise SpaceCodecError(f"expected an object with the single field {field!r}, got {got}")
    return decode(space, data[field])


def jsonable(value: Any) -> Any:
    """Convert an ``info`` value to plain JSON types: numpy scalars and arrays become numbers and lists.

    Values JSON cannot carry are replaced by their ``repr`` so a step never fails on its info.
    """
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        items = value.tolist()
        # Numbers, booleans and strings are JSON as they are; complex, object or datetime items are not.
        return items if value.dtype.kind in "biufU" else jsonable(items)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
