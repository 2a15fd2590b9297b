"""Tests for openenv_gym.spaces.schema: OpenEnv's JSON schemas to Gymnasium spaces and wire values (pure, no I/O).

The schemas are the ones openenv-core's own models produce, as its server's /schema serves them.
"""

from __future__ import annotations

import enum
import re
import string
from typing import Any, Literal

import numpy as np
import pytest
from gymnasium import spaces
from openenv.core.env_server.serialization import serialize_observation  # a test dependency
from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, Field

from openenv_gym.errors import SpaceCodecError, UnsupportedSpaceError
from openenv_gym.spaces.schema import DEFAULT_TEXT_MAX_LENGTH, map_schema, openenv_spaces, schema_space

INF = np.inf
TEXT = spaces.Text(DEFAULT_TEXT_MAX_LENGTH, min_length=0, charset=string.printable)
FLOAT = spaces.Box(-INF, INF, shape=(), dtype=np.float64)
INT = spaces.Box(-INF, INF, shape=(), dtype=np.int64)


def action_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()  # what openenv-core's /schema serves for the action


# Models as OpenEnv env authors write them --------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Mode(str, enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Point(BaseModel):
    x: float
    y: int = Field(ge=0, le=3)


class KitchenSinkAction(Action):
    message: str
    short: str = Field(min_length=1, max_length=10)
    power: float = Field(ge=-1.0, le=1.0)
    ratio: float = Field(gt=0.0, lt=1.0)
    count: int
    natural: int = Field(ge=0)
    level: int = Field(ge=1, le=5)
    flag: bool
    choice: Literal[2, 3, 4]
    word: Literal["up", "down"]
    sparse: Literal[1, 5, 10]
    color: Color
    mode: Mode = Mode.SAFE
    maybe: float | None = None
    fixed: list[float] = Field(min_length=3, max_length=3)
    grid: list[list[int]] = Field(min_length=2, max_length=2)  # items of unknown length: not a Box
    bits: list[bool] = Field(min_length=4, max_length=4)
    pair: tuple[float, float]
    free: list[float] = Field(default_factory=list)
    target: Point
    extra: dict[str, Any] = Field(default_factory=dict)


def test_scalars_enums_and_bounds():
    """Every scalar kind maps to its space, bounds from (exclusive) minimum/maximum, in declaration order."""
    space, unmapped = schema_space(action_schema(KitchenSinkAction), "action")
    assert isinstance(space, spaces.Dict)
    assert list(space.spaces) == [
        "message",
        "short",
        "power",
        "ratio",
        "count",
        "natural",
        "level",
        "flag",
        "choice",
        "word",
        "sparse",
        "color",
        "mode",
        "maybe",
        "fixed",
        "grid",
        "bits",
        "pair",
        "free",
        "target",
    ]  # fmt: skip  (metadata, OpenEnv's base field, and the free-form extra are not there)
    expected = {
        "message": TEXT,
        "short": spaces.Text(10, min_length=1, charset=string.printable),
        "power": spaces.Box(-1.0, 1.0, shape=(), dtype=np.float64),
        "ratio": spaces.Box(np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0), shape=(), dtype=np.float64),
        "count": INT,
        "natural": spaces.Box(0, INF, shape=(), dtype=np.int64),
        "level": spaces.Discrete(5, start=1),
        "flag": spaces.Discrete(2),
        "choice": spaces.Discrete(3, start=2),  # contiguous integers stand for themselves
        "word": spaces.Discrete(2),  # 0 is "up", 1 is "down"
        "sparse": spaces.Discrete(3),  # 0, 1, 2 stand for 1, 5, 10
        "color": spaces.Discrete(3, start=1),
        "mode": spaces.Discrete(2),
        "maybe": FLOAT,
        "fixed": spaces.Box(-INF, INF, shape=(3,), dtype=np.float64),
        "grid": spaces.Tuple([spaces.Sequence(INT), spaces.Sequence(INT)]),
        "bits": spaces.MultiBinary(4),
        "pair": spaces.Box(-INF, INF, shape=(2,), dtype=np.float64),
        "free": spaces.Sequence(FLOAT),
        "target": spaces.Dict(x=FLOAT, y=spaces.Discrete(4)),
    }
    for name, sub in expected.items():
        assert space[name] == sub, name
    assert unmapped == {"extra": "free-form object (no declared fields)"}


