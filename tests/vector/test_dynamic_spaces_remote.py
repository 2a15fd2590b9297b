"""Graph, Sequence, OneOf and spaces of your own through served envs: RemoteEnv, and from_env_fns's batch
sessions batched exactly as Gymnasium's own vector envs batch them (tuples for these spaces)."""

from __future__ import annotations

import copy
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import SyncVectorEnv

from openenv_gym import EnvCreationError, RemoteEnv
from openenv_gym.errors import SpaceMismatchError
from openenv_gym.face import as_env_returns
from openenv_gym.server import GymEnvironment
from openenv_gym.vector import RemoteVectorEnv
from tests.utils import UNIT, own_server_pids, running_server, wait_until

BOX2 = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

SPACES: dict[str, spaces.Space[Any]] = {
    "graph": spaces.Graph(
        node_space=spaces.Dict({"pos": BOX2, "kind": spaces.Discrete(3)}), edge_space=spaces.Discrete(4)
    ),
    "sequence": spaces.Sequence(spaces.Discrete(4)),
    "stacked-sequence": spaces.Sequence(spaces.Dict({"a": BOX2, "b": spaces.Discrete(5)}), stack=True),
    "oneof": spaces.OneOf([spaces.Discrete(3), BOX2]),
    "tuple-holding-graph": spaces.Tuple((spaces.Graph(node_space=BOX2, edge_space=None), spaces.Discrete(2))),
}


class SpaceEnv(gym.Env[Any, Any]):
    """Observations and actions of one space; each observation a sample, seeded by reset(seed=...)."""

    def __init__(self, space: spaces.Space[Any]) -> None:
        self.observation_space = copy.deepcopy(space)
        self.action_space = copy.deepcopy(space)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if action not in self.action_space:
            raise ValueError(f"{action!r} is not an action of {self.action_space}")
        return self.observation_space.sample(), 1.0, False, False, {}


@pytest.fixture(autouse=True)
def no_server_left_behind():
    yield
    assert wait_until(lambda: not own_server_pids(), 10 * UNIT), f"servers left: {own_server_pids()}"


@pytest.mark.parametrize("space", list(SPACES.values()), ids=list(SPACES))
def test_a_served_env_with_these_spaces_steps_through_remote_env(space: spaces.Space[Any]) -> None:
    """RemoteEnv on a server of such an env has its spaces and gives its exact values (types and dtypes),
    but for its Discrete values: the Python ints JSON holds, as gym.make's envs return them (these
    samples are np.int64s, which JSON cannot tell from ints: openenv_gym.face.as_env_returns)."""
    with running_server(lambda: GymEnvironment(SpaceEnv(space))) as server:
        env = RemoteEnv(base_url=server.url)
        local = SpaceEnv(space)
        try:
            assert env.observation_space == space and env.action_space == space
            observation, info = local.reset(seed=3)
            assert data_equivalence(env.reset(seed=3), (as_env_returns(space, observation), info), exact=True)
            for action in (space.sample() for _ in range(3)):
                observation, *rest = local.step(action)
                assert data_equivalence(env.step(action), (as_env_returns(space, observation), *rest), exact=True)
        finally:
            env.close()


@pytest.mark.parametrize("space", list(SPACES.values()), ids=list(SPACES))
def test_from_env_fns_batches_these_spaces_as_sync_vector_env(space: spaces.Space[Any]) -> None:
    """from_env_fns(shared_memory=False) gives SyncVectorEnv's spaces, batches (tuples of the sub-envs'
    values) and results exactly, its actions batched the same way."""
    env_fns = [lambda: SpaceEnv(space)] * 3
    remote = RemoteVectorEnv.from_env_fns(env_fns, shared_memory=False, servers=1)
    local = SyncVectorEnv(env_fns)
    try:
        assert remote.single_observation_space == space and remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        observations, infos = remote.reset(seed=5)
        assert data_equivalence((observations, infos), local.reset(seed=5), exact=True)
        assert observations in remote.observation_space
        local.action_space.seed(1)
        for _ in range(3):
            actions = local.action_space.sample()
            stepped = remote.step(actions)
            assert data_equivalence(stepped, local.step(actions), exact=True)
            assert stepped[0] in remote.observation_space
    finally:
        remote.close()
        local.close()


