"""Envs with one mistake each, for `openenv-gym validate` to find: each check's test serves one and reads its line.

Each is a small working env (a counter: the action adds to it) except for its one mistake:

- :class:`RewardAsString` sends its reward as a string (its observation model lets any value through);
- :class:`SpaceThatDoesNotRoundTrip` publishes an integer Box bounded by 1.5, which reads back as 1;
- :class:`ResetIgnoresSeed` starts where its last episode left off, whatever the seed;
- :class:`ObservationOutsideItsSpace` counts past the top of its ``Discrete`` observation space;
- :class:`SnapshotMissesTheCount` snapshots its step count but not the count itself.
"""

from __future__ import annotations

import json
import random
from typing import Any, ClassVar

from pydantic import Field

from openenv_gym.server import Action, Environment, Observation, State

__all__ = [
    "COUNTER_SPACES",
    "Counter",
    "ObservationOutsideItsSpace",
    "ResetIgnoresSeed",
    "RewardAsString",
    "SnapshotMissesTheCount",
    "SpaceThatDoesNotRoundTrip",
]

#: The counter's spaces in openenv-gym's JSON form: add 0, 1 or 2; the count runs from 0 to 99.
COUNTER_SPACES: dict[str, Any] = {
    "action": {"type": "Discrete", "n": 3, "start": 0, "dtype": "int64"},
    "observation": {"type": "Discrete", "n": 100, "start": 0, "dtype": "int64"},
}


class CounterAction(Action):
    action: int = Field(ge=0, le=2)


class CounterObservation(Observation):
    observation: int = 0


class Counter(Environment[CounterAction, CounterObservation, State]):
    """A counter the action adds to; the episode ends at 20 (a correct env, the base of the broken ones)."""

    action_type = CounterAction
    observation_type = CounterObservation
    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = False
    space_descriptions: ClassVar[dict[str, Any]] = COUNTER_SPACES

    def __init__(self) -> None:
        self._state = State()
        self._rng = random.Random()
        self.count = 0

    def start(self) -> int:
        """Where an episode starts: 0 to 9."""
        return self._rng.randrange(10)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CounterObservation:
        if seed is not None:  # as in Gymnasium: a seed restarts the generator, no seed continues it
            self._rng = random.Random(seed)
        self._state = State(episode_id=episode_id, step_count=0)
        self.count = self.start()
        return self.observation_type(observation=self.count)

    def step(self, action: CounterAction) -> CounterObservation:
        self._state.step_count += 1
        self.count += action.action
        return self.observation_type(observation=self.count, reward=float(action.action), done=self.count >= 20)

    @property
    def state(self) -> State:
        return self._state

    def snapshot(self) -> bytes:
        version, internal, gauss = self._rng.getstate()
        return json.dumps(
            {"rng": [version, internal, gauss], "state": self._state.model_dump(), "count": self.count}
        ).encode()

    def restore(self, state: bytes) -> None:
        saved = json.loads(state)
        version, internal, gauss = saved["rng"]
        self._rng.setstate((version, tuple(internal), gauss))
        self._state = State.model_validate(saved["state"])
        self.count = saved.get("count", self.count)


class SnapshotMissesTheCount(Counter):
    """Keeps its step count in a snapshot, and forgets the count: a restore goes on from where it was."""

    def snapshot(self) -> bytes:
        return json.dumps({"rng": list(self._rng.getstate()), "state": self._state.model_dump()}).encode()


class StringRewardObservation(CounterObservation):
    reward: Any = None  # the mistake: anything goes through, a string too


class RewardAsString(Counter):
    """Sends ``"reward": "1"``: a string where OpenEnv and Gymnasium need a number."""

    observation_type = StringRewardObservation

    def step(self, action: CounterAction) -> CounterObservation:
        observation = super().step(action)
        observation.reward = str(action.action)
        return observation


class SpaceThatDoesNotRoundTrip(Counter):
    """Publishes an int64 Box with a fractional bound: Gymnasium reads ``high: 1.5`` as 1."""

    space_descriptions: ClassVar[dict[str, Any]] = {
        "action": {"type": "Box", "shape": [], "dtype": "int64", "low": 0, "high": 1.5},
        "observation": COUNTER_SPACES["observation"],
    }


class ResetIgnoresSeed(Counter):
    """Starts each episode one past where the last one started, whatever ``reset(seed=...)`` says: state
    kept across resets, as a generator made once and never reseeded would keep it (but never by chance
    the same twice)."""

    def __init__(self) -> None:
        super().__init__()
        self._resets = 0

    def start(self) -> int:
        self._resets += 1
        return self._resets % 10


class ObservationOutsideItsSpace(Counter):
    """Starts its count at 5, but its observation space says the count is below 5."""

    space_descriptions: ClassVar[dict[str, Any]] = {
        "action": COUNTER_SPACES["action"],
        "observation": {"type": "Discrete", "n": 5, "start": 0, "dtype": "int64"},
    }

    def start(self) -> int:
        return 5
