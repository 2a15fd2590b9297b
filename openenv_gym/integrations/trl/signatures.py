"""Tool methods from input schemas: the signature and docstring TRL shows the model are the env's own."""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Mapping
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal, Union

if TYPE_CHECKING:
    from .environment import ToolEnvironment

__all__ = ["annotation_of", "tool_method"]


_JSON_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def annotation_of(schema: Any) -> Any:
    """The Python type whose JSON schema, as transformers' ``get_json_schema`` writes it, is nearest ``schema``.

    Example:
        >>> annotation_of({"type": "array", "items": {"type": "integer"}})
        list[int]
        >>> annotation_of({"type": "string", "enum": ["a", "b"]})
        typing.Literal['a', 'b']
    """
    if not isinstance(schema, Mapping):
        return Any
    values = schema.get("enum")
    if "const" in schema:
        values = [schema["const"]]
    if isinstance(values, list) and values and all(type(v) in (str, int, float, bool, type(None)) for v in values):
        return Literal[tuple(values)]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return Union[tuple(annotation_of(option) for option in options)]  # noqa: UP007 - built from a list
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return Union[tuple(annotation_of({**schema, "type": one}) for one in kind)]  # noqa: UP007
    if kind == "array":
        items = schema.get("items")
        # list[...] of a type found at run time: the alias that subscription makes, made directly.
        return GenericAlias(list, annotation_of(items)) if isinstance(items, Mapping) and items else list
    if kind == "object":
        extra = schema.get("additionalProperties")
        return GenericAlias(dict, (str, annotation_of(extra))) if isinstance(extra, Mapping) and extra else dict
    return _JSON_SCALARS.get(kind, Any) if isinstance(kind, str) else Any


def _docstring(description: str, arguments: list[tuple[str, str]]) -> str:
    """A Google-style docstring: ``description``, then ``Args:`` with one line (or more, indented) each."""
    lines = [description.strip() or "Call this tool."]
    if arguments:
        lines += ["", "Args:"]
        for name, text in arguments:
            # Continuation lines deeper than the names, so none reads as the next argument.
            body = "\n        ".join(part.strip() for part in text.strip().splitlines() if part.strip())
            lines.append(f"    {name}: {body}")
    return "\n".join(lines)


def tool_method(tool: Mapping[str, Any], owner: str = "ToolEnvironment") -> Callable[..., str]:
    """A method that calls the env's ``tool``, with the signature and docstring its input schema gives.

    Every parameter is keyword-only (TRL calls tools with keywords), in the schema's order; one
    the schema does not require defaults to its ``default`` (or ``None``), but a call forwards
    only the arguments given: the server applies its own defaults and checks every argument.

    Raises:
        ValueError: a parameter name that cannot be a Python parameter (``"class"``, ``"a-b"``).
    """
    name = str(tool["name"])
    schema = tool.get("input_schema", tool.get("inputSchema")) or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    documented: list[tuple[str, str]] = []
    for parameter, prop in properties.items():
        if not parameter.isidentifier() or keyword.iskeyword(parameter):
            raise ValueError(f"tool {name!r}: its parameter {parameter!r} cannot be the name of a Python parameter")
        prop = prop if isinstance(prop, Mapping) else {}
        annotation = annotation_of(prop)
        default = inspect.Parameter.empty if parameter in required else prop.get("default")
        parameters.append(
            inspect.Parameter(parameter, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
        annotations[parameter] = annotation
        # transformers wants a description for every parameter; the env may give none.
        documented.append((parameter, str(prop.get("description") or prop.get("title") or parameter)))

    def call(self: ToolEnvironment, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    call.__name__ = name
    call.__qualname__ = f"{owner}.{name}"
    call.__doc__ = _docstring(str(tool.get("description") or ""), documented)
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = {**annotations, "return": str}
    return call
