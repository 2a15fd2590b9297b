"""Tests for openenv_gym.spaces: space descriptions, value codecs and wire forms (pure, no I/O)."""

from __future__ import annotations

import json
import re
import string
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.errors import OpenEnvGymError, SpaceCodecError, UnsupportedSpaceError
from openenv_gym.spaces import (
    ACTION_FIELD,
    OBSERVATION_FIELD,
    decode,
    encode,
    from_wire,
    jsonable,
    space_from_json,
    space_to_json,
    to_wire,
)


def cartpole_observation_space() -> spaces.Box:
    """CartPole's observation space, which has infinite bounds in Gymnasium 1.x."""
    env = gym.make("CartPole-v1")
    try:
        return env.observation_space  # type: ignore[return-value]
    finally:
        env.close()


def nested_space() -> spaces.Dict:
    """A Dict holding a Tuple holding a Dict, keys deliberately not in sorted order."""
    return spaces.Dict(
        [
            ("pos", spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)),
            (
                "inner",
                spaces.Tuple(
                    [
                        spaces.Discrete(3, start=1),
                        spaces.Dict([("zeta", spaces.MultiBinary(3)), ("alpha", spaces.Text(8, min_length=1))]),
                    ]
                ),
            ),
        ]
    )


SPACES: dict[str, spaces.Space[Any]] = {
    "box-cartpole-inf": cartpole_observation_space(),
    "box-all-inf": spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32),
    "box-per-element": spaces.Box(
        low=np.array([-1.0, 0.0, -5.5], dtype=np.float32), high=np.array([1.0, 10.0, 5.5], dtype=np.float32)
    ),
    "box-float64": spaces.Box(
        low=np.array([[0.1, -1e300], [1 / 3, -np.inf]]), high=np.array([[0.2, 1e300], [2 / 3, 7.0]]), dtype=np.float64
    ),
    "box-uint8-image": spaces.Box(0, 255, shape=(4, 4, 3), dtype=np.uint8),
    "box-scalar": spaces.Box(-2.5, 2.5, shape=(), dtype=np.float32),
    "box-int64": spaces.Box(low=np.array([-(2**62), 0]), high=np.array([2**62, 5]), dtype=np.int64),
    "discrete": spaces.Discrete(4),
    "discrete-start-int32": spaces.Discrete(5, start=-2, dtype=np.int32),
    "multidiscrete-2d-start": spaces.MultiDiscrete(np.array([[2, 3], [4, 5]]), start=np.array([[-1, 0], [1, 2]])),
    "multibinary-5": spaces.MultiBinary(5),
    "multibinary-2x3": spaces.MultiBinary([2, 3]),
    "text-printable": spaces.Text(max_length=50, min_length=0, charset=string.printable),
    "text-custom-order": spaces.Text(max_length=4, min_length=2, charset="zyxa"),
    "dict-mixed": spaces.Dict(
        [
            ("zebra", spaces.Discrete(3)),
            ("apple", spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float64)),
            ("mid", spaces.Text(5)),
            ("bits", spaces.MultiBinary(2)),
        ]
    ),
    "tuple": spaces.Tuple([spaces.Discrete(2), spaces.Box(-1.0, 1.0, shape=(1,)), spaces.MultiDiscrete([2, 2])]),
    "nested": nested_space(),
}