def test_sampled_actions_are_valid_for_the_server_model():
    """Whatever the mapped space samples, its wire form passes the server's own pydantic validation."""
    mapped = map_schema(action_schema(KitchenSinkAction), "action")
    mapped.space.seed(0)
    for _ in range(20):
        wire = mapped.to_wire(mapped.space.sample())
        KitchenSinkAction.model_validate(wire)
        assert "extra" not in wire and "metadata" not in wire  # left to the server's defaults


def test_enum_and_bool_values_on_the_wire():
    """Discrete indices become the enum's values; strings and booleans are also accepted as given."""
    mapped = map_schema(action_schema(KitchenSinkAction), "action")
    action = mapped.space.sample()
    action.update(word=1, sparse=2, flag=1, choice=4, color=2, mode="fast", maybe=None)
    wire = mapped.to_wire(action)
    assert (wire["word"], wire["sparse"], wire["flag"], wire["choice"], wire["color"], wire["mode"]) == (
        "down",
        10,
        True,
        4,
        2,
        "fast",
    )
    assert wire["maybe"] is None  # Optional: None may be sent
    assert wire["bits"] == [bool(b) for b in action["bits"]]
    model = KitchenSinkAction.model_validate(wire)
    assert (model.word, model.sparse, model.flag, model.mode) == ("down", 10, True, Mode.FAST)
    with pytest.raises(SpaceCodecError, match="'sideways' is not one of"):
        mapped.to_wire({**action, "word": "sideways"})
    with pytest.raises(SpaceCodecError, match="field 'sparse'"):
        mapped.to_wire({**action, "sparse": 3})


class EchoLikeAction(Action):
    message: str
    loud: bool = False


def test_dict_actions_may_leave_out_optional_fields():
    """A Dict action is a plain dict; fields the server defaults may be left out, unknown ones are refused."""
    mapped = map_schema(action_schema(EchoLikeAction), "action")
    assert mapped.space == spaces.Dict(message=TEXT, loud=spaces.Discrete(2))
    assert mapped.to_wire({"message": "hi"}) == {"message": "hi"}
    assert mapped.to_wire({"message": "hi", "loud": 1}) == {"message": "hi", "loud": True}
    with pytest.raises(SpaceCodecError, match=r"unknown keys \['mesage'\]"):
        mapped.to_wire({"mesage": "hi"})
    with pytest.raises(SpaceCodecError, match=r"missing required keys \['message'\]"):
        mapped.to_wire({"loud": True})


class SingleAction(Action):
    action: int = Field(ge=0, le=2)


class SingleObservation(Observation):
    observation: list[float] = Field(default_factory=lambda: [0.0, 0.0], min_length=2, max_length=2)


def test_single_field_models_map_to_the_bare_space():
    """A model whose one field is named action/observation is that field's space, as on our wire."""
    action = map_schema(action_schema(SingleAction), "action")
    observation = map_schema(SingleObservation.model_json_schema(), "observation")
    assert action.space == spaces.Discrete(3) and action.field == "action"
    assert observation.space == spaces.Box(-INF, INF, shape=(2,), dtype=np.float64)
    assert action.to_wire(np.int64(2)) == {"action": 2}
    assert action.to_wire({"action": 1}) == {"action": 1}  # the wire form, as a dict, is accepted too
    data = serialize_observation(SingleObservation(observation=[0.5, -1.0], reward=None, done=True))
    assert data["reward"] is None and data["done"] is True  # beside the observation, not in it
    value = observation.from_wire(data["observation"])
    assert value.dtype == np.float64 and value.tolist() == [0.5, -1.0]


class Inner(BaseModel):
    depth: float = Field(ge=0.0)
    history: dict[str, float] = Field(default_factory=dict)


