"""What reading each dialect's request shares: field checks that name the field, chat content made of
parts, function tools and the call's parameters, each in the observation's form (see :mod:`.forms`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ModelCallError
from .forms import Dialect

__all__ = ["Fields", "chat_content", "function_tool"]


class Fields:
    """Checks of one dialect's fields; each failure is a :class:`ModelCallError` naming the field."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def error(self, where: str, problem: str) -> ModelCallError:
        return ModelCallError(f"{where}: {problem} ({self.dialect.value} request)", self.dialect.value)

    def object(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(where, f"expected an object, got {_kind(value)}")
        return value

    def list(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(where, f"expected a list, got {_kind(value)}")
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.error(where, f"expected a string, got {_kind(value)}")
        return value

    def name(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(where, f"expected a non-empty string, got {_kind(value)}")
        return value

    def params(self, body: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
        """The call's parameters: ``model`` and ``stream`` always, then each of ``names`` (the
        dialect's field -> the observation's name) the request set, checked by its kind."""
        model = body.get("model")
        if model is not None:
            self.string(model, "model")
        stream = body.get("stream", False)
        if stream is not None and not isinstance(stream, bool):
            raise self.error("stream", f"expected true or false, got {_kind(stream)}")
        params: dict[str, Any] = {"model": model, "stream": bool(stream)}
        for field, name in names.items():
            value = body.get(field)
            if value is not None:
                params[name] = self._param(name, value, field)
        return params

    def _param(self, name: str, value: Any, field: str) -> Any:
        if name in ("temperature", "top_p"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.error(field, f"expected a number, got {_kind(value)}")
        elif name == "max_tokens":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise self.error(field, f"expected a positive integer, got {value!r:.40}")
        elif name == "stop":
            stops = [value] if isinstance(value, str) else value
            if not isinstance(stops, list) or not all(isinstance(stop, str) for stop in stops):
                raise self.error(field, "expected a string or a list of strings")
            return list(stops)
        elif name == "parallel_tool_calls" and not isinstance(value, bool):
            raise self.error(field, f"expected true or false, got {_kind(value)}")
        return value

    def tool_choice(self, choice: Any, where: str = "tool_choice") -> Any:
        """Chat completions' ``tool_choice`` (Responses' is the same but for a flat ``name``)."""
        if choice in ("auto", "none", "required"):
            return choice
        if isinstance(choice, Mapping) and choice.get("type") == "function":
            function = choice.get("function", choice)
            name = self.name(function.get("name") if isinstance(function, Mapping) else None, f"{where}.name")
            return {"type": "function", "function": {"name": name}}
        raise self.error(where, f"expected 'auto', 'none', 'required' or a function, got {choice!r:.80}")


def function_tool(fields: Fields, name: Any, description: Any, parameters: Any, where: str) -> dict[str, Any]:
    """An OpenAI function tool, from its name, description and JSON schema (an empty object schema when none)."""
    if description is not None:
        fields.string(description, f"{where}.description")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {
            "name": fields.name(name, f"{where}.name"),
            "description": description or "",
            "parameters": dict(fields.object(parameters, f"{where}.parameters")),
        },
    }


def chat_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A message's content from its chat parts: one string when every part is text (joined by a newline,
    as a chat template would put them one after another), else the parts."""
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
