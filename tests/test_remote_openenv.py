"""openenv/Remote-v0: any OpenEnv-protocol server as a Gymnasium env, spaces mapped from its JSON schemas.

The mapping is tested on the JSON schemas openenv-core's own models produce; the envs end to end
on openenv-core's real server (FastAPI under uvicorn, ``tests/openenv_core_server.py``).
"""

from __future__ import annotations

import enum
import re
import string
import warnings
from collections.abc import Iterator
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from openenv.core.env_server.serialization import serialize_observation  # a test dependency
from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, Field

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import SpaceCodecError, UnsupportedSpaceError
from openenv_gym.providers import ProcessProvider
from openenv_gym.spaces.schema import DEFAULT_TEXT_MAX_LENGTH, map_schema, openenv_spaces, schema_space
from tests.utils import openenv_core_servers

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


def test_remote_v0_needs_a_url():
    """Remote-v0 attaches to running servers: without base_url(s) it says so."""
    with pytest.raises(ValueError, match="RemoteEnv needs base_url="):
        gym.make("openenv/Remote-v0")
    with pytest.raises(ValueError, match=r"needs server= .* or base_urls="):
        gym.make_vec("openenv/Remote-v0", num_envs=2)
    with pytest.raises(ValueError, match="not both"):
        gym.make_vec("openenv/Remote-v0", num_envs=2, base_url="http://127.0.0.1:1", base_urls=["http://127.0.0.1:1"])


# End to end, on openenv-core's own server ---------------------------------------------------------

SERVERS = ("echo", "cartpole", "typed-cartpole", "grid")


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with openenv_core_servers(SERVERS) as started:
        yield started


@pytest.mark.slow
def test_echo_through_remote_v0(urls):
    """openenv-core's echo env: Dict spaces from its schema, dict actions, float rewards, done -> terminated."""
    env = gym.make("openenv/Remote-v0", base_url=urls["echo"])
    try:
        assert env.action_space == spaces.Dict(message=TEXT)
        assert env.observation_space == spaces.Dict(echoed_message=TEXT, message_length=INT)
        obs, info = env.reset(seed=1)
        assert obs == {"echoed_message": "", "message_length": 0} and info == {}
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = env.step({"message": "hi"})
        assert obs["echoed_message"] == "hi" and obs["message_length"] == 2
        assert type(reward) is float and reward == pytest.approx(0.2)
        assert (terminated, truncated, info) == (False, False, {})
        obs, reward, terminated, truncated, _ = env.step({"message": "bye"})
        assert (terminated, truncated) == (True, False)  # OpenEnv's done is Gymnasium's terminated
        assert env.unwrapped.state()["step_count"] == 2
    finally:
        env.close()


@pytest.mark.slow
def test_grid_quirks_null_rewards_and_warnings(urls):
    """$defs, enums, Optional, a bool, list of models, free-form dicts; reward null is 0.0 until the goal."""
    with pytest.warns(UserWarning, match="no Gymnasium space") as caught:
        env = gym.make("openenv/Remote-v0", base_url=urls["grid"])
    (warning,) = [w for w in caught if "openenv-gym" in str(w.message)]  # one warning naming them all
    assert "action.options: free-form object" in str(warning.message)
    assert "observation.debug: free-form object" in str(warning.message)
    try:
        position = spaces.Dict(x=spaces.Discrete(5), y=spaces.Discrete(5))
        assert env.action_space == spaces.Dict(direction=spaces.Discrete(4), sprint=spaces.Discrete(2), note=TEXT)
        assert env.observation_space == spaces.Dict(
            position=position,
            last_direction=spaces.Discrete(4),
            visited=spaces.Sequence(position),
            distance=spaces.Box(0.0, INF, shape=(), dtype=np.float64),
        )
        obs, _ = env.reset(seed=0)
        assert obs["position"] == {"x": 0, "y": 0} and obs["last_direction"] == 0  # null: the first member
        assert obs["distance"] == 8.0 and len(obs["visited"]) == 1
        # right = 3 by index, "down" by name; sprint as an index or a bool; note may be left out or None.
        path = [{"direction": 3, "sprint": 1}, {"direction": "right", "sprint": True, "note": None},
                {"direction": "down", "sprint": True, "note": "almost"}, {"direction": "down"}]  # fmt: skip
        rewards, ends = [], []
        for action in path:
            obs, reward, terminated, truncated, _ = env.step(action)
            assert env.observation_space.contains(obs)
            rewards.append(reward)
            ends.append((terminated, truncated))
        assert rewards == [0.0, 0.0, 0.0, 0.0] and ends[-1] == (False, False)
        obs, reward, terminated, truncated, _ = env.step({"direction": "down"})
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert obs["position"] == {"x": 4, "y": 4} and obs["last_direction"] == 1 and len(obs["visited"]) == 6
    finally:
        env.close()


@pytest.mark.slow
def test_untyped_cartpole_through_remote_v0(urls):
    """Fields without bounds or length map to unbounded Box and Sequence: usable, but no Discrete(2) or (4,)."""
    env = gym.make("openenv/Remote-v0", base_url=urls["cartpole"])
    try:
        assert env.action_space == INT  # "action: int": nothing says 0 or 1
        assert env.observation_space == spaces.Sequence(FLOAT)  # "list[float] = []": no fixed length
        obs, _ = env.reset(seed=0)
        expected, _ = gym.make("CartPole-v1").reset(seed=0)
        assert np.asarray(obs).tolist() == expected.astype(np.float64).tolist()
        obs, reward, terminated, truncated, _ = env.step({"action": 1})  # the wire form of the action
        assert len(obs) == 4 and (reward, terminated, truncated) == (1.0, False, False)
    finally:
        env.close()


