"""Gymnasium spaces built from the pydantic JSON schemas an OpenEnv server publishes; no I/O.

openenv-gym's servers publish their exact Gymnasium spaces in ``/schema["spaces"]``. Servers built
with OpenEnv itself publish only the JSON schemas pydantic makes of their models
(``/schema["action"]``, ``/schema["observation"]``). :func:`map_schema` turns such a schema into a
space, and gives the conversions between the space's values and the JSON objects on the wire.

Mapping rules (``$ref``/``$defs`` are resolved; ``allOf`` with one member is that member):

==============================================  ===============================================
JSON schema                                     Gymnasium space
==============================================  ===============================================
``string`` (``minLength``, ``maxLength``)       ``Text`` of ``string.printable``, lengths
                                                ``minLength`` (else 0) to ``maxLength`` (else
                                                :data:`DEFAULT_TEXT_MAX_LENGTH`)
``number``                                      ``Box((), float64)``; bounds from ``minimum`` /
                                                ``maximum`` / ``exclusiveMinimum`` /
                                                ``exclusiveMaximum``, else ``-inf`` / ``inf``
``integer`` with a lower and an upper bound     ``Discrete(high - low + 1, start=low)``
``integer`` otherwise                           ``Box((), int64)``, a missing bound infinite
``boolean``                                     ``Discrete(2)``: 0 is ``false``, 1 is ``true``
``enum`` / ``const`` (``Literal``, ``Enum``)    ``Discrete(n)``: contiguous integers stand for
                                                themselves, any other values by their index in
                                                the enum (0 is the first)
``array`` with ``minItems == maxItems == n``    numbers: ``Box((n, ...))`` (nested fixed arrays
                                                add dimensions, item bounds apply); booleans:
                                                ``MultiBinary((n, ...))``; other items:
                                                ``Tuple`` of ``n`` item spaces
``array`` of any other length                   ``Sequence`` of the item space (values are
                                                tuples of items); length bounds are not part
                                                of the space
``prefixItems`` (``tuple[...]``)                ``Box((n,))`` if all plain numbers of one kind,
                                                else ``Tuple``
``object`` with ``properties`` (a model)        ``Dict`` in declaration order
``anyOf`` / ``oneOf`` ``[X, null]`` (Optional)  the space of ``X``; see "Nulls" below
==============================================  ===============================================

A list without a fixed length cannot be a Box, so it becomes a ``Sequence``: the data is kept,
but fixed-shape learners (Stable-Baselines3, ``flatten``) do not take it; declaring the pydantic
field with ``min_length == max_length`` makes it a Box. (Not ``stack=True``: Gymnasium 1.4's
``Sequence.contains`` then warns for every scalar item.)

Not mapped, with the reason recorded in :attr:`SchemaSpace.unmapped`: free-form objects
(``dict[str, Any]``), ``Any``, unions of several types, recursive models, and arrays or tuples
whose items are not mapped. What happens to an unmapped field:

* observation: it is left out of the space (nested fields too, by dotted path such as
  ``"inner.history"``) and dropped from every observation; the caller warns once, naming them.
* action, optional field: it is left out of the space and never sent, so the server uses its
  default.
* action, required field: listed in :attr:`SchemaSpace.required_unmapped`; no valid action can be
  built, so :func:`openenv_spaces` raises. A nested model whose required field cannot be mapped is
  itself unmapped (reported under the model's path).

:func:`openenv_spaces` also raises when no observation field at all can be mapped (Gymnasium
refuses an empty ``Dict`` space).

OpenEnv's base fields are skipped: ``done``, ``reward`` and ``metadata`` of an observation (the
server sends reward and done beside the observation, never in it) and ``metadata`` of an action.
A model whose only other field is named ``action`` (``observation``) maps to that field's space,
as openenv-gym's own wire form does (``{"action": 1}`` carries the ``Discrete`` value ``1``).

Nulls: an Optional observation field that arrives as ``null`` (or a field that is missing)
becomes its schema ``default`` when that is not null, else the space's zero value (zeros clipped
to the Box bounds, the first Discrete value, ``""``). Gymnasium spaces have no "absent" value.

Actions are values of the space; a ``Dict`` action is a plain ``dict`` and may leave out fields
the server does not require. String enums also take the string itself, booleans ``True``/``False``,
and a single-field action may be given in its wire form (``{"action": 1}``).
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np
from gymnasium import spaces

from ..errors import OpenEnvGymError, SpaceCodecError, UnsupportedSpaceError
from .codec import ACTION_FIELD, OBSERVATION_FIELD, decode

__all__ = [
    "BASE_FIELDS",
    "DEFAULT_TEXT_MAX_LENGTH",
    "TEXT_CHARSET",
    "SchemaSpace",
    "map_schema",
    "openenv_spaces",
    "schema_space",
]

#: The longest string a ``Text`` space built from a schema without ``maxLength`` allows.
DEFAULT_TEXT_MAX_LENGTH = 65536
#: The characters of every ``Text`` space built from a schema.
TEXT_CHARSET = string.printable
#: The fields OpenEnv's ``Action`` / ``Observation`` base models add, which are not part of the space.
BASE_FIELDS = {ACTION_FIELD: frozenset({"metadata"}), OBSERVATION_FIELD: frozenset({"done", "reward", "metadata"})}

_MISSING: Any = object()
_INT64 = np.iinfo(np.int64)


class _Unmapped(OpenEnvGymError):
    """A schema without a space; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _where(path: str) -> str:
    return f"field {path!r}" if path else "value"


