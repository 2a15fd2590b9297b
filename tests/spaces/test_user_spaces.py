"""Spaces of your own: pickled only where a session trusts pickles (openenv_gym.spaces.user_spaces), and
AsyncVectorEnv's shared-memory rule (openenv_gym.spaces.shared_memory)."""

from __future__ import annotations

import base64
import multiprocessing
import pickle
import re
from typing import Any

import cloudpickle
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory

from openenv_gym.errors import SpaceCodecError, UnsupportedSpaceError
from openenv_gym.spaces import decode, encode, mismatch, space_from_json, space_to_json
from openenv_gym.spaces.shared_memory import check_shared_memory
from openenv_gym.spaces.user_spaces import carries_pickled_values, carry_pickled_values, same_space


class CountSpace(spaces.Space[int]):
    """A space of the user's own, whose ``contains`` takes only small integers."""

    def __init__(self, limit: int = 10, seed: int | None = None) -> None:
        super().__init__(seed=seed)
        self.limit = limit

    def sample(self, mask: Any = None, probability: Any = None) -> int:
        return int(self.np_random.integers(self.limit))

    def contains(self, x: Any) -> bool:
        return 0 <= x < self.limit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountSpace) and other.limit == self.limit


UNPICKLED: list[str] = []


def record(what: str) -> None:
    UNPICKLED.append(what)


class Tripwire:
    """Unpickling it runs code: it records that it ran."""

    def __reduce__(self) -> Any:
        return (record, ("ran",))


def forged(payload: Any, name: str = "CountSpace") -> dict[str, Any]:
    """A pickled description this process did not write with space_to_json (as a server could send)."""
    return {"type": "Pickled", "class": name, "pickle": base64.b64encode(cloudpickle.dumps(payload)).decode()}


def test_a_space_of_your_own_is_described_by_its_pickle_when_asked() -> None:
    """pickles=True: the description is the space's pickle and its class name; this process reads it back."""
    data = space_to_json(spaces.Tuple((CountSpace(5), spaces.Discrete(2))), pickles=True)
    inner = data["spaces"][0]
    assert inner["type"] == "Pickled" and inner["class"] == f"{__name__}.CountSpace"
    again = space_from_json(data)  # a pickle this process wrote itself: read without being told to trust it
    assert again == spaces.Tuple((CountSpace(5), spaces.Discrete(2)))


def test_a_pickle_this_process_did_not_write_is_refused_unread() -> None:
    """Without pickles=True a foreign pickle is refused saying why, and its code never runs."""
    UNPICKLED.clear()
    with pytest.raises(
        SpaceCodecError, match=re.escape("is a space of your own, described by its pickle, and unpickling runs code")
    ):
        space_from_json(description := forged(Tripwire(), "Tripwire"))
    assert UNPICKLED == []
    with pytest.raises(SpaceCodecError, match="holds a NoneType, not a gymnasium Space"):
        space_from_json(description, pickles=True)  # trusted: read (and run), then refused as no space
    assert UNPICKLED == ["ran"]


def test_a_trusted_pickle_is_read_and_its_values_travel_pickled() -> None:
    """pickles=True reads a foreign pickle; the space it holds carries its values pickled, unchecked by its
    contains() (a string is no CountSpace value, and AsyncVectorEnv would send it anyway)."""
    space = space_from_json(forged(CountSpace(3)), pickles=True)
    assert space == CountSpace(3) and carries_pickled_values(space)
    assert mismatch(space, "step(action-2)") is None
    wire = encode(space, ("any", np.arange(3)))
    assert isinstance(wire, str)
    value = decode(space, wire)
    assert value[0] == "any" and np.array_equal(value[1], np.arange(3))


