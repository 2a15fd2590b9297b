"""JSON schemas to nodes: how each kind of schema maps to a Gymnasium space (no I/O).

:class:`SchemaMapper` resolves ``$ref``/``$defs``, maps each schema to a node of
:mod:`.schema_nodes`, and records the fields it cannot map and why; the rules are listed in
:mod:`openenv_gym.spaces.schema`'s docstring.
"""

from __future__ import annotations

import math
import string
from typing import Any, TypeGuard

import numpy as np
from gymnasium import spaces

from ..errors import OpenEnvGymError
from .codec import ACTION_FIELD, OBSERVATION_FIELD
from .schema_nodes import (
    BoxNode,
    DictNode,
    DiscreteNode,
    MultiBinaryNode,
    Node,
    SequenceNode,
    TextNode,
    TupleNode,
    join_path,
    same_json,
)

__all__ = ["BASE_FIELDS", "DEFAULT_TEXT_MAX_LENGTH", "TEXT_CHARSET", "SchemaMapper"]

#: The longest string a ``Text`` space built from a schema without ``maxLength`` allows.
DEFAULT_TEXT_MAX_LENGTH = 65536
#: The characters of every ``Text`` space built from a schema.
TEXT_CHARSET = string.printable
#: The fields OpenEnv's ``Action`` / ``Observation`` base models add, which are not part of the space.
BASE_FIELDS = {ACTION_FIELD: frozenset({"metadata"}), OBSERVATION_FIELD: frozenset({"done", "reward", "metadata"})}

_INT64 = np.iinfo(np.int64)


class _Unmapped(OpenEnvGymError):
    """A schema without a space; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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


class SchemaMapper:
    """Maps the schemas of one root (its ``$defs``) for one ``role``, collecting what it cannot map."""

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

    def map(self, schema: Any, path: str) -> Node:
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

    def _map(self, schema: dict[str, Any], path: str) -> Node:
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
            return DiscreteNode(spaces.Discrete(2), [False, True])
        if kind == "array":
            return self._array(schema, path)
        if kind == "object" or "properties" in schema:
            return self._object(schema, path)
        if kind == "null":
            raise _Unmapped("always null")
        if kind is None:
            raise _Unmapped("value of any type")
        raise _Unmapped(f"unsupported type {kind!r}")

    def _union(self, schema: dict[str, Any], key: str, path: str) -> Node:
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

    def _enum(self, values: list[Any]) -> Node:
        values = [v for v in values if v is not None]
        if not values:
            raise _Unmapped("always null")
        if any(isinstance(v, (dict, list)) for v in values):
            raise _Unmapped("enum of objects or arrays")
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        if len(ints) == len(values) and len(set(ints)) == max(ints) - min(ints) + 1:
            if _INT64.min <= min(ints) and max(ints) <= _INT64.max:
                return DiscreteNode(spaces.Discrete(len(set(ints)), start=min(ints)))
        unique: list[Any] = []
        for value in values:
            if not any(same_json(value, seen) for seen in unique):
                unique.append(value)
        return DiscreteNode(spaces.Discrete(len(unique)), unique)

    def _string(self, schema: dict[str, Any]) -> Node:
        min_length = int(schema.get("minLength", 0))
        max_length = int(schema.get("maxLength", max(DEFAULT_TEXT_MAX_LENGTH, min_length)))
        if max_length < min_length:
            raise _Unmapped(f"empty length range [{min_length}, {max_length}]")
        return TextNode(spaces.Text(max_length, min_length=min_length, charset=TEXT_CHARSET))

    def _number(self, schema: dict[str, Any], integer: bool) -> Node:
        low, high = _bounds(schema, integer)
        if low > high:
            raise _Unmapped(f"empty range [{low}, {high}]")
        if integer:
            finite = _INT64.min <= low and high <= _INT64.max
            if finite and int(high) - int(low) < _INT64.max:  # both bounds, and n fits int64
                return DiscreteNode(spaces.Discrete(int(high) - int(low) + 1, start=int(low)))
            box_low = int(low) if _INT64.min <= low <= _INT64.max else -math.inf
            box_high = int(high) if _INT64.min <= high <= _INT64.max else math.inf
            return BoxNode(spaces.Box(low=box_low, high=box_high, shape=(), dtype=np.int64))
        return BoxNode(spaces.Box(low=np.float64(low), high=np.float64(high), shape=(), dtype=np.float64))

    def _array(self, schema: dict[str, Any], path: str) -> Node:
        count = schema.get("minItems")
        if "prefixItems" in schema:
            items = list(schema["prefixItems"])
            if count != len(items) or schema.get("maxItems") != len(items):
                raise _Unmapped("tuple of variable length")
            nodes = [self._item(item, f"{path}[{i}]") for i, item in enumerate(items)]
            boxes = [node for node in nodes if isinstance(node, BoxNode) and not node.nullable]
            if (
                len(boxes) == len(nodes)
                and nodes
                and all(b.space.shape == () and b.space.dtype == boxes[0].space.dtype for b in boxes)
            ):
                low = np.array([b.space.low for b in boxes], dtype=boxes[0].space.dtype)
                high = np.array([b.space.high for b in boxes], dtype=boxes[0].space.dtype)
                return BoxNode(spaces.Box(low=low, high=high, dtype=boxes[0].space.dtype))
            return TupleNode(nodes)
        if "items" not in schema:
            raise _Unmapped("array of untyped items")
        if not isinstance(count, int) or schema.get("maxItems") != count:
            return SequenceNode(self._item(schema["items"], f"{path}[]"))
        item = self._item(schema["items"], f"{path}[]")
        if isinstance(item, BoxNode) and not item.nullable:
            box = item.space
            assert isinstance(box, spaces.Box)
            shape = (count, *box.shape)
            return BoxNode(
                spaces.Box(low=np.broadcast_to(box.low, shape), high=np.broadcast_to(box.high, shape), dtype=box.dtype)
            )
        if isinstance(item, MultiBinaryNode) and not item.nullable:
            return MultiBinaryNode(spaces.MultiBinary([count, *item.space.shape]))
        if isinstance(item, DiscreteNode) and item.values == [False, True] and not item.nullable:
            return MultiBinaryNode(spaces.MultiBinary(count))
        if count == 0:
            raise _Unmapped("array that is always empty")
        return TupleNode([item] + [self._item(schema["items"], f"{path}[]") for _ in range(count - 1)])

    def _item(self, schema: Any, path: str) -> Node:
        try:
            return self.map(schema, path)
        except _Unmapped as exc:
            raise _Unmapped(f"items not mapped: {exc.reason}") from None

    def model(self, schema: dict[str, Any]) -> DictNode:
        """The node of the top-level model (resolved): its fields, less OpenEnv's base fields.

        Raises:
            _Unmapped: it declares no fields.
        """
        return self._object(schema, "", top=True)

    def _object(self, schema: dict[str, Any], path: str, top: bool = False) -> DictNode:
        properties = schema.get("properties")
        if not properties:
            raise _Unmapped("free-form object (no declared fields)")
        required = set(schema.get("required", []))
        skipped = BASE_FIELDS[self.role] if top else frozenset()
        fields: list[tuple[str, Node]] = []
        for name, sub in properties.items():
            if name in skipped:
                continue
            field_path = join_path(path, name)
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
        return DictNode(fields, required)
