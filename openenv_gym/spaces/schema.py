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
from collections.abc import Mapping
from typing import Any

from gymnasium import spaces

from ..errors import SpaceCodecError, UnsupportedSpaceError
from .codec import ACTION_FIELD, OBSERVATION_FIELD
from .schema_mapper import BASE_FIELDS, DEFAULT_TEXT_MAX_LENGTH, TEXT_CHARSET, SchemaMapper, _Unmapped
from .schema_nodes import DictNode, Node

__all__ = [
    "BASE_FIELDS",
    "DEFAULT_TEXT_MAX_LENGTH",
    "TEXT_CHARSET",
    "SchemaSpace",
    "map_schema",
    "openenv_spaces",
    "schema_space",
]


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
    _node: Node = dataclasses.field(repr=False)

    def to_wire(self, value: Any) -> dict[str, Any]:
        """The JSON object that carries the action ``value`` (see the module docstring).

        Raises:
            SpaceCodecError: ``value`` does not fit the space.
        """
        if self.field is None:
            wire: dict[str, Any] = self._node.encode(value, "")  # the node of a whole model: an object
            return wire
        if isinstance(value, Mapping) and not isinstance(self._node, DictNode) and set(value) == {self.field}:
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
    mapper = SchemaMapper(schema if isinstance(schema, dict) else {}, role)
    field = None
    try:
        root = mapper.resolve(schema)
        if not root.get("properties"):
            raise _Unmapped("the model declares no fields" if root.get("type") == "object" else "not an object schema")
        model = mapper.model(root)
        node: Node = model
        declared = [name for name in root["properties"] if name not in BASE_FIELDS[role]]
        if declared == [role] and role in model.fields:
            field, node = role, model.fields[role]
    except (_Unmapped, TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        # A malformed schema (a server's /schema is remote input) maps to no space, never an error.
        mapper.unmapped["(root)"] = exc.reason if isinstance(exc, _Unmapped) else f"malformed schema: {exc!r:.200}"
        if role == ACTION_FIELD:
            mapper.required_unmapped.append("(root)")
        node = DictNode([], set())
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
