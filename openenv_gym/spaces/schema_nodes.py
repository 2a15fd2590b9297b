"""The nodes of a mapped JSON schema: one per schema, each holding its Gymnasium space and the
conversions between the space's values and the JSON on the wire (no I/O).

:mod:`.schema_mapper` builds them from a schema; :class:`~.schema.SchemaSpace` holds the root one.
The conversions follow the rules in :mod:`openenv_gym.spaces.schema`'s docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from ..errors import SpaceCodecError
from .codec import decode

__all__ = [
    "MISSING",
    "BoxNode",
    "DictNode",
    "DiscreteNode",
    "MultiBinaryNode",
    "Node",
    "SequenceNode",
    "TextNode",
    "TupleNode",
    "join_path",
    "same_json",
]

#: A schema with no ``default``.
MISSING: Any = object()


def _where(path: str) -> str:
    return f"field {path!r}" if path else "value"


class Node:
    """A mapped schema: its space, and its values to and from JSON (``path`` names the field in errors)."""

    space: spaces.Space[Any]
    nullable = False  # the schema allows null (Optional)
    default: Any = MISSING  # the schema's default, as JSON

    def encode(self, value: Any, path: str) -> Any:
        """A value of the space as JSON (None stays None where the schema allows null)."""
        if value is None and self.nullable:
            return None
        return self.encode_value(value, path)

    def encode_value(self, value: Any, path: str) -> Any:
        raise NotImplementedError

    def decode(self, data: Any, path: str) -> Any:
        """The value of the space carried by the JSON ``data``; null becomes the fill value."""
        if data is None:
            if self.nullable:
                return self.fill(path)
            raise SpaceCodecError(f"{_where(path)}: got null, which its schema does not allow")
        return self.decode_value(data, path)

    def decode_value(self, data: Any, path: str) -> Any:
        raise NotImplementedError

    def missing(self, path: str) -> Any:
        """The value of a field absent from an observation object."""
        if self.nullable or self.default is not MISSING:
            return self.fill(path)
        raise SpaceCodecError(f"{_where(path)} is missing from the observation")

    def fill(self, path: str) -> Any:
        if self.default is not MISSING and self.default is not None:
            try:
                return self.decode_value(self.default, path)
            except SpaceCodecError:
                pass
        return self.zero()

    def zero(self) -> Any:
        raise NotImplementedError


class BoxNode(Node):
    """Numbers and fixed arrays of numbers, as lists of numbers on the wire."""

    space: spaces.Box

    def __init__(self, space: spaces.Box) -> None:
        self.space = space

    def encode_value(self, value: Any, path: str) -> Any:
        try:
            array = np.asarray(value)
            cast = array.astype(self.space.dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SpaceCodecError(f"{_where(path)}: expected numbers for {self.space}, got {value!r:.200}") from exc
        if cast.shape != self.space.shape:
            raise SpaceCodecError(f"{_where(path)}: expected shape {self.space.shape}, got {cast.shape}")
        if cast.dtype.kind == "i" and array.dtype.kind not in "iub" and not np.array_equal(cast, array):
            raise SpaceCodecError(f"{_where(path)}: expected integers for {self.space}, got {value!r:.200}")
        return cast.tolist()

    def decode_value(self, data: Any, path: str) -> Any:
        try:
            return decode(self.space, data)
        except SpaceCodecError as exc:
            raise SpaceCodecError(f"{_where(path)}: {exc}") from exc

    def zero(self) -> Any:
        box = self.space
        return np.asarray(np.clip(np.zeros(box.shape, dtype=box.dtype), box.low, box.high), dtype=box.dtype)


def same_json(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1`` and ``"1"`` is not ``1``."""
    if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        return isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)) and bool(a) == bool(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


class DiscreteNode(Node):
    """Discrete values that are the wire values themselves, or indices into ``values``."""

    space: spaces.Discrete

    def __init__(self, space: spaces.Discrete, values: list[Any] | None = None) -> None:
        self.space = space
        self.values = values

    def encode_value(self, value: Any, path: str) -> Any:
        if self.values is None:
            return self._index(value, path)
        if isinstance(value, str):  # an enum member by its own name
            if not any(same_json(value, member) for member in self.values):
                raise SpaceCodecError(f"{_where(path)}: {value!r} is not one of {self.values}")
            return value
        index = self._index(value, path) - int(self.space.start)
        if not 0 <= index < len(self.values):
            raise SpaceCodecError(f"{_where(path)}: {value!r} is not in {self.space} (standing for {self.values})")
        return self.values[index]

    def _index(self, value: Any, path: str) -> int:
        try:
            index = int(value)
        except (TypeError, ValueError) as exc:
            raise SpaceCodecError(f"{_where(path)}: expected an integer of {self.space}, got {value!r:.200}") from exc
        if index != value:
            raise SpaceCodecError(f"{_where(path)}: expected an integer of {self.space}, got {value!r:.200}")
        return index

    def decode_value(self, data: Any, path: str) -> Any:
        if self.values is None:
            try:
                return decode(self.space, data)
            except SpaceCodecError as exc:
                raise SpaceCodecError(f"{_where(path)}: {exc}") from exc
        for index, member in enumerate(self.values):
            if same_json(data, member):
                return self.space.dtype.type(int(self.space.start) + index)
        raise SpaceCodecError(f"{_where(path)}: {data!r:.200} is not one of {self.values}")

    def zero(self) -> Any:
        return self.space.dtype.type(self.space.start)


class TextNode(Node):
    """Strings."""

    space: spaces.Text

    def __init__(self, space: spaces.Text) -> None:
        self.space = space

    def encode_value(self, value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise SpaceCodecError(f"{_where(path)}: expected a string, got {type(value).__name__}")
        return value

    def decode_value(self, data: Any, path: str) -> Any:
        if not isinstance(data, str):
            raise SpaceCodecError(f"{_where(path)}: expected a string, got {type(data).__name__}")
        return data

    def zero(self) -> Any:
        return ""


class MultiBinaryNode(Node):
    """Fixed arrays of booleans: 0/1 in Gymnasium, ``false``/``true`` on the wire."""

    space: spaces.MultiBinary

    def __init__(self, space: spaces.MultiBinary) -> None:
        self.space = space

    def encode_value(self, value: Any, path: str) -> Any:
        array = np.asarray(value)
        if array.shape != self.space.shape or not np.isin(array, (0, 1)).all():
            expected = f"0/1 values of shape {self.space.shape}"
            raise SpaceCodecError(f"{_where(path)}: expected {expected}, got {value!r:.200}")
        return array.astype(bool).tolist()

    def decode_value(self, data: Any, path: str) -> Any:
        array = np.asarray(data)
        if array.shape != self.space.shape or array.dtype != np.bool_:
            raise SpaceCodecError(f"{_where(path)}: expected booleans of shape {self.space.shape}, got {data!r:.200}")
        return array.astype(self.space.dtype)

    def zero(self) -> Any:
        return np.zeros(self.space.shape, dtype=self.space.dtype)


class DictNode(Node):
    """A model: its mapped fields as a ``Dict``; unmapped fields are never sent and dropped when read."""

    space: spaces.Dict

    def __init__(self, fields: list[tuple[str, Node]], required: set[str]) -> None:
        self.fields = dict(fields)
        self.required = {name for name in required if name in self.fields}
        self.space = spaces.Dict([(name, node.space) for name, node in fields])

    def encode_value(self, value: Any, path: str) -> Any:
        if not isinstance(value, Mapping):
            raise SpaceCodecError(
                f"{_where(path)}: expected a dict with keys {list(self.fields)}, got {type(value).__name__}"
            )
        unknown = [key for key in value if key not in self.fields]
        missing = [name for name in self.required if name not in value]
        if unknown or missing:
            raise SpaceCodecError(
                f"{_where(path)}: a dict of the keys {list(self.fields)} is expected"
                + (f"; unknown keys {unknown}" if unknown else "")
                + (f"; missing required keys {missing}" if missing else "")
            )
        return {
            name: node.encode(value[name], join_path(path, name)) for name, node in self.fields.items() if name in value
        }

    def decode_value(self, data: Any, path: str) -> Any:
        if not isinstance(data, dict):
            raise SpaceCodecError(f"{_where(path)}: expected an object, got {type(data).__name__}")
        return {
            name: node.decode(data[name], join_path(path, name))
            if name in data
            else node.missing(join_path(path, name))
            for name, node in self.fields.items()
        }

    def zero(self) -> Any:
        return {name: node.fill(name) for name, node in self.fields.items()}


class TupleNode(Node):
    """Fixed-length arrays of mixed items, as ``Tuple`` values."""

    space: spaces.Tuple[Any]

    def __init__(self, items: list[Node]) -> None:
        self.items = items
        self.space = spaces.Tuple([item.space for item in items])

    def encode_value(self, value: Any, path: str) -> Any:
        values = list(value) if isinstance(value, (list, tuple)) else None
        if values is None or len(values) != len(self.items):
            raise SpaceCodecError(f"{_where(path)}: expected a sequence of {len(self.items)} items, got {value!r:.200}")
        return [item.encode(v, f"{path}[{i}]") for i, (item, v) in enumerate(zip(self.items, values))]

    def decode_value(self, data: Any, path: str) -> Any:
        if not isinstance(data, list) or len(data) != len(self.items):
            raise SpaceCodecError(f"{_where(path)}: expected a list of {len(self.items)} items, got {data!r:.200}")
        return tuple(item.decode(d, f"{path}[{i}]") for i, (item, d) in enumerate(zip(self.items, data)))

    def zero(self) -> Any:
        return tuple(item.fill("") for item in self.items)


class SequenceNode(Node):
    """A list of any length: a tuple of item values (Gymnasium's ``Sequence`` without ``stack``)."""

    space: spaces.Sequence

    def __init__(self, item: Node) -> None:
        self.item = item
        self.space = spaces.Sequence(item.space)

    def encode_value(self, value: Any, path: str) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise SpaceCodecError(f"{_where(path)}: expected a sequence, got {type(value).__name__}")
        return [self.item.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]

    def decode_value(self, data: Any, path: str) -> Any:
        if not isinstance(data, list):
            raise SpaceCodecError(f"{_where(path)}: expected a list, got {type(data).__name__}")
        return tuple(self.item.decode(d, f"{path}[{i}]") for i, d in enumerate(data))

    def zero(self) -> Any:
        return ()


def join_path(path: str, name: str) -> str:
    """The dotted path of field ``name`` inside ``path`` (``"inner.history"``)."""
    return f"{path}.{name}" if path else name
