"""Hypothesis strategies shared by the fuzz tests: JSON values, hostile messages, spaces."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Any JSON scalar, with the numbers parsers trip over: huge integers, NaN, infinities, -0.0.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.integers(min_value=10**308, max_value=10**320),  # past float's range
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
# Finite JSON, for round trips (NaN never equals itself).
finite_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)
)


def json_values(scalars: st.SearchStrategy[Any] = json_scalars) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=12,
    )


json_objects = st.dictionaries(st.text(max_size=8), json_values(), max_size=5)
finite_objects = st.dictionaries(st.text(max_size=8), json_values(finite_scalars), max_size=5)

FRAME_TYPES = [
    "reset", "step", "state", "render", "close", "mcp", "observation", "error",
    "batch_reset", "batch_step", "batch_call", "batch_result", "batch_values", "batch_make",
    "vector_reset", "vector_step", "vector_result",
]  # fmt: skip


@st.composite
def frame_like(draw: st.DrawFn) -> str:
    """A JSON object shaped like a frame: a known (or random) type and random data."""
    kind = draw(st.one_of(st.sampled_from(FRAME_TYPES), json_scalars))
    data = draw(st.one_of(json_objects, json_values()))
    frame: dict[str, Any] = {"type": kind, "data": data}
    if draw(st.booleans()):
        frame.update(draw(json_objects))
    return json.dumps(frame)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Every kind of message a socket can deliver.
messages = st.one_of(
    frame_like(),
    st.text(),
    st.binary(),
    json_values().map(json.dumps),
    st.integers(min_value=1000, max_value=5000).map(nested),
    st.integers(min_value=1000, max_value=5000).map(lambda n: '{"type":"step","data":' + nested(n) + "}"),
    st.binary().map(lambda b: b"OGB2" + b),
    st.binary().map(lambda b: b'{"type":"reset","data":{"x":"' + b + b'"}}'),  # invalid UTF-8 inside JSON
    st.just('{"type":"step","data":{"a":' + "9" * 5000 + "}}"),  # over int's max digits
)