@pytest.mark.parametrize(
    "data, message",
    [
        (forged(CountSpace()) | {"pickle": "not base64!"}, "is not base64"),
        (forged(CountSpace()) | {"pickle": 3}, "travels as base64 text, got int"),
        (forged(CountSpace()) | {"pickle": base64.b64encode(b"\x80\x05junk").decode()}, "could not be unpickled here"),
    ],
    ids=["not-base64", "not-text", "not-a-pickle"],
)
def test_an_unreadable_pickle_is_a_space_codec_error(data: dict[str, Any], message: str) -> None:
    with pytest.raises(SpaceCodecError, match=message):
        space_from_json(data, pickles=True)


def test_values_of_a_space_of_your_own_travel_only_where_marked() -> None:
    """An unmarked space of your own has no value form (UnsupportedSpaceError): a server that was not told
    to trust pickles never unpickles an action; its contains() still judges values."""
    space = CountSpace()
    with pytest.raises(UnsupportedSpaceError, match="CountSpace has no JSON form"):
        encode(space, 1)
    with pytest.raises(UnsupportedSpaceError, match="CountSpace has no JSON form"):
        decode(space, base64.b64encode(pickle.dumps(1)).decode())
    assert mismatch(space, 20) is not None
    nested = spaces.Dict({"count": space, "flag": spaces.Discrete(2)})
    assert carry_pickled_values(nested) is True and carries_pickled_values(space)
    assert carry_pickled_values(spaces.Discrete(2)) is False
    assert decode(nested, encode(nested, {"count": 20, "flag": 1})) == {"count": 20, "flag": np.int64(1)}


def test_same_space_compares_pickled_spaces_by_equality() -> None:
    """Pickles of equal spaces differ with their state (a seeded generator); they still describe one space."""
    seeded, fresh = CountSpace(4, seed=1), CountSpace(4)
    first, second = space_to_json(seeded, pickles=True), space_to_json(fresh, pickles=True)
    assert first != second and same_space(first, second)
    assert not same_space(first, space_to_json(CountSpace(5), pickles=True))
    assert not same_space(space_to_json(spaces.Discrete(2)), space_to_json(spaces.Discrete(3)))


# AsyncVectorEnv's shared-memory rule ------------------------------------------------------------


SHARED_MEMORY_CASES: dict[str, spaces.Space[Any]] = {
    "box": spaces.Box(0, 1, (3,)),
    "text": spaces.Text(4),
    "oneof": spaces.OneOf([spaces.Discrete(2), spaces.Box(0, 1)]),
    "dict": spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Tuple((spaces.MultiBinary(2),))}),
    "graph": spaces.Graph(node_space=spaces.Discrete(2), edge_space=None),
    "sequence": spaces.Sequence(spaces.Discrete(2)),
    "tuple-holding-sequence": spaces.Tuple((spaces.Discrete(2), spaces.Sequence(spaces.Discrete(2)))),
    "own": CountSpace(),
    "dict-holding-own": spaces.Dict({"a": spaces.Discrete(2), "own": CountSpace()}),
}


def gymnasium_refusal(space: spaces.Space[Any]) -> type[Exception] | None:
    """What AsyncVectorEnv(shared_memory=True) raises for ``space``: Gymnasium's own shared memory, made."""
    try:
        create_shared_memory(space, n=1, ctx=multiprocessing.get_context())
    except CustomSpaceError:
        return ValueError  # AsyncVectorEnv raises ValueError from it
    except TypeError:
        return TypeError
    return None


@pytest.mark.parametrize("space", list(SHARED_MEMORY_CASES.values()), ids=list(SHARED_MEMORY_CASES))
def test_shared_memory_rule_is_async_vector_envs(space: spaces.Space[Any]) -> None:
    """check_shared_memory refuses exactly what Gymnasium's shared memory cannot hold, with its error type."""
    expected = gymnasium_refusal(space)
    if expected is None:
        check_shared_memory(space)
        return
    with pytest.raises(expected) as refused:
        check_shared_memory(space)
    if expected is TypeError:  # Gymnasium's own tests look for these words
        assert "has a dynamic shape so its not possible to make a static shared memory." in str(refused.value)
    assert "shared_memory=False" in str(refused.value)