class Kind(str, enum.Enum):
    A = "a"
    B = "b"


class RichObservation(Observation):
    text: str = ""
    note: str | None = None
    score: float | None = None
    level: int | None = Field(default=3, ge=1, le=5)
    kind: Kind | None = None
    inner: Inner = Field(default_factory=lambda: Inner(depth=1.0))
    points: list[Inner] = Field(default_factory=list)
    anything: Any = None
    either: int | str = 0
    blob: dict[str, Any] = Field(default_factory=dict)


def test_observation_mapping_skips_base_fields_and_reports_unmapped():
    """done/reward/metadata are not in the space; unmapped fields are listed by dotted path, with reasons."""
    mapped = map_schema(RichObservation.model_json_schema(), "observation")
    assert list(mapped.space.spaces) == ["text", "note", "score", "level", "kind", "inner", "points"]
    assert mapped.space["inner"] == spaces.Dict(depth=spaces.Box(0.0, INF, shape=(), dtype=np.float64))
    assert mapped.space["points"] == spaces.Sequence(mapped.space["inner"])
    assert mapped.space["level"] == spaces.Discrete(5, start=1)
    assert mapped.space["kind"] == spaces.Discrete(2)
    assert mapped.unmapped == {
        "inner.history": "free-form object (no declared fields)",
        "points[].history": "free-form object (no declared fields)",
        "anything": "value of any type",
        "either": "union of several types (integer | string)",
        "blob": "free-form object (no declared fields)",
    }
    assert mapped.required_unmapped == ()


def test_observations_from_the_server_fit_the_space():
    """openenv-core's serialization of an observation decodes into the mapped space; nulls get fill values."""
    mapped = map_schema(RichObservation.model_json_schema(), "observation")
    first = serialize_observation(RichObservation())["observation"]
    value = mapped.from_wire(first)
    assert mapped.space.contains(value)
    # null -> the field's non-null default, else the zero value; free-form fields are dropped.
    assert (value["note"], value["score"].item(), value["level"], value["kind"]) == ("", 0.0, 3, 0)
    later = RichObservation(
        text="t", note="n", score=2.5, level=None, kind=Kind.B,
        inner=Inner(depth=0.5, history={"a": 1.0}), points=[Inner(depth=2.0), Inner(depth=3.0)], blob={"k": [1]},
    )  # fmt: skip
    value = mapped.from_wire(serialize_observation(later)["observation"])
    assert mapped.space.contains(value)
    assert (value["note"], value["score"].item(), value["level"], value["kind"]) == ("n", 2.5, 3, 1)
    assert value["inner"] == {"depth": np.float64(0.5)} and len(value["points"]) == 2
    with pytest.raises(SpaceCodecError, match=re.escape("field 'inner.depth'")):
        mapped.from_wire({**first, "inner": {"depth": "deep"}})


class NeedsFreeForm(Action):
    command: str
    payload: dict[str, Any]
    options: dict[str, Any] = Field(default_factory=dict)


class NeedsNested(Action):
    target: Inner = Field(default_factory=lambda: Inner(depth=0.0))
    required_target: NeedsFreeForm


def test_required_action_fields_without_a_space_raise():
    """A required action field that cannot be mapped is an error naming it; optional ones are left out."""
    mapped = map_schema(action_schema(NeedsFreeForm), "action")
    assert mapped.space == spaces.Dict(command=TEXT)
    assert mapped.unmapped == {
        "payload": "free-form object (no declared fields)",
        "options": "free-form object (no declared fields)",
    }
    assert mapped.required_unmapped == ("payload",)
    schemas = {"action": action_schema(NeedsFreeForm), "observation": SingleObservation.model_json_schema()}
    with pytest.raises(UnsupportedSpaceError, match=r"requires action fields that have no Gymnasium space \(payload: "):
        openenv_spaces(schemas)
    # A nested model that cannot be built without its unmapped field is itself unmapped.
    nested = map_schema(action_schema(NeedsNested), "action")
    assert nested.space == spaces.Dict(target=spaces.Dict(depth=spaces.Box(0.0, INF, shape=(), dtype=np.float64)))
    assert nested.unmapped == {
        "target.history": "free-form object (no declared fields)",
        "required_target": "its required field 'payload' is not mapped: free-form object (no declared fields)",
    }
    assert nested.required_unmapped == ("required_target",)


