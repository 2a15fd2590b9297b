"""Graph, Sequence and OneOf on the wire (openenv_gym.spaces.dynamic through the codec): descriptions and values, exactly."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

from openenv_gym.errors import SpaceCodecError
from openenv_gym.spaces import (
    OBSERVATION_FIELD,
    decode,
    encode,
    from_wire,
    mismatch,
    space_from_json,
    space_to_json,
    to_wire,
)

BOX2 = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

DYNAMIC_SPACES: dict[str, spaces.Space[Any]] = {
    "graph-box-nodes-no-edges": spaces.Graph(node_space=BOX2, edge_space=None),
    "graph-box-discrete": spaces.Graph(node_space=spaces.Box(-100, 100, shape=(3, 4)), edge_space=spaces.Discrete(5)),
    "graph-discrete-int32-box-float64": spaces.Graph(
        node_space=spaces.Discrete(4, start=-1, dtype=np.int32), edge_space=spaces.Box(0.0, 1.0, (2,), np.float64)
    ),
    "graph-dict-nodes-tuple-edges": spaces.Graph(
        node_space=spaces.Dict({"pos": spaces.Box(-10, 10, shape=(3,)), "label": spaces.Discrete(5)}),
        edge_space=spaces.Tuple((spaces.Discrete(4), spaces.Box(0, 1, shape=(2,)))),
    ),
    "graph-multibinary-multidiscrete": spaces.Graph(
        node_space=spaces.MultiBinary(4), edge_space=spaces.MultiDiscrete([3, 4, 2])
    ),
    "sequence-discrete": spaces.Sequence(spaces.Discrete(4)),
    "sequence-dict": spaces.Sequence(spaces.Dict({"feature": spaces.Box(0, 1, (3,))})),
    "sequence-of-graphs": spaces.Sequence(spaces.Graph(node_space=BOX2, edge_space=spaces.Discrete(4))),
    "sequence-stacked-box": spaces.Sequence(spaces.Box(0.0, 1.0, (2,), np.float64), stack=True),
    "sequence-stacked-dict": spaces.Sequence(
        spaces.Dict({"a": spaces.Box(0, 1, (3,)), "b": spaces.Discrete(5)}), stack=True
    ),
    "sequence-of-text": spaces.Sequence(spaces.Text(5, charset="abc")),
    "oneof-discrete-box": spaces.OneOf([spaces.Discrete(3), spaces.Box(0.0, 1.0)]),
    "oneof-nested": spaces.OneOf([spaces.MultiBinary(2), spaces.Sequence(spaces.Discrete(2)), spaces.Tuple([BOX2])]),
    "tuple-holding-graph": spaces.Tuple((spaces.Graph(node_space=BOX2, edge_space=None), spaces.Discrete(2))),
    "dict-holding-sequence-and-oneof": spaces.Dict(
        {"seq": spaces.Sequence(spaces.Discrete(3)), "one": spaces.OneOf([spaces.Discrete(2), BOX2])}
    ),
}

space_params = pytest.mark.parametrize("space", list(DYNAMIC_SPACES.values()), ids=list(DYNAMIC_SPACES))


@space_params
def test_description_round_trip_is_exact_through_strict_json(space: spaces.Space[Any]) -> None:
    """A description is strict JSON text, and reads back as an equal space of the same type, nested alike."""
    text = json.dumps(space_to_json(space), allow_nan=False)
    again = space_from_json(json.loads(text))
    assert type(again) is type(space) and again == space and repr(again) == repr(space)


def test_descriptions_name_their_parts() -> None:
    """The three descriptions: a Graph's node and edge spaces, a Sequence's space and stack, a OneOf's spaces."""
    assert space_to_json(spaces.Graph(node_space=spaces.Discrete(2), edge_space=None)) == {
        "type": "Graph",
        "node_space": {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"},
        "edge_space": None,
    }
    assert space_to_json(spaces.Sequence(spaces.Discrete(2), stack=True))["stack"] is True
    assert [sub["n"] for sub in space_to_json(spaces.OneOf([spaces.Discrete(2), spaces.Discrete(3)]))["spaces"]] == [
        2,
        3,
    ]


@space_params
def test_values_round_trip_exactly_through_json_text(space: spaces.Space[Any]) -> None:
    """Samples come back with Gymnasium's own types and dtypes (GraphInstance, tuples, stacked arrays,
    OneOf's (int64, value)), and are values of the space the client rebuilt."""
    rebuilt = space_from_json(space_to_json(space))
    space.seed(7)
    for _ in range(8):
        value = space.sample()
        text = json.dumps(to_wire(space, value, OBSERVATION_FIELD), allow_nan=False)
        back = from_wire(rebuilt, json.loads(text), OBSERVATION_FIELD)
        assert data_equivalence(back, value, exact=True), (value, back)
        assert back in rebuilt and mismatch(rebuilt, back) is None


def test_graph_value_form() -> None:
    """A GraphInstance travels as its nodes, edges and edge links, each node and edge in its own space's form."""
    space = spaces.Graph(node_space=spaces.Discrete(3), edge_space=spaces.Discrete(2))
    value = spaces.GraphInstance(np.array([0, 2]), np.array([1]), np.array([[0, 1]], dtype=np.int32))
    assert encode(space, value) == {"nodes": [0, 2], "edges": [1], "edge_links": [[0, 1]]}
    assert encode(space, spaces.GraphInstance(np.array([1]), None, None)) == {
        "nodes": [1],
        "edges": None,
        "edge_links": None,
    }


@pytest.mark.parametrize("links", [[], [[0, 1], [1, 0]]], ids=["no-edges", "two-edges"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_edge_links_come_back_in_the_dtype_the_env_gave(links: list[list[int]], dtype: Any) -> None:
    """Links not ``int32`` say their dtype (the default is left unsaid, so old forms read as before)."""
    space = spaces.Graph(node_space=spaces.Discrete(3), edge_space=spaces.Discrete(2))
    edge_links = np.array(links, dtype=dtype).reshape(-1, 2)
    value = spaces.GraphInstance(np.array([0, 2]), np.ones(len(links), np.int64), edge_links)
    text = json.dumps(encode(space, value), allow_nan=False)
    assert ("edge_links_dtype" in text) is (np.dtype(dtype) != np.int32)
    assert data_equivalence(decode(space, json.loads(text)), value, exact=True)
    old_form = {"nodes": [0, 2], "edges": [1] * len(links), "edge_links": links}
    assert decode(space, old_form).edge_links.dtype == np.int32


@pytest.mark.parametrize(
    "space, data, empty",
    [
        (spaces.Sequence(spaces.Discrete(3)), [], ()),
        (spaces.Sequence(BOX2, stack=True), [], np.zeros((0, 2), np.float32)),
        (
            spaces.Graph(node_space=BOX2, edge_space=spaces.Discrete(3)),
            {"nodes": [[0.5, 0.5]], "edges": [], "edge_links": []},
            spaces.GraphInstance(
                np.array([[0.5, 0.5]], np.float32), np.zeros((0,), np.int64), np.zeros((0, 2), np.int32)
            ),
        ),
    ],
    ids=["sequence", "stacked-sequence", "graph-without-edges"],
)
def test_empty_batches_keep_their_shape_and_dtype(space: spaces.Space[Any], data: Any, empty: Any) -> None:
    """No items (a sequence of none, a graph with no edges) decode to the empty batch Gymnasium makes."""
    assert data_equivalence(decode(space, data), empty, exact=True)


@pytest.mark.parametrize(
    "space, data, message",
    [
        (
            DYNAMIC_SPACES["graph-box-discrete"],
            [1, 2],
            "a Graph value is an object with ['edge_links', 'edges', 'nodes']",
        ),
        (DYNAMIC_SPACES["graph-box-discrete"], {"nodes": [], "edges": []}, "a Graph value is an object with"),
        (
            DYNAMIC_SPACES["graph-box-nodes-no-edges"],
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 0]]},
            "only for a Graph with an edge space",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": None},
            "edges and edge links come together",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 0.5]]},
            "expected 1 edge links",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 0], [0, 0]]},
            "expected 1 edge links",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 2**40]]},
            "edge links past int32",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 0]], "edge_links_dtype": "float32"},
            "edge links' dtype is the name of an integer dtype",
        ),
        (
            spaces.Graph(BOX2, spaces.Discrete(2)),
            {"nodes": [[0, 0]], "edges": [1], "edge_links": [[0, 0]], "edge_links_dtype": ["int64"]},
            "edge links' dtype is the name of an integer dtype",
        ),
        (spaces.Graph(BOX2, None), {"nodes": 3, "edges": None, "edge_links": None}, "expected a list of nodes"),
        (spaces.Sequence(spaces.Discrete(3)), {"items": []}, "a Sequence value is a list of items"),
        (spaces.Sequence(BOX2, stack=True), "[]", "expected a list of items"),
        (spaces.Sequence(spaces.Discrete(3)), [1, 2.5], "expected an integer"),
        (DYNAMIC_SPACES["oneof-discrete-box"], [3, 0], "a OneOf value is [index below 2, value]"),
        (DYNAMIC_SPACES["oneof-discrete-box"], [True, 0], "a OneOf value is [index below 2, value]"),
        (DYNAMIC_SPACES["oneof-discrete-box"], [0], "a OneOf value is [index below 2, value]"),
        (DYNAMIC_SPACES["oneof-discrete-box"], [1, [2.0, 3.0]], "expected an array of shape (1,)"),
    ],
)
def test_malformed_values_raise_space_codec_error(space: spaces.Space[Any], data: Any, message: str) -> None:
    """A value that does not fit its space is a SpaceCodecError saying what was expected, never another error."""
    with pytest.raises(SpaceCodecError, match=re.escape(message)):
        decode(space, data)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"type": "Graph"}, "a Graph space description needs 'node_space'"),
        ({"type": "Graph", "node_space": {"type": "Nope"}}, "unknown space type 'Nope'"),
        ({"type": "Sequence", "space": {"type": "Discrete", "n": 2}, "stack": "yes"}, "stack is true or false"),
        ({"type": "Sequence"}, "a Sequence space description needs 'space'"),
        ({"type": "OneOf", "spaces": {"a": {}}}, "a OneOf space's spaces are a list"),
        ({"type": "OneOf", "spaces": []}, "invalid OneOf space description"),
    ],
)
def test_malformed_descriptions_raise_space_codec_error(data: dict[str, Any], message: str) -> None:
    """A malformed description of one of the three is a SpaceCodecError naming the problem."""
    with pytest.raises(SpaceCodecError, match=re.escape(message)):
        space_from_json(data)