@pytest.mark.slow
def test_check_env_passes(urls):
    """Gymnasium's checker passes on the typed CartPole, the grid and echo over openenv-core."""
    from gymnasium.utils.env_checker import check_env

    for name in ("typed-cartpole", "grid", "echo"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unmapped-field warning of the grid, tested above
            env = gym.make("openenv/Remote-v0", base_url=urls[name])
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                check_env(env.unwrapped, skip_render_check=True)
            # Unbounded floats in the schema (no minimum/maximum) are all the checker notes (its close
            # check makes a second env: the grid's unmapped-field warning comes again).
            notes = [str(w.message) for w in caught if not str(w.message).startswith("openenv-gym:")]
            assert all("infinity" in note for note in notes), notes
        finally:
            env.close()


@pytest.mark.slow
def test_make_vec_over_openenv_core(urls):
    """make_vec(num_envs=8) on one openenv-core server: plain sessions, autoreset, same as a local SyncVectorEnv."""
    url = urls["typed-cartpole"]
    envs = gym.make_vec("openenv/Remote-v0", num_envs=8, base_urls=[url])
    local = gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="sync")
    try:
        assert not envs._batched  # no /ws/batch on an OpenEnv server: one /ws session per sub-env
        assert envs.single_action_space == spaces.Discrete(2)
        assert envs.observation_space == spaces.Box(-INF, INF, shape=(8, 4), dtype=np.float64)
        obs, _ = envs.reset(seed=0)
        expected, _ = local.reset(seed=0)
        assert obs.shape == (8, 4) and np.array_equal(obs, expected.astype(np.float64))
        envs.action_space.seed(0)
        ends = 0
        for _ in range(300):
            actions = envs.action_space.sample()
            obs, rewards, terminations, truncations, _ = envs.step(actions)
            expected, local_rewards, local_terminations, local_truncations, _ = local.step(actions)
            assert np.array_equal(obs, expected.astype(np.float64))
            assert np.array_equal(rewards, local_rewards) and np.array_equal(terminations, local_terminations)
            assert not truncations.any() and not local_truncations.any()  # no episode reaches 500 steps here
            ends += int(terminations.sum())
        assert ends > 50  # many episodes ended and were reset in place (NextStep)
    finally:
        envs.close()
        local.close()


@pytest.mark.slow
def test_make_vec_over_a_url_list_and_a_single_url(urls):
    """base_urls may list servers (repeated too); base_url= puts every sub-env on one server."""
    url = urls["typed-cartpole"]
    for kwargs in ({"base_urls": [url, url, url]}, {"base_url": url}):
        envs = gym.make_vec("openenv/Remote-v0", num_envs=8, **kwargs)
        try:
            obs, _ = envs.reset(seed=3)
            assert obs.shape == (8, 4)
            for _ in range(20):
                obs, rewards, _, _, _ = envs.step(envs.action_space.sample())
            assert obs.shape == (8, 4) and rewards.dtype == np.float64
        finally:
            envs.close()
    # Dict actions and observations through the vector env: the grid, two sub-envs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its unmapped-field warning, tested above
        envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=urls["grid"])
    try:
        obs, _ = envs.reset(seed=0)
        actions = {"direction": np.array([3, 1]), "sprint": np.array([1, 0]), "note": ("", "x")}
        obs, rewards, terminations, _, _ = envs.step(actions)
        assert obs["position"]["x"].tolist() == [2, 0] and obs["position"]["y"].tolist() == [0, 1]
        assert rewards.tolist() == [0.0, 0.0] and not terminations.any()
    finally:
        envs.close()


@pytest.mark.slow
def test_our_servers_keep_their_published_spaces():
    """Through Remote-v0, an openenv-gym server's exact published spaces and batch sessions are used."""
    from openenv_gym.envs.echo.environment import MAX_MESSAGE_LENGTH

    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as echo_url:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no mapping, so no warning
            env = gym.make("openenv/Remote-v0", base_url=echo_url)
        try:
            text = spaces.Text(MAX_MESSAGE_LENGTH, min_length=0, charset=string.printable)
            assert env.action_space == spaces.Dict(message=text)
            assert env.observation_space == spaces.Dict(
                echoed_message=text, message_length=spaces.Discrete(MAX_MESSAGE_LENGTH + 1)
            )
            env.reset()
            assert env.step({"message": "abc"})[0] == {"echoed_message": "abc", "message_length": 3}
        finally:
            env.close()
    with ProcessProvider("CartPole-v1") as cartpole_url:
        envs = gym.make_vec("openenv/Remote-v0", num_envs=4, base_url=cartpole_url)
        try:
            assert envs._batched and envs.single_observation_space == gym.make("CartPole-v1").observation_space
            obs, _ = envs.reset(seed=0)
            assert obs.dtype == np.float32 and obs.shape == (4, 4)
            envs.step(np.array([0, 1, 0, 1]))
        finally:
            envs.close()


@pytest.mark.slow
def test_sub_envs_beyond_capacity_raise_and_an_unclosed_vector_env_leaves_no_socket(urls):
    """Five sub-envs on an echo server that takes four give CapacityReachedError; garbage collection closes every session."""
    import gc
    import weakref

    from openenv_gym import CapacityReachedError

    made = []

    def beyond_capacity() -> None:
        envs = gym.make_vec("openenv/Remote-v0", num_envs=5, base_url=urls["echo"])
        made.append(weakref.ref(envs))
        envs.reset(seed=0)  # never closed: the error leaves it to the garbage collector

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            beyond_capacity()
        except CapacityReachedError as exc:
            assert "4/4 sessions active" in str(exc)
        else:
            pytest.fail("no CapacityReachedError")
        gc.collect()
    assert made and made[0]() is None  # collected, so its sockets' fate was decided here
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
