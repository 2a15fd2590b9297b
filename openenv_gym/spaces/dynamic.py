"""Graph, Sequence and OneOf as JSON: Gymnasium's spaces whose values vary in size or kind.

:mod:`.codec` hands these three space types here (loaded by the first one met). Descriptions::

    {"type": "Graph", "node_space": {...}, "edge_space": {...} or null}
    {"type": "Sequence", "space": {...}, "stack": false}
    {"type": "OneOf", "spaces": [{...}, ...]}

Values, each part in the JSON form of its own space:

* a ``GraphInstance``: ``{"nodes": [node, ...], "edges": [edge, ...] or null, "edge_links":
  [[i, j], ...] or null}``, and ``"edge_links_dtype": "int64"`` (say) when the links' integers
  are not ``int32``; decoded, nodes and edges are stacked as Gymnasium stacks them (a batch of
  ``node_space``, as ``Graph.sample`` gives), edge links of that dtype, by default ``int32`` (as
  ``Graph.sample`` and ``Graph.from_jsonable`` give them): an env's links come back as it made
  them, empty ones included;
* a ``Sequence`` value: ``[item, ...]``; decoded a tuple, or with ``stack=True`` the items stacked;
* a ``OneOf`` value ``(index, value)``: ``[index, value]``; decoded with the index an ``int64``,
  as ``OneOf.sample`` gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from ..errors import SpaceCodecError
from .codec import _require, space_from_json, space_to_json
from .codec import decode as decode_value
from .codec import encode as encode_value

__all__ = ["decode", "describe", "encode", "graph_from_json", "one_of_from_json", "sequence_from_json"]

_GRAPH_FIELDS = {"nodes", "edges", "edge_links"}
_LINKS_DTYPE = "edge_links_dtype"  # present only when the links are not of the default dtype
_DEFAULT_LINKS_DTYPE = np.dtype(np.int32)


def describe(space: spaces.Space[Any], pickles: bool) -> dict[str, Any]:
    """The description of a Graph, Sequence or OneOf space."""
    if isinstance(space, spaces.Graph):
        edges = None if space.edge_space is None else space_to_json(space.edge_space, pickles)
        return {"type": "Graph", "node_space": space_to_json(space.node_space, pickles), "edge_space": edges}
    if isinstance(space, spaces.Sequence):
        return {"type": "Sequence", "space": space_to_json(space.feature_space, pickles), "stack": space.stack}
    assert isinstance(space, spaces.OneOf)
    return {"type": "OneOf", "spaces": [space_to_json(sub, pickles) for sub in space.spaces]}


def graph_from_json(data: dict[str, Any], pickles: bool) -> spaces.Graph:
    edges = data.get("edge_space")
    return spaces.Graph(
        node_space=space_from_json(_require(data, "node_space", "Graph"), pickles=pickles),
        edge_space=None if edges is None else space_from_json(edges, pickles=pickles),
    )


def sequence_from_json(data: dict[str, Any], pickles: bool) -> spaces.Sequence:
    stack = data.get("stack", False)
    if not isinstance(stack, bool):
        raise SpaceCodecError(f"a Sequence space's stack is true or false, got {stack!r:.100}")
    return spaces.Sequence(space_from_json(_require(data, "space", "Sequence"), pickles=pickles), stack=stack)


def one_of_from_json(data: dict[str, Any], pickles: bool) -> spaces.OneOf[Any]:
    subspaces = _require(data, "spaces", "OneOf")
    if not isinstance(subspaces, list):
        raise SpaceCodecError(f"a OneOf space's spaces are a list, got {type(subspaces).__name__}")
    return spaces.OneOf([space_from_json(sub, pickles=pickles) for sub in subspaces])


# Values ----------------------------------------------------------------------------------------


def _batch_to_json(space: spaces.Space[Any], batched: spaces.Space[Any], batch: Any) -> list[Any]:
    """A batch of values of ``space`` (``batched`` is ``batch_space(space, n)`` for any n) as a list."""
    return [encode_value(space, item) for item in iterate(batched, batch)]


def _batch_from_json(space: spaces.Space[Any], data: Any, what: str) -> Any:
    """The items of ``data`` stacked as Gymnasium stacks a batch of ``space``."""
    if not isinstance(data, list):
        raise SpaceCodecError(f"expected a list of {what}, got {type(data).__name__}")
    items = [decode_value(space, item) for item in data]
    empty = create_empty_array(space, len(items), fn=np.zeros)
    if not items or empty is None:  # None: a space of your own, whose batch is a tuple of its items
        return tuple(items) if empty is None else empty
    return concatenate(space, items, empty)


def _links_dtype(name: Any) -> np.dtype[Any]:
    try:
        dtype: np.dtype[Any] = np.dtype(name)
    except TypeError as exc:
        raise SpaceCodecError(f"edge links' dtype is the name of an integer dtype, got {name!r:.200}") from exc
    if dtype.kind not in "iu":
        raise SpaceCodecError(f"edge links' dtype is the name of an integer dtype, got {name!r:.200}")
    return dtype


def _edge_links(data: Any, count: int, dtype: np.dtype[Any]) -> np.ndarray:
    pairs = isinstance(data, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(type(node) is int for node in pair) for pair in data
    )
    if not pairs or len(data) != count:
        raise SpaceCodecError(f"expected {count} edge links [i, j] of integers, got {data!r:.200}")
    try:
        return np.array(data, dtype=dtype).reshape(count, 2)
    except OverflowError as exc:
        raise SpaceCodecError(f"edge links past {dtype}: {data!r:.200}") from exc


def encode(space: spaces.Space[Any], value: Any) -> Any:
    """A value of a Graph, Sequence or OneOf space in plain JSON types."""
    if isinstance(space, spaces.Graph):
        nodes = _batch_to_json(space.node_space, space.batch_node_space, value.nodes)
        if space.edge_space is None or value.edges is None or value.edge_links is None:
            return {"nodes": nodes, "edges": None, "edge_links": None}
        edges = _batch_to_json(space.edge_space, space.batch_edge_space, value.edges)
        links = np.asarray(value.edge_links)
        graph = {"nodes": nodes, "edges": edges, "edge_links": links.tolist()}
        if links.dtype != _DEFAULT_LINKS_DTYPE and links.dtype.kind in "iu":
            graph[_LINKS_DTYPE] = links.dtype.name
        return graph
    if isinstance(space, spaces.Sequence):
        items = iterate(space.stacked_feature_space, value) if space.stack else value
        return [encode_value(space.feature_space, item) for item in items]
    assert isinstance(space, spaces.OneOf)
    index, item = value
    return [int(index), encode_value(space.spaces[int(index)], item)]


def decode(space: spaces.Space[Any], data: Any) -> Any:
    """The value of a Graph, Sequence or OneOf space that :func:`encode` wrote.

    Raises:
        SpaceCodecError: ``data`` does not fit the space.
    """
    if isinstance(space, spaces.Graph):
        if not isinstance(data, dict) or data.keys() - {_LINKS_DTYPE} != _GRAPH_FIELDS:
            got = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise SpaceCodecError(f"a Graph value is an object with {sorted(_GRAPH_FIELDS)}, got {got}")
        nodes = _batch_from_json(space.node_space, data["nodes"], "nodes")
        if data["edges"] is None and data["edge_links"] is None:
            return spaces.GraphInstance(nodes, None, None)
        if space.edge_space is None or data["edges"] is None or data["edge_links"] is None:
            raise SpaceCodecError(
                f"edges and edge links come together, and only for a Graph with an edge space: {space}"
            )
        edges = _batch_from_json(space.edge_space, data["edges"], "edges")
        dtype = _links_dtype(data[_LINKS_DTYPE]) if _LINKS_DTYPE in data else _DEFAULT_LINKS_DTYPE
        return spaces.GraphInstance(nodes, edges, _edge_links(data["edge_links"], len(data["edges"]), dtype))
    if isinstance(space, spaces.Sequence):
        if space.stack:
            return _batch_from_json(space.feature_space, data, "items")
        if not isinstance(data, list):
            raise SpaceCodecError(f"a Sequence value is a list of items, got {type(data).__name__}")
        return tuple(decode_value(space.feature_space, item) for item in data)
    assert isinstance(space, spaces.OneOf)
    valid = isinstance(data, list) and len(data) == 2 and type(data[0]) is int and 0 <= data[0] < len(space.spaces)
    if not valid:
        raise SpaceCodecError(f"a OneOf value is [index below {len(space.spaces)}, value], got {data!r:.200}")
    return np.int64(data[0]), decode_value(space.spaces[data[0]], data[1])