def own_space_env_fns(count: int, limits: tuple[int, ...] = ()) -> list[Any]:
    """Envs whose spaces are the user's own class, defined here so that it travels by value; each
    sub-env's space seeded differently, so their pickles differ though the spaces are equal (unless
    ``limits`` gives the sub-envs' spaces different limits)."""

    class Countdown(spaces.Space[int]):
        """Numbers up to ``limit``, whose contains() takes no strings."""

        def __init__(self, limit: int, seed: int | None = None) -> None:
            super().__init__(seed=seed)
            self.limit = limit

        def contains(self, x: Any) -> bool:
            return 0 <= x <= self.limit

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Countdown) and other.limit == self.limit

    class CountdownEnv(gym.Env[Any, Any]):
        def __init__(self, index: int) -> None:
            limit = limits[index] if limits else 10
            self.observation_space = spaces.Tuple((Countdown(limit, seed=index), spaces.Discrete(2)))
            self.action_space = Countdown(10, seed=index)
            self.index = index

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[Any, dict[str, Any]]:
            super().reset(seed=seed)
            return ("reset", 1), {}

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            return (f"step({action}) in {self.index}", 0), 0.0, False, False, {}

    return [lambda index=index: CountdownEnv(index) for index in range(count)]


def test_from_env_fns_runs_spaces_of_your_own_pickled() -> None:
    """A space of your own reaches the client as itself, and its values (here strings its contains() would
    refuse) travel pickled both ways, batched as AsyncVectorEnv batches them."""
    env_fns = own_space_env_fns(3)
    remote = RemoteVectorEnv.from_env_fns(env_fns, shared_memory=False, servers=1)
    local = SyncVectorEnv(env_fns)
    try:
        assert type(remote.single_action_space).__name__ == "Countdown"
        assert remote.single_action_space == local.single_action_space
        assert remote.observation_space == local.observation_space
        observations, infos = remote.reset()
        assert observations[0] == ("reset",) * 3 and infos == {}
        assert data_equivalence((observations, infos), local.reset(), exact=True)
        actions = ("a", "b", "c")
        assert data_equivalence(remote.step(actions), local.step(actions), exact=True)
    finally:
        remote.close()
        local.close()


def test_a_sub_env_with_another_space_of_your_own_is_named_as_a_space() -> None:
    """A sub-env whose space of your own differs is a SpaceMismatchError naming the space it has (read
    from its pickle), not its pickle's text."""
    with pytest.raises(SpaceMismatchError, match="sub-env 1 has the observation space Tuple") as refused:
        RemoteVectorEnv.from_env_fns(own_space_env_fns(2, limits=(10, 5)), shared_memory=False, servers=1)
    assert "'Pickled'" not in str(refused.value)


@pytest.mark.parametrize(
    "env_fn, error, message",
    [
        (
            lambda: SpaceEnv(SPACES["graph"]),
            TypeError,
            "has a dynamic shape so its not possible to make a static shared memory.",
        ),
        (lambda: SpaceEnv(SPACES["tuple-holding-graph"]), TypeError, "has a dynamic shape"),
        (own_space_env_fns(1)[0], ValueError, "Countdown is a space of your own, which shared memory cannot hold"),
    ],
    ids=["graph", "tuple-holding-graph", "own"],
)
def test_shared_memory_refuses_what_async_vector_env_refuses(env_fn: Any, error: type[Exception], message: str) -> None:
    """shared_memory=True (the default, as AsyncVectorEnv's) refuses these spaces before any server starts."""
    with pytest.raises(error, match=re.escape(message)):
        RemoteVectorEnv.from_env_fns([env_fn] * 2, shared_memory=True)
    assert own_server_pids() == set()


def test_a_plain_server_refuses_a_space_of_your_own_saying_why() -> None:
    """Outside a session that trusts pickles a space of your own has no wire form: the client is told why
    and what to do."""
    with running_server(lambda: GymEnvironment(own_space_env_fns(1)[0]())) as server:
        with pytest.raises(
            EnvCreationError, match=re.escape("Countdown has no JSON form: it is a space of your own")
        ) as refused:
            RemoteEnv(base_url=server.url)
    assert "run it with from_env_fns" in str(refused.value)