class Tree(BaseModel):
    label: str
    children: list[Tree] = Field(default_factory=list)


class TreeObservation(Observation):
    tree: Tree | None = None
    size: int = 0


class OnlyFreeForm(Observation):
    data: dict[str, Any] = Field(default_factory=dict)


def test_recursive_models_and_empty_observations():
    """A recursive model is reported, not followed forever; an observation with nothing mapped is refused."""
    mapped = map_schema(TreeObservation.model_json_schema(), "observation")
    assert mapped.space == spaces.Dict(tree=spaces.Dict(label=TEXT), size=INT)
    assert mapped.unmapped == {"tree.children": "items not mapped: recursive model (Tree)"}
    schemas = {"action": action_schema(EchoLikeAction), "observation": OnlyFreeForm.model_json_schema()}
    with pytest.raises(UnsupportedSpaceError, match=r"no field of the observation has a Gymnasium space \(data: "):
        openenv_spaces(schemas)
    # Definitions that alias each other in a cycle (a hostile /schema) end too.
    cycle = {
        "type": "object",
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
        "properties": {"loop": {"$ref": "#/$defs/A"}, "size": {"type": "integer"}},
    }
    mapped = map_schema(cycle, "observation")
    assert mapped.space == spaces.Dict(size=INT)
    assert mapped.unmapped == {"loop": "recursive model (A)"}


def test_schema_variants_other_tools_write():
    """Draft-style schemas: type lists with null, allOf-wrapped $ref, definitions, const, boolean exclusive bounds."""
    schema = {
        "type": "object",
        "definitions": {"P": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 1}}}},
        "properties": {
            "a": {"type": ["number", "null"], "minimum": 0, "exclusiveMinimum": True, "maximum": 2},
            "b": {"allOf": [{"$ref": "#/definitions/P"}], "description": "wrapped"},
            "c": {"const": "only"},
            "d": {"oneOf": [{"const": "x"}, {"const": "y"}, {"type": "null"}]},
            "e": {"type": "integer", "exclusiveMaximum": 10.5, "exclusiveMinimum": -0.5},
        },
    }
    space, unmapped = schema_space(schema, "observation")
    assert unmapped == {}
    assert space == spaces.Dict(
        a=spaces.Box(np.nextafter(0.0, 1.0), 2.0, shape=(), dtype=np.float64),
        b=spaces.Dict(v=spaces.Discrete(2)),
        c=spaces.Discrete(1),
        d=spaces.Discrete(2),
        e=spaces.Discrete(11),
    )
    mapped = map_schema(schema, "observation")
    assert mapped.from_wire({"a": None, "b": {"v": 1}, "c": "only", "d": "y", "e": 10}) == {
        "a": np.nextafter(0.0, 1.0),
        "b": {"v": 1},
        "c": 0,
        "d": 1,
        "e": 10,
    }  # fmt: skip  (a null number becomes its zero clipped into the bounds)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": "x", "properties": {"a": {"type": "integer"}}},  # found by atheris: TypeError
        {"definitions": [1], "properties": {"a": {"type": "integer"}}},
        {"allOf": 3},
        {"$ref": 5},
        {"properties": {"a": {"allOf": 7}}},
        {"properties": {"a": {"$ref": [1]}}},
        {"properties": "x"},
    ],
)
def test_a_malformed_schema_maps_to_no_space_and_never_raises(schema: dict) -> None:
    """A server's /schema is remote input: whatever its shape, map_schema reports, never raises."""
    for role in ("action", "observation"):
        mapped = map_schema(schema, role)
        assert isinstance(mapped.space, spaces.Dict)
        assert mapped.unmapped or mapped.space.spaces