# Nodes: one per mapped schema, each holding its space and its value <-> JSON conversions --------


class _Node:
    space: spaces.Space[Any]
    nullable = False  # the schema allows null (Optional)
    default: Any = _MISSING  # the schema's default, as JSON

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
        if self.nullable or self.default is not _MISSING:
            return self.fill(path)
        raise SpaceCodecError(f"{_where(path)} is missing from the observation")

    def fill(self, path: str) -> Any:
        if self.default is not _MISSING and self.default is not None:
            try:
                return self.decode_value(self.default, path)
            except SpaceCodecError:
                pass
        return self.zero()

    def zero(self) -> Any:
        raise NotImplementedError


class _BoxNode(_Node):
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


def _same(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1`` and ``"1"`` is not ``1``."""
    if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        return isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)) and bool(a) == bool(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


class _DiscreteNode(_Node):
    """Discrete values that are the wire values themselves, or indices into ``values``."""

    space: spaces.Discrete

    def __init__(self, space: spaces.Discrete, values: list[Any] | None = None) -> None:
        self.space = space
        self.values = values

    def encode_value(self, value: Any, path: str) -> Any:
        if self.values is None:
            return self._index(value, path)
        if isinstance(value, str):  # an enum member by its own name
            if not any(_same(value, member) for member in self.values):
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
            if _same(data, member):
                return self.space.dtype.type(int(self.space.start) + index)
        raise SpaceCodecError(f"{_where(path)}: {data!r:.200} is not one of {self.values}")

    def zero(self) -> Any:
        return self.space.dtype.type(self.space.start)


class _TextNode(_Node):
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


class _MultiBinaryNode(_Node):
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


class _DictNode(_Node):
    """A model: its mapped fields as a ``Dict``; unmapped fields are never sent and dropped when read."""

    space: spaces.Dict

    def __init__(self, fields: list[tuple[str, _Node]], required: set[str]) -> None:
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
            name: node.encode(value[name], _join(path, name)) for name, node in self.fields.items() if name in value
        }

    def decode_value(self, data: Any, path: str) -> Any:
        if not isinstance(data, dict):
            raise SpaceCodecError(f"{_where(path)}: expected an object, got {type(data).__name__}")
        return {
            name: node.decode(data[name], _join(path, name)) if name in data else node.missing(_join(path, name))
            for name, node in self.fields.items()
        }

    def zero(self) -> Any:
        return {name: node.fill(name) for name, node in self.fields.items()}


class _TupleNode(_Node):
    space: spaces.Tuple[Any]

    def __init__(self, items: list[_Node]) -> None:
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


class _SequenceNode(_Node):
    """A list of any length: a tuple of item values (Gymnasium's ``Sequence`` without ``stack``)."""

    space: spaces.Sequence

    def __init__(self, item: _Node) -> None:
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


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# Schemas -> nodes --------------------------------------------------------------------------------


def _bounds(schema: dict[str, Any], integer: bool) -> tuple[float, float]:
    """Inclusive bounds from JSON Schema's (exclusive) minimum and maximum; infinite when absent."""
    low, high = -math.inf, math.inf

    def above(x: float) -> float:
        return float(math.floor(x) + 1) if integer else float(np.nextafter(x, math.inf))

    def below(x: float) -> float:
        return float(math.ceil(x) - 1) if integer else float(np.nextafter(x, -math.inf))

    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    ex_min, ex_max = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if _is_number(minimum):
        low = above(minimum) if ex_min is True else (float(math.ceil(minimum)) if integer else float(minimum))
    if _is_number(ex_min):
        low = max(low, above(ex_min))
    if _is_number(maximum):
        high = below(maximum) if ex_max is True else (float(math.floor(maximum)) if integer else float(maximum))
    if _is_number(ex_max):
        high = min(high, below(ex_max))
    return low, high


def _is_number(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "null" or schema.get("const", 0) is None)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _Mapper:
    def __init__(self, root: dict[str, Any], role: str) -> None:
        self.defs = {
            **_mapping(root.get("definitions")),
            **_mapping(root.get("$defs")),
        }
        self.role = role
        self.unmapped: dict[str, str] = {}
        self.required_unmapped: list[str] = []
        self.refs: list[str] = []  # the $refs being mapped, against recursion

    def resolve(self, schema: Any, aliases: tuple[str, ...] = ()) -> dict[str, Any]:
        """``schema`` with a ``$ref`` (or a single-member ``allOf``) replaced by its target, siblings kept.

        ``aliases``: the definitions already followed to get here, so a cycle of aliases ends.
        """
        if not isinstance(schema, dict):
            raise _Unmapped(f"not a schema: {schema!r:.80}")
        if "allOf" in schema and len(schema["allOf"]) == 1:
            rest = {key: value for key, value in schema.items() if key != "allOf"}
            return {**self.resolve(schema["allOf"][0]), **rest}
        ref = schema.get("$ref")
        if ref is None:
            return schema
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in self.defs:
            raise _Unmapped(f"unresolvable reference {ref!r}")
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        target = self.defs[name]
        if isinstance(target, dict) and "$ref" in target:  # an alias of another definition
            if target["$ref"] == ref or ref in aliases:
                raise _Unmapped(f"recursive model ({name})")
            target = {key: value for key, value in self.resolve(target, (*aliases, ref)).items() if key != "$ref"}
        return {**target, **rest, "$ref": ref}

    def map(self, schema: Any, path: str) -> _Node:
        schema = self.resolve(schema)
        ref = schema.get("$ref")
        if ref is not None:
            if ref in self.refs:
                raise _Unmapped(f"recursive model ({ref.rsplit('/', 1)[-1]})")
            self.refs.append(ref)
        try:
            node = self._map(schema, path)
        finally:
            if ref is not None:
                self.refs.pop()
        if "default" in schema:
            node.default = schema["default"]
        return node

    def _map(self, schema: dict[str, Any], path: str) -> _Node:
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self._union(schema, key, path)
        kind = schema.get("type")
        if isinstance(kind, list):  # {"type": ["number", "null"]}
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1:
                raise _Unmapped(f"union of several types ({' | '.join(kinds)})")
            node = self._map({**schema, "type": kinds[0]}, path)
            node.nullable = node.nullable or len(kinds) < len(kind)
            return node
        if "const" in schema:
            return self._enum([schema["const"]])
        if "enum" in schema:
            return self._enum(list(schema["enum"]))
        if kind == "string":
            return self._string(schema)
        if kind in ("number", "integer"):
            return self._number(schema, kind == "integer")
        if kind == "boolean":
            return _DiscreteNode(spaces.Discrete(2), [False, True])
        if kind == "array":
            return self._array(schema, path)
        if kind == "object" or "properties" in schema:
            return self._object(schema, path)
        if kind == "null":
            raise _Unmapped("always null")
        if kind is None:
            raise _Unmapped("value of any type")
        raise _Unmapped(f"unsupported type {kind!r}")

    def _union(self, schema: dict[str, Any], key: str, path: str) -> _Node:
        options = [self.resolve(option) for option in schema[key]]
        non_null = [option for option in options if not _is_null(option)]
        rest = {k: v for k, v in schema.items() if k not in (key, "default", "$ref")}
        if len(non_null) == 1:
            node = self.map({**rest, **non_null[0]}, path)
        elif non_null and all("const" in o or "enum" in o for o in non_null):  # Literal["a"] | Literal["b"]
            node = self._enum([v for o in non_null for v in (o["enum"] if "enum" in o else [o["const"]])])
        else:
            kinds = [str(o.get("type", o.get("title", "?"))) for o in non_null]
            raise _Unmapped(f"union of several types ({' | '.join(kinds)})")
        node.nullable = node.nullable or len(non_null) < len(options)
        return node

    def _enum(self, values: list[Any]) -> _Node:
        values = [v for v in values if v is not None]
        if not values:
            raise _Unmapped("always null")
        if any(isinstance(v, (dict, list)) for v in values):
            raise _Unmapped("enum of objects or arrays")
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        if len(ints) == len(values) and len(set(ints)) == max(ints) - min(ints) + 1:
            if _INT64.min <= min(ints) and max(ints) <= _INT64.max:
                return _DiscreteNode(spaces.Discrete(len(set(ints)), start=min(ints)))
        unique: list[Any] = []
        for value in values:
            if not any(_same(value, seen) for seen in unique):
                unique.append(value)
        return _DiscreteNode(spaces.Discrete(len(unique)), unique)

    def _string(self, schema: dict[str, Any]) -> _Node:
        min_length = int(schema.get("minLength", 0))
        max_length = int(schema.get("maxLength", max(DEFAULT_TEXT_MAX_LENGTH, min_length)))
        if max_length < min_length:
            raise _Unmapped(f"empty length range [{min_length}, {max_length}]")
        return _TextNode(spaces.Text(max_length, min_length=min_length, charset=TEXT_CHARSET))

    def _number(self, schema: dict[str, Any], integer: bool) -> _Node:
        low, high = _bounds(schema, integer)
        if low > high:
            raise _Unmapped(f"empty range [{low}, {high}]")
        if integer:
            finite = _INT64.min <= low and high <= _INT64.max
            if finite and int(high) - int(low) < _INT64.max:  # both bounds, and n fits int64
                return _DiscreteNode(spaces.Discrete(int(high) - int(low) + 1, start=int(low)))
            box_low = int(low) if _INT64.min <= low <= _INT64.max else -math.inf
            box_high = int(high) if _INT64.min <= high <= _INT64.max else math.inf
            return _BoxNode(spaces.Box(low=box_low, high=box_high, shape=(), dtype=np.int64))
        return _BoxNode(spaces.Box(low=np.float64(low), high=np.float64(high), shape=(), dtype=np.float64))

    def _array(self, schema: dict[str, Any], path: str) -> _Node:
        count = schema.get("minItems")
        if "prefixItems" in schema:
            items = list(schema["prefixItems"])
            if count != len(items) or schema.get("maxItems") != len(items):
                raise _Unmapped("tuple of variable length")
            nodes = [self._item(item, f"{path}[{i}]") for i, item in enumerate(items)]
            boxes = [node for node in nodes if isinstance(node, _BoxNode) and not node.nullable]
            if (
                len(boxes) == len(nodes)
                and nodes
                and all(b.space.shape == () and b.space.dtype == boxes[0].space.dtype for b in boxes)
            ):
                low = np.array([b.space.low for b in boxes], dtype=boxes[0].space.dtype)
                high = np.array([b.space.high for b in boxes], dtype=boxes[0].space.dtype)
                return _BoxNode(spaces.Box(low=low, high=high, dtype=boxes[0].space.dtype))
            return _TupleNode(nodes)
        if "items" not in schema:
            raise _Unmapped("array of untyped items")
        if not isinstance(count, int) or schema.get("maxItems") != count:
            return _SequenceNode(self._item(schema["items"], f"{path}[]"))
        item = self._item(schema["items"], f"{path}[]")
        if isinstance(item, _BoxNode) and not item.nullable:
            box = item.space
            assert isinstance(box, spaces.Box)
            shape = (count, *box.shape)
            return _BoxNode(
                spaces.Box(low=np.broadcast_to(box.low, shape), high=np.broadcast_to(box.high, shape), dtype=box.dtype)
            )
        if isinstance(item, _MultiBinaryNode) and not item.nullable:
            return _MultiBinaryNode(spaces.MultiBinary([count, *item.space.shape]))
        if isinstance(item, _DiscreteNode) and item.values == [False, True] and not item.nullable:
            return _MultiBinaryNode(spaces.MultiBinary(count))
        if count == 0:
            raise _Unmapped("array that is always empty")
        return _TupleNode([item] + [self._item(schema["items"], f"{path}[]") for _ in range(count - 1)])

    def _item(self, schema: Any, path: str) -> _Node:
        try:
            return self.map(schema, path)
        except _Unmapped as exc:
            raise _Unmapped(f"items not mapped: {exc.reason}") from None

    def _object(self, schema: dict[str, Any], path: str, top: bool = False) -> _DictNode:
        properties = schema.get("properties")
        if not properties:
            raise _Unmapped("free-form object (no declared fields)")
        required = set(schema.get("required", []))
        skipped = BASE_FIELDS[self.role] if top else frozenset()
        fields: list[tuple[str, _Node]] = []
        for name, sub in properties.items():
            if name in skipped:
                continue
            field_path = _join(path, name)
            before = set(self.unmapped)
            try:
                fields.append((name, self.map(sub, field_path)))
            except _Unmapped as exc:
                for key in set(self.unmapped) - before:  # what the failed field's own fields reported
                    del self.unmapped[key]
                if self.role == ACTION_FIELD and name in required and not top:
                    # The enclosing model cannot be built without it.
                    raise _Unmapped(f"its required field {name!r} is not mapped: {exc.reason}") from None
                self.unmapped[field_path] = exc.reason
                if self.role == ACTION_FIELD and name in required:
                    self.required_unmapped.append(field_path)
        return _DictNode(fields, required)


# The public face ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SchemaSpace:
    """The space mapped from one JSON schema, and the wire conversions of its values.

    Attributes:
        role: ``"action"`` or ``"observation"``.
        space: the Gymnasium space.
        unmapped: the fields that have no space, by dotted path, with the reason.
        required_unmapped: the action fields among them that the server requires.
        field: the single wire field the space stands for (``"action"``), or ``None`` for a ``Dict``
            of the model's fields.
    """

    role: str
    space: spaces.Space[Any]
    unmapped: dict[str, str]
    required_unmapped: tuple[str, ...]
    field: str | None
    _node: _Node = dataclasses.field(repr=False)

    def to_wire(self, value: Any) -> dict[str, Any]:
        """The JSON object that carries the action ``value`` (see the module docstring).

        Raises:
            SpaceCodecError: ``value`` does not fit the space.
        """
        if self.field is None:
            wire: dict[str, Any] = self._node.encode(value, "")  # the node of a whole model: an object
            return wire
        if isinstance(value, Mapping) and not isinstance(self._node, _DictNode) and set(value) == {self.field}:
            value = value[self.field]  # given in its wire form
        return {self.field: self._node.encode(value, self.field)}

    def from_wire(self, data: Any) -> Any:
        """The value of the space carried by the observation object ``data``; unmapped fields dropped.

        Raises:
            SpaceCodecError: ``data`` does not fit the schema.
        """
        if not isinstance(data, dict):
            raise SpaceCodecError(f"expected a JSON object, got {type(data).__name__}")
        if self.field is None:
            return self._node.decode_value(data, "")
        if self.field not in data:
            return self._node.missing(self.field)
        return self._node.decode(data[self.field], self.field)


def map_schema(schema: dict[str, Any], role: str) -> SchemaSpace:
    """Map the pydantic JSON schema of an OpenEnv action or observation model to a space.

    Never raises for fields it cannot map: they are listed in ``unmapped`` (and, for required action
    fields, in ``required_unmapped``). See the module docstring for the rules.

    Args:
        schema: ``/schema["action"]`` or ``/schema["observation"]`` of an OpenEnv server.
        role: ``"action"`` or ``"observation"``: which base fields to skip and how unmapped
            fields are treated.

    Example:
        >>> schema = {"type": "object", "required": ["direction"], "properties": {
        ...     "direction": {"enum": ["left", "right"], "type": "string"},
        ...     "metadata": {"type": "object", "additionalProperties": True}}}
        >>> mapped = map_schema(schema, "action")
        >>> mapped.space, mapped.unmapped
        (Dict('direction': Discrete(2)), {})
        >>> mapped.to_wire({"direction": 1})
        {'direction': 'right'}
    """
    if role not in BASE_FIELDS:
        raise ValueError(f"role must be 'action' or 'observation', got {role!r}")
    mapper = _Mapper(schema if isinstance(schema, dict) else {}, role)
    field = None
    try:
        root = mapper.resolve(schema)
        if not root.get("properties"):
            raise _Unmapped("the model declares no fields" if root.get("type") == "object" else "not an object schema")
        model = mapper._object(root, "", top=True)
        node: _Node = model
        declared = [name for name in root["properties"] if name not in BASE_FIELDS[role]]
        if declared == [role] and role in model.fields:
            field, node = role, model.fields[role]
    except (_Unmapped, TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        # A malformed schema (a server's /schema is remote input) maps to no space, never an error.
        mapper.unmapped["(root)"] = exc.reason if isinstance(exc, _Unmapped) else f"malformed schema: {exc!r:.200}"
        if role == ACTION_FIELD:
            mapper.required_unmapped.append("(root)")
        node = _DictNode([], set())
    return SchemaSpace(role, node.space, dict(mapper.unmapped), tuple(mapper.required_unmapped), field, node)


def schema_space(schema: dict[str, Any], role: str) -> tuple[spaces.Space[Any], dict[str, str]]:
    """``(space, unmapped)`` for a JSON schema: :func:`map_schema` without the wire conversions."""
    mapped = map_schema(schema, role)
    return mapped.space, mapped.unmapped


def openenv_spaces(schemas: dict[str, Any]) -> tuple[SchemaSpace, SchemaSpace]:
    """The action and observation spaces of an OpenEnv server's ``/schema`` answer.

    Raises:
        UnsupportedSpaceError: a field the server requires in every action has no space (its
            name and the reason are in the message), so no action could be sent.
        SpaceCodecError: ``schemas`` lacks the ``action`` or ``observation`` schema.
    """
    missing = [role for role in (ACTION_FIELD, OBSERVATION_FIELD) if not isinstance(schemas.get(role), dict)]
    if missing:
        raise SpaceCodecError(f"/schema has no JSON schema for {' and '.join(missing)}; got keys {sorted(schemas)}")
    action = map_schema(schemas[ACTION_FIELD], ACTION_FIELD)
    if action.required_unmapped:
        listed = "; ".join(f"{path}: {action.unmapped[path]}" for path in action.required_unmapped)
        raise UnsupportedSpaceError(
            f"the server requires action fields that have no Gymnasium space ({listed}), "
            "so no valid action can be built from its JSON schema"
        )
    observation = map_schema(schemas[OBSERVATION_FIELD], OBSERVATION_FIELD)
    if isinstance(observation.space, spaces.Dict) and not observation.space.spaces:
        listed = "; ".join(f"{path}: {reason}" for path, reason in observation.unmapped.items()) or "it has none"
        raise UnsupportedSpaceError(f"no field of the observation has a Gymnasium space ({listed})")
    return action, observation