def assert_space_equal(actual: spaces.Space[Any], expected: spaces.Space[Any]) -> None:
    """Assert two spaces are the same exactly: type, dtype, shape, bounds, charset, key order."""
    assert type(actual) is type(expected)
    if isinstance(expected, spaces.Box):
        assert actual.dtype == expected.dtype
        assert actual.shape == expected.shape
        assert actual.low.dtype == expected.low.dtype and actual.high.dtype == expected.high.dtype
        assert np.array_equal(actual.low, expected.low)
        assert np.array_equal(actual.high, expected.high)
    elif isinstance(expected, spaces.Discrete):
        assert actual.dtype == expected.dtype
        assert int(actual.n) == int(expected.n) and int(actual.start) == int(expected.start)
    elif isinstance(expected, spaces.MultiDiscrete):
        assert actual.dtype == expected.dtype
        assert actual.shape == expected.shape
        assert np.array_equal(actual.nvec, expected.nvec)
        assert np.array_equal(actual.start, expected.start)
    elif isinstance(expected, spaces.MultiBinary):
        assert actual.shape == expected.shape
        assert actual.dtype == expected.dtype
    elif isinstance(expected, spaces.Text):
        assert actual.min_length == expected.min_length
        assert actual.max_length == expected.max_length
        assert actual.character_list == expected.character_list
    elif isinstance(expected, spaces.Dict):
        assert list(actual.spaces) == list(expected.spaces)
        for key in expected.spaces:
            assert_space_equal(actual[key], expected[key])
    elif isinstance(expected, spaces.Tuple):
        assert len(actual.spaces) == len(expected.spaces)
        for sub_actual, sub_expected in zip(actual.spaces, expected.spaces):
            assert_space_equal(sub_actual, sub_expected)
    else:  # pragma: no cover - the test table only holds the types above
        raise AssertionError(f"no comparison for {type(expected).__name__}")
    assert actual == expected


def assert_value_equal(space: spaces.Space[Any], actual: Any, expected: Any) -> None:
    """Assert a decoded value equals the original sample and has the space's Python/numpy types."""
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        assert isinstance(actual, np.ndarray)
        assert actual.dtype == space.dtype and actual.shape == space.shape
        assert np.array_equal(actual, expected)
    elif isinstance(space, spaces.Discrete):
        assert type(actual) is space.dtype.type
        assert actual == expected
    elif isinstance(space, spaces.Text):
        assert type(actual) is str and actual == expected
    elif isinstance(space, spaces.Dict):
        assert isinstance(actual, dict) and list(actual) == list(space.spaces)
        for key, sub in space.spaces.items():
            assert_value_equal(sub, actual[key], expected[key])
    elif isinstance(space, spaces.Tuple):
        assert isinstance(actual, tuple) and len(actual) == len(space.spaces)
        for sub, sub_actual, sub_expected in zip(space.spaces, actual, expected):
            assert_value_equal(sub, sub_actual, sub_expected)
    else:  # pragma: no cover
        raise AssertionError(f"no comparison for {type(space).__name__}")


space_params = pytest.mark.parametrize("space", list(SPACES.values()), ids=list(SPACES))


# Space descriptions ----------------------------------------------------------------------------


@space_params
def test_space_json_round_trip_is_exact(space: spaces.Space[Any]) -> None:
    """space_from_json(space_to_json(space)) rebuilds the same space: dtypes, bounds, charset, key order."""
    assert_space_equal(space_from_json(space_to_json(space)), space)


@space_params
def test_space_json_is_strict_json_and_survives_text(space: spaces.Space[Any]) -> None:
    """A space's description is strict JSON (no NaN/Infinity) and round-trips through JSON text."""
    text = json.dumps(space_to_json(space), allow_nan=False)
    assert_space_equal(space_from_json(json.loads(text)), space)


def test_infinite_box_bounds_are_strings() -> None:
    """Infinite Box bounds are written as "inf"/"-inf" strings, finite ones as numbers."""
    data = space_to_json(cartpole_observation_space())
    assert data["type"] == "Box" and data["shape"] == [4] and data["dtype"] == "float32"
    assert [bound for bound in data["low"] if isinstance(bound, str)] == ["-inf", "-inf"]
    assert [bound for bound in data["high"] if isinstance(bound, str)] == ["inf", "inf"]
    assert isinstance(data["low"][0], float) and isinstance(data["high"][2], float)


def test_discrete_description_shape() -> None:
    """A Discrete space is described by n, start and dtype (the documented example)."""
    assert space_to_json(spaces.Discrete(3)) == {"type": "Discrete", "n": 3, "start": 0, "dtype": "int64"}


def test_dict_description_keeps_declared_key_order() -> None:
    """A Dict description lists keys in the space's order, and from_json keeps that order unsorted."""
    space = SPACES["dict-mixed"]
    data = space_to_json(space)
    assert list(data["spaces"]) == ["zebra", "apple", "mid", "bits"]
    assert list(space_from_json(data).spaces) == ["zebra", "apple", "mid", "bits"]


