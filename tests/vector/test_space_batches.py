"""A server-side vector env's batches of composite and dynamic spaces, joined across blocks as Gymnasium joins sub-envs."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from openenv_gym.protocol import arrays
from tests.conformance import envs as conformance_envs
from tests.equivalence import assert_same
from vector.space_batches import batch_from_wire, join_space_batches, slice_space_batch

POINT = spaces.Box(-1.0, 1.0, (2,), np.float32)
SPACES = {
    "Tuple": spaces.Tuple((POINT, spaces.Discrete(4))),
    "Dict": spaces.Dict({"point": POINT, "pair": spaces.Tuple((spaces.Discrete(3), POINT))}),
    "Sequence": spaces.Sequence(POINT),
    "stacked Sequence": spaces.Sequence(spaces.Tuple((POINT, spaces.Discrete(2))), stack=True),
    "Graph": spaces.Graph(node_space=POINT, edge_space=spaces.Discrete(3)),
    "OneOf": spaces.OneOf((POINT, spaces.Discrete(5))),
    "Tuple of Sequence": spaces.Tuple((spaces.Sequence(spaces.Discrete(3)), POINT)),
}
BLOCKS = [(0, 2), (2, 3), (3, 5)]


def batch_of(space, values):
    """Gymnasium's batch of ``values``: what SyncVectorEnv returns for these sub-envs."""
    return concatenate(space, values, create_empty_array(space, len(values)))


def over_the_wire(batch):
    """A block's batch as a vector session delivers it (packed and unpacked: tuples become lists)."""
    return arrays.unpack(arrays.pack({"observations": batch}))["observations"]


@pytest.mark.parametrize("name", sorted(SPACES))
def test_blocks_batches_join_as_gymnasium_batches_the_sub_envs(name):
    space = SPACES[name]
    space.seed(3)
    values = [space.sample() for _ in range(5)]
    expected = batch_of(space, values)
    received = [batch_from_wire(space, over_the_wire(batch_of(space, values[a:b]))) for a, b in BLOCKS]
    joined = join_space_batches(space, received)
    assert_same(joined, expected, name)
    assert batch_space(space, 5).contains(joined)
    for a, b in BLOCKS:  # a masked reset keeps the others' part of the batch
        assert_same(slice_space_batch(space, joined, a, b), batch_of(space, values[a:b]), f"{name} {a}:{b}")


def test_the_probes_values_keep_their_python_types():
    """The env's own values (a OneOf's Python int index, a Discrete step count) come back as the env gave them."""
    space = conformance_envs.OneOfProbe().observation_space
    values = [(1, 3), (0, np.array([1.0, 0.5], np.float32))]
    received = batch_from_wire(space, over_the_wire(batch_of(space, values)))
    assert_same(received, batch_of(space, values), "OneOf")
    assert type(received[0][0]) is int and type(received[0][1]) is int
