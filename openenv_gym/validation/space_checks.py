"""The spaces check of ``openenv-gym validate``: the published Gymnasium spaces read back as the JSON they were published as."""

from __future__ import annotations

from typing import Any

from ..errors import ClientError
from .access import get_json, one_line, short
from .result import CheckResult
from .target import Subject

__all__ = ["check_spaces_round_trip", "describe_space", "json_difference"]


def _numbers(value: Any) -> Any:
    """A JSON number, list of numbers or ``"inf"``-style string as floats for numpy; ``None`` if it holds other things."""
    import numpy as np

    def convert(item: Any) -> Any:
        if isinstance(item, list):
            return [convert(part) for part in item]
        if isinstance(item, str):
            return float(item)  # "inf", "-inf", "nan"; anything else raises ValueError
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return item
        raise ValueError(item)

    try:
        return np.asarray(convert(value), dtype=np.float64)
    except (ValueError, TypeError):
        return None


def describe_space(space: Any) -> str:
    """A space in a few words: its kind and shape, not its bounds or charset."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return f"Box(shape={space.shape}, {space.dtype})"
    if isinstance(space, spaces.Text):
        return f"Text({space.min_length}..{space.max_length})"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{key}: {describe_space(sub)}" for key, sub in space.spaces.items()) + ")"
    if isinstance(space, spaces.Tuple):
        return "Tuple(" + ", ".join(describe_space(sub) for sub in space.spaces) + ")"
    return str(space)


def json_difference(published: Any, again: Any, path: str) -> str | None:
    """Where the JSON a space was published as and the JSON of the space read from it differ in meaning.

    Form does not count: a key left out that reads as its default, an array written out whose
    every item is the same number, ``"float"`` for ``"float64"``. A key that is lost, or a value
    that is read as another one, does.

    Example:
        >>> json_difference({"type": "Box", "low": [0, 0]}, {"type": "Box", "low": 0.0}, "spaces.action")
        >>> json_difference({"type": "Discrete", "n": 2.5}, {"type": "Discrete", "n": 2}, "spaces.action")
        'spaces.action.n: published 2.5, read back as 2'
    """
    import numpy as np

    if isinstance(published, dict) and isinstance(again, dict):
        kind = published.get("type", "space")
        for key, value in published.items():
            if key not in again:
                return f"{path}.{key}: not part of a {kind} description, lost in the round trip"
            difference = json_difference(value, again[key], f"{path}.{key}")
            if difference is not None:
                return difference
        return None
    if published == again:
        return None
    if path.endswith(".dtype") and isinstance(published, str) and isinstance(again, str):
        try:
            if np.dtype(published) == np.dtype(again):
                return None
        except TypeError:
            pass
    left, right = _numbers(published), _numbers(again)
    if left is not None and right is not None:
        try:
            left, right = np.broadcast_arrays(left, right)
        except ValueError:  # shapes that do not broadcast
            pass
        else:
            if np.array_equal(left, right, equal_nan=True):
                return None
    return f"{path}: published {short(published, 60)}, read back as {short(again, 60)}"


def _round_trip(role: str, description: Any) -> tuple[Any, str | None]:
    """The space a description reads as, and what goes wrong in its round trip (``None``: nothing)."""
    from ..spaces import space_from_json, space_to_json

    path = f"spaces.{role}"
    try:
        space = space_from_json(description)
    except Exception as exc:  # any decoding error is the description's
        return None, f"{path} does not read as a space: {one_line(exc)}"
    try:
        again = space_to_json(space)
    except Exception as exc:
        return space, f"{path} reads as {space}, which has no JSON form: {one_line(exc)}"
    difference = json_difference(description, again, path)
    if difference is not None:
        return space, difference
    if space_from_json(again) != space:
        return space, f"{path}: {space} written as JSON reads back as another space"
    return space, None


def check_spaces_round_trip(subject: Subject) -> CheckResult:
    """The Gymnasium spaces in ``/schema`` read as spaces whose JSON says the same (and match the manifest's)."""
    from ..spaces import space_from_json
    from ..tool_face import offers_tools

    name = "spaces round trip"
    try:
        schema = get_json(subject, "/schema")
    except ClientError as exc:
        return CheckResult.failed(name, f"/schema: {one_line(exc)}")
    published = schema.get("spaces") if isinstance(schema, dict) else None
    if not published:
        if offers_tools(schema):
            return CheckResult.skipped(
                name, "a tool env without Gymnasium spaces: its Gymnasium face takes tool calls as text"
            )
        return CheckResult.skipped(
            name,
            "/schema publishes no Gymnasium spaces (OpenEnv's servers publish JSON schemas only): "
            "the Gymnasium face maps them from the JSON schemas",
        )
    if not isinstance(published, dict) or not {"action", "observation"} <= published.keys():
        return CheckResult.failed(name, f"/schema's spaces must hold 'action' and 'observation': {short(published)}")
    found = {}
    for role in ("action", "observation"):
        space, problem = _round_trip(role, published[role])
        if problem is not None:
            return CheckResult.failed(name, problem)
        found[role] = space
    manifest_spaces = subject.manifest.spaces if subject.manifest is not None else None
    if manifest_spaces:
        for role in ("action", "observation"):
            if space_from_json(manifest_spaces[role]) != found[role]:
                return CheckResult.failed(
                    name,
                    f"openenv.yaml's spaces.{role} is not /schema's: {space_from_json(manifest_spaces[role])} "
                    f"against {found[role]}",
                )
    action, observation = describe_space(found["action"]), describe_space(found["observation"])
    return CheckResult.passed(name, f"action {action}, observation {observation}: the JSON read back says the same")