class OwnSpace(spaces.Space[int]):
    """A space of the user's own: none of Gymnasium's."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnSpace)


def test_a_space_of_your_own_raises_unsupported_space_error_saying_why() -> None:
    """A space of your own has no JSON form: UnsupportedSpaceError (a TypeError) says why and what to do."""
    with pytest.raises(
        UnsupportedSpaceError, match=re.escape("OwnSpace has no JSON form: it is a space of your own")
    ) as exc_info:
        space_to_json(OwnSpace())
    assert "only where a session already trusts pickles: RemoteVectorEnv.from_env_fns's servers" in str(exc_info.value)
    assert isinstance(exc_info.value, TypeError)
    assert isinstance(exc_info.value, OpenEnvGymError)


def test_a_space_of_your_own_nested_in_dict_raises() -> None:
    """A space of your own inside a Dict makes the whole description fail."""
    with pytest.raises(UnsupportedSpaceError, match=re.escape("OwnSpace has no JSON form")):
        space_to_json(spaces.Dict({"ok": spaces.Discrete(2), "bad": OwnSpace()}))


def test_space_from_json_unknown_type() -> None:
    """An unknown space type raises SpaceCodecError listing the known types."""
    expected = (
        "unknown space type 'Hypergraph'; expected one of ['Box', 'Dict', 'Discrete', 'Graph', 'MultiBinary', "
        "'MultiDiscrete', 'OneOf', 'Pickled', 'Sequence', 'Text', 'Tuple']"
    )
    with pytest.raises(SpaceCodecError, match=re.escape(expected)) as exc_info:
        space_from_json({"type": "Hypergraph"})
    assert isinstance(exc_info.value, ValueError)


def test_space_from_json_missing_type() -> None:
    """A description without a type raises SpaceCodecError."""
    with pytest.raises(SpaceCodecError, match=re.escape("unknown space type None")):
        space_from_json({"n": 3})


def test_space_from_json_type_not_a_string() -> None:
    """A type that is not a string (here a list, which cannot be looked up) raises SpaceCodecError."""
    with pytest.raises(SpaceCodecError, match=re.escape("unknown space type ['Box']")):
        space_from_json({"type": ["Box"]})


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"type": "Box", "shape": [2], "high": 1.0},
            "a Box space description needs 'low', got keys ['high', 'shape', 'type']",
        ),
        (
            {"type": "Box", "low": 0, "high": 1},
            "a Box space description needs 'shape', got keys ['high', 'low', 'type']",
        ),
        ({"type": "Discrete"}, "a Discrete space description needs 'n', got keys ['type']"),
        ({"type": "MultiDiscrete"}, "a MultiDiscrete space description needs 'nvec', got keys ['type']"),
        ({"type": "MultiBinary"}, "a MultiBinary space description needs 'n', got keys ['type']"),
        (
            {"type": "Text", "charset": "ab"},
            "a Text space description needs 'max_length', got keys ['charset', 'type']",
        ),
        ({"type": "Dict"}, "a Dict space description needs 'spaces', got keys ['type']"),
        ({"type": "Tuple"}, "a Tuple space description needs 'spaces', got keys ['type']"),
    ],
)
def test_space_from_json_missing_key(data: dict[str, Any], message: str) -> None:
    """A description missing a required key raises SpaceCodecError naming the key and what was given."""
    with pytest.raises(SpaceCodecError, match=re.escape(message)):
        space_from_json(data)


def test_space_from_json_missing_key_in_nested_space() -> None:
    """A malformed sub-space inside a Dict raises SpaceCodecError (not KeyError)."""
    with pytest.raises(SpaceCodecError, match=re.escape("a Discrete space description needs 'n'")):
        space_from_json({"type": "Dict", "spaces": {"a": {"type": "Discrete"}}})


@pytest.mark.parametrize("data, type_name", [([1, 2], "list"), ("Box", "str"), (None, "NoneType")])
def test_space_from_json_non_dict(data: Any, type_name: str) -> None:
    """A description that is not a JSON object raises SpaceCodecError naming what it got."""
    with pytest.raises(SpaceCodecError, match=re.escape(f"a space description must be a JSON object, got {type_name}")):
        space_from_json(data)


def test_space_from_json_invalid_values_are_wrapped() -> None:
    """Bounds that do not fit the shape raise SpaceCodecError quoting the bad description."""
    data = {"type": "Box", "shape": [2], "low": [0, 0, 0], "high": 1}
    with pytest.raises(SpaceCodecError, match=re.escape(f"invalid Box space description {data!r}: ")):
        space_from_json(data)


# Values ----------------------------------------------------------------------------------------


@space_params
def test_value_round_trip(space: spaces.Space[Any]) -> None:
    """A seeded sample encodes to strict JSON and decodes back to an equal value of the space's dtype."""
    space.seed(0)
    for _ in range(3):
        value = space.sample()
        encoded = encode(space, value)
        text = json.dumps(encoded, allow_nan=False)
        decoded = decode(space, json.loads(text))
        assert_value_equal(space, decoded, value)
        assert space.contains(decoded)


