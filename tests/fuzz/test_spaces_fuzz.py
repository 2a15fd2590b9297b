"""Property-based tests of the spaces codec: any space description or value gives a
``SpaceCodecError`` or a space / value, and every supported space and its samples round-trip."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from gymnasium import spaces
from hypothesis import given
from hypothesis import strategies as st

from openenv_gym.errors import SpaceCodecError
from openenv_gym.spaces import decode, encode, from_wire, jsonable, space_from_json, space_to_json, to_wire

from .strategies import json_values

_FLOATS = ["float16", "float32", "float64"]
_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16"]


@st.composite
def boxes(draw: st.DrawFn) -> spaces.Box:
    dtype = np.dtype(draw(st.sampled_from(_FLOATS + _INTS)))
    shape = draw(st.lists(st.integers(min_value=1, max_value=3), max_size=3).map(tuple))
    if dtype.kind == "f":
        finite = st.floats(min_value=-1e4, max_value=1e4, width=16)
        low = draw(st.one_of(finite, st.just(-np.inf)))
        high = draw(st.one_of(finite.map(lambda w: abs(w) + (0 if low == -np.inf else low)), st.just(np.inf)))
    else:
        info = np.iinfo(dtype)
        low = draw(st.integers(min_value=max(info.min, -1000), max_value=min(info.max, 1000)))
        high = draw(st.integers(min_value=low, max_value=min(info.max, low + 1000)))
    return spaces.Box(np.full(shape, low, dtype=dtype), np.full(shape, high, dtype=dtype), shape, dtype)


_leaf_spaces = st.one_of(
    st.builds(
        spaces.Discrete,
        st.integers(min_value=1, max_value=10**6),
        start=st.integers(min_value=-(10**6), max_value=10**6),
    ),
    boxes(),
    st.builds(
        lambda nvec, start: spaces.MultiDiscrete(np.array(nvec), start=np.array(start[: len(nvec)])),
        st.lists(st.integers(min_value=1, max_value=100), min_size=1, max_size=4),
        st.lists(st.integers(min_value=-100, max_value=100), min_size=4, max_size=4),
    ),
    st.builds(
        spaces.MultiBinary,
        st.one_of(st.integers(min_value=1, max_value=8), st.lists(st.integers(1, 3), min_size=1, max_size=2)),
    ),
    st.integers(min_value=1, max_value=12).flatmap(
        lambda max_length: st.builds(
            lambda min_length, charset: spaces.Text(max_length, min_length=min_length, charset=charset),
            st.integers(min_value=0, max_value=max_length),
            st.sets(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20).map(
                lambda c: "".join(sorted(c))
            ),
        )
    ),
)

any_spaces = st.recursive(
    _leaf_spaces,
    lambda children: st.one_of(
        st.dictionaries(st.text(min_size=1, max_size=6), children, min_size=1, max_size=3).map(spaces.Dict),
        st.lists(children, min_size=1, max_size=3).map(spaces.Tuple),
    ),
    max_leaves=5,
)


def _same(space: spaces.Space[Any], a: Any, b: Any) -> bool:
    if isinstance(space, spaces.Dict):
        return list(a) == list(b) and all(_same(sub, a[key], b[key]) for key, sub in space.spaces.items())
    if isinstance(space, spaces.Tuple):
        return isinstance(b, tuple) and all(_same(sub, x, y) for sub, x, y in zip(space.spaces, a, b))
    if isinstance(space, spaces.Text):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


# (b) valid spaces and values round-trip -------------------------------------------------------


@given(any_spaces)
def test_space_json_round_trips(space: spaces.Space[Any]) -> None:
    description = json.loads(json.dumps(space_to_json(space), allow_nan=False))  # strict JSON
    rebuilt = space_from_json(description)
    assert rebuilt == space
    assert type(rebuilt) is type(space)
    assert space_to_json(rebuilt) == description


@given(any_spaces, st.integers(min_value=0, max_value=2**32 - 1))
def test_samples_wire_round_trip(space: spaces.Space[Any], seed: int) -> None:
    space.seed(seed)
    value = space.sample()
    wire = json.loads(json.dumps(to_wire(space, value, "action"), allow_nan=False))
    decoded = from_wire(space, wire, "action")
    assert _same(space, value, decoded)
    assert space.contains(decoded)
    assert _same(space, value, decode(space, json.loads(json.dumps(encode(space, value)))))


# (a) any input: a SpaceCodecError ----------------------------------------------------------------

_KINDS = ["Box", "Discrete", "MultiDiscrete", "MultiBinary", "Text", "Dict", "Tuple"]
_plausible = st.one_of(
    json_values(),
    st.integers(min_value=-3, max_value=5),
    st.integers(min_value=2**62, max_value=10**30),
    st.lists(st.integers(min_value=-2, max_value=4), max_size=3),
    st.sampled_from(_FLOATS + _INTS + ["bool", "object", "<U3", "x"]),
)


_FIELDS = {
    "Box": ["shape", "dtype", "low", "high"],
    "Discrete": ["n", "start", "dtype"],
    "MultiDiscrete": ["nvec", "start", "dtype"],
    "MultiBinary": ["n"],
    "Text": ["max_length", "min_length", "charset"],
}


@st.composite
def space_descriptions(draw: st.DrawFn, depth: int = 0) -> Any:
    """A description with a known type and random fields (plausible ones mostly), some nested."""
    keys = ["n", "start", "dtype", "shape", "low", "high", "nvec", "max_length", "min_length", "charset"]
    kind = draw(st.one_of(st.sampled_from(_KINDS), json_values()))
    description: dict[str, Any] = {"type": kind}
    for key in _FIELDS.get(kind, []) if isinstance(kind, str) else []:  # its own fields, mostly
        if draw(st.integers(min_value=0, max_value=9)):
            description[key] = draw(_plausible)
    for key in draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)):
        description[key] = draw(_plausible)
    if depth < 2 and draw(st.booleans()):
        children = st.lists(space_descriptions(depth + 1), max_size=2)
        subs = draw(children)
        description["spaces"] = draw(st.sampled_from([subs, {str(i): s for i, s in enumerate(subs)}]))
    return description


@given(st.one_of(space_descriptions(), json_values()))
def test_space_from_json_raises_only_space_codec_errors(description: Any) -> None:
    try:
        space_from_json(description)
    except SpaceCodecError:
        pass


@given(any_spaces, json_values())
def test_decode_raises_only_space_codec_errors(space: spaces.Space[Any], data: Any) -> None:
    for call in (lambda: decode(space, data), lambda: from_wire(space, data, "action")):
        try:
            value = call()
        except SpaceCodecError:
            continue
        assert value is not None


_odd_values = st.recursive(
    st.one_of(
        json_values(),
        st.binary(max_size=4),
        st.complex_numbers(),
        st.sets(st.integers(), max_size=3),
        st.sampled_from([np.float32(1.5), np.int64(3), np.bool_(True), np.complex64(1j), np.arange(4).reshape(2, 2)]),
        st.builds(object),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(), st.none()), children, max_size=3),
    ),
    max_leaves=8,
)


@given(_odd_values)
def test_jsonable_gives_json(value: Any) -> None:
    json.dumps(jsonable(value))