def test_encode_gives_plain_python_types() -> None:
    """encode turns numpy values into plain ints, floats and lists."""
    assert encode(spaces.Discrete(3), np.int64(2)) == 2 and type(encode(spaces.Discrete(3), np.int64(2))) is int
    assert encode(spaces.Box(0, 255, (2,), np.uint8), np.array([1, 255], dtype=np.uint8)) == [1, 255]
    assert encode(spaces.Tuple([spaces.Discrete(2), spaces.Text(3)]), (np.int64(1), "ab")) == [1, "ab"]


def test_decode_discrete_accepts_integral_float() -> None:
    """A float with an integral value (2.0) is accepted for a Discrete space."""
    value = decode(spaces.Discrete(3), 2.0)
    assert value == 2 and type(value) is np.int64


@pytest.mark.parametrize(
    "space, data, message",
    [
        (spaces.Box(0.0, 1.0, shape=(3,)), [0.1, 0.2], "expected an array of shape (3,), got shape (2,)"),
        (spaces.Box(0.0, 1.0, shape=(2, 2)), [0.1, 0.2, 0.3, 0.4], "expected an array of shape (2, 2), got shape (4,)"),
        (spaces.Box(0.0, 1.0, shape=()), [0.5], "expected an array of shape (), got shape (1,)"),
        (spaces.Box(0.0, 1.0, shape=(2,)), ["a", "b"], "expected float32 numbers of shape (2,), got ['a', 'b']"),
        (spaces.Box(0.0, 1.0, shape=(2,)), [[0.1], [0.2, 0.3]], "expected float32 numbers of shape (2,), got "),
        (spaces.MultiDiscrete([2, 3]), [1, 1, 1], "expected an array of shape (2,), got shape (3,)"),
        (spaces.MultiBinary(4), [0, 1], "expected an array of shape (4,), got shape (2,)"),
        (spaces.Discrete(3), "1", "expected an integer for Discrete(3), got '1'"),
        (spaces.Discrete(3), True, "expected an integer for Discrete(3), got True"),
        (spaces.Discrete(3), 1.5, "expected an integer for Discrete(3), got 1.5"),
        (spaces.Discrete(3), None, "expected an integer for Discrete(3), got None"),
        (spaces.Discrete(3), [1], "expected an integer for Discrete(3), got [1]"),
        (spaces.Text(5), 3, "expected a string for Text(1, 5, charset="),
    ],
)
def test_decode_wrong_values_raise(space: spaces.Space[Any], data: Any, message: str) -> None:
    """decode raises SpaceCodecError for data of the wrong shape or type, saying what was expected."""
    with pytest.raises(SpaceCodecError, match=re.escape(message)):
        decode(space, data)


def test_decode_dict_missing_and_extra_keys() -> None:
    """decode of a Dict value names the missing and the unexpected keys."""
    space = spaces.Dict([("a", spaces.Discrete(2)), ("b", spaces.Discrete(2))])
    with pytest.raises(
        SpaceCodecError, match=re.escape("object does not fit the Dict space: missing ['b'], unexpected []")
    ):
        decode(space, {"a": 1})
    with pytest.raises(
        SpaceCodecError, match=re.escape("object does not fit the Dict space: missing [], unexpected ['c']")
    ):
        decode(space, {"a": 1, "b": 0, "c": 2})
    with pytest.raises(SpaceCodecError, match=re.escape("expected an object with keys ['a', 'b'], got list")):
        decode(space, [1, 0])


def test_decode_dict_error_in_sub_value() -> None:
    """A bad value for one key of a Dict raises SpaceCodecError."""
    space = spaces.Dict([("a", spaces.Discrete(2))])
    with pytest.raises(SpaceCodecError, match=re.escape("expected an integer for Discrete(2), got 'x'")):
        decode(space, {"a": "x"})


@pytest.mark.parametrize("data", [[1], [1, 0, 1], "ab", {"0": 1}])
def test_decode_tuple_wrong_length_or_type(data: Any) -> None:
    """decode of a Tuple value needs a list of exactly its length."""
    space = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(2)])
    with pytest.raises(SpaceCodecError, match=re.escape("expected a list of 2 items, got ")):
        decode(space, data)


def test_decode_out_of_range_integer_for_uint8_box_raises_codec_error() -> None:
    """decode raises SpaceCodecError for an integer the Box's dtype cannot hold (300 for uint8)."""
    with pytest.raises(SpaceCodecError):
        decode(spaces.Box(0, 255, shape=(2,), dtype=np.uint8), [1, 300])


@pytest.mark.parametrize("data", [float("inf"), float("nan")])
def test_decode_non_finite_for_discrete_raises_codec_error(data: float) -> None:
    """decode raises SpaceCodecError for a non-finite number given to a Discrete space."""
    with pytest.raises(SpaceCodecError):
        decode(spaces.Discrete(3), data)


@pytest.mark.parametrize("space, data", [(spaces.MultiDiscrete([3, 3]), [1.5, 0]), (spaces.MultiBinary(2), [0.5, 1])])
def test_decode_fractional_for_integer_array_space_raises(space: spaces.Space[Any], data: list[float]) -> None:
    """decode rejects non-integral numbers for integer array spaces, as it does for Discrete."""
    with pytest.raises(SpaceCodecError):
        decode(space, data)


# Wire forms ------------------------------------------------------------------------------------


def test_to_wire_dict_space_maps_to_fields() -> None:
    """A Dict space's value travels as the object of its fields, with no wrapping field."""
    space = spaces.Dict([("message", spaces.Text(10)), ("count", spaces.Discrete(5))])
    value = {"message": "hi", "count": np.int64(3)}
    assert to_wire(space, value, ACTION_FIELD) == {"message": "hi", "count": 3}
    decoded = from_wire(space, {"message": "hi", "count": 3}, ACTION_FIELD)
    assert decoded == {"message": "hi", "count": 3} and type(decoded["count"]) is np.int64


def test_to_wire_non_dict_space_uses_single_field() -> None:
    """Any other space travels as {field: value}, and from_wire reads it back."""
    assert to_wire(spaces.Discrete(3), np.int64(1), ACTION_FIELD) == {"action": 1}
    box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    wire = to_wire(box, np.array([0.5, -0.25], dtype=np.float32), OBSERVATION_FIELD)
    assert wire == {"observation": [0.5, -0.25]}
    back = from_wire(box, wire, OBSERVATION_FIELD)
    assert back.dtype == np.float32 and np.array_equal(back, [0.5, -0.25])


@pytest.mark.parametrize(
    "data, got",
    [({"act": 1}, "['act']"), ({"action": 1, "extra": 2}, "['action', 'extra']"), ({}, "[]"), ([1], "list")],
)
def test_from_wire_wrong_keys_raise(data: Any, got: str) -> None:
    """from_wire for a non-Dict space needs exactly the one field, and says what it got."""
    with pytest.raises(
        SpaceCodecError, match=re.escape(f"expected an object with the single field 'action', got {got}")
    ):
        from_wire(spaces.Discrete(3), data, ACTION_FIELD)


def test_from_wire_dict_space_wrong_keys_raise() -> None:
    """from_wire for a Dict space rejects objects whose keys differ from the space's."""
    space = spaces.Dict([("message", spaces.Text(10))])
    with pytest.raises(SpaceCodecError, match=re.escape("missing ['message'], unexpected ['action']")):
        from_wire(space, {"action": "hi"}, ACTION_FIELD)


# jsonable --------------------------------------------------------------------------------------


def test_jsonable_numpy_scalars_become_python_numbers() -> None:
    """numpy scalars become Python int, float and bool."""
    assert type(jsonable(np.int64(3))) is int and jsonable(np.int64(3)) == 3
    assert type(jsonable(np.float32(1.5))) is float and jsonable(np.float32(1.5)) == 1.5
    assert jsonable(np.bool_(True)) is True


def test_jsonable_arrays_become_lists() -> None:
    """numpy arrays become nested lists of Python numbers."""
    result = jsonable(np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert result == [[1, 2], [3, 4]] and type(result[0][0]) is int


def test_jsonable_nested_containers() -> None:
    """dicts, lists and tuples are converted recursively; tuples become lists, keys become strings."""
    info = {"a": (np.int64(1), [np.float64(0.5)]), 2: {"b": np.array([True, False])}, "s": "x", "n": None}
    result = jsonable(info)
    assert result == {"a": [1, [0.5]], "2": {"b": [True, False]}, "s": "x", "n": None}
    json.dumps(result, allow_nan=False)


def test_jsonable_unknown_objects_become_repr() -> None:
    """Values JSON cannot carry are replaced by their repr instead of failing."""

    class Thing:
        def __repr__(self) -> str:
            return "<Thing>"

    assert jsonable({"t": Thing(), "s": {1}}) == {"t": "<Thing>", "s": "{1}"}


# Found by tests/fuzz (each raised something other than SpaceCodecError, or gave non-JSON) ------


@pytest.mark.parametrize(
    "data",
    [
        {"type": "Discrete", "n": 10**30},
        {"type": "Discrete", "n": 2, "start": 10**30},
        {"type": "MultiDiscrete", "nvec": [10**30]},
        {"type": "Box", "shape": [2], "low": 10**30, "high": 1, "dtype": "int8"},
        {"type": "Box", "shape": [10**6, 10**6], "low": 0, "high": 1},  # 3.6 TiB: MemoryError
    ],
)
def test_space_from_json_numbers_past_int64_or_memory_are_codec_errors(data: dict[str, Any]) -> None:
    with pytest.raises(SpaceCodecError, match="invalid"):
        space_from_json(data)


def test_space_from_json_hostile_nesting_is_a_codec_error() -> None:
    description: dict[str, Any] = {"type": "Discrete", "n": 2}
    for _ in range(5000):
        description = {"type": "Tuple", "spaces": [description]}
    with pytest.raises(SpaceCodecError, match="nested too deeply"):
        space_from_json(description)


def test_decoding_a_number_past_the_float_dtypes_range_is_a_codec_error() -> None:
    """65520 overflowed float16 to inf, with a RuntimeWarning."""
    with pytest.raises(SpaceCodecError, match="float16"):
        decode(spaces.Box(0, 1, (), np.float16), 65520)


def test_jsonable_complex_and_object_items_become_json() -> None:
    value = jsonable({"c": np.complex64(1j), "o": np.array([object, 1], dtype=object)})
    json.dumps(value)
    assert value == {"c": "1j", "o": [repr(object), 1]}


@pytest.mark.parametrize("kind", ["Box", "Discrete", "MultiDiscrete"])
@pytest.mark.parametrize("dtype", [",float32", "f4,i4", "(2)i8", 4, ["int64"]])
def test_a_dtype_must_be_a_plain_name(kind: str, dtype: object) -> None:
    """Found by atheris: ``",float32"`` went to numpy's comma parser (ast.literal_eval: a SyntaxError)."""
    fields = {"Box": {"shape": [1], "low": [0], "high": [1]}, "Discrete": {"n": 2}, "MultiDiscrete": {"nvec": [2]}}
    with pytest.raises(SpaceCodecError, match="dtype"):
        space_from_json({"type": kind, "dtype": dtype, **fields[kind]})
