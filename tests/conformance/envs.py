"""The small envs every conformance path serves: a probe of the contract, registered as Gymnasium ids.

``conformance/Probe-v0`` has what the contract tests look at: seeded randomness, episodes that
terminate (an action's running sum) or are truncated (a time limit), infos that some sub-envs lack
at some steps (so masks matter), an attribute to get and set, a method to call and an
``rgb_array`` render. ``conformance/DictProbe-v0`` and ``conformance/TupleProbe-v0`` observe
the same in a ``Dict`` and a ``Tuple``. Each id has a ``vector_entry_point`` (Gymnasium's
``SyncVectorEnv`` of it), so a server can run its sub-envs as one server-side vector env.

Servers import this module by name (``tests.conformance.envs:conformance/Probe-v0``), which
registers the ids there too.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

TIME_LIMIT = 6
SUM_LIMIT = 5  # an episode terminates once its actions add up to this

PROBE_ID = "conformance/Probe-v0"
DICT_ID = "conformance/DictProbe-v0"
TUPLE_ID = "conformance/TupleProbe-v0"
TROUBLE_ID = "conformance/Trouble-v0"
LIST_INFO_ID = "conformance/ListInfoProbe-v0"
SEQUENCE_ID = "conformance/SequenceProbe-v0"
GRAPH_ID = "conformance/GraphProbe-v0"
ONE_OF_ID = "conformance/OneOfProbe-v0"
DISCRETE_ID = "conformance/DiscreteProbe-v0"
VARYING_SHAPE = {SEQUENCE_ID, GRAPH_ID}  # no static shared memory holds their observations
NAP = 3.0  # seconds a Trouble env's action 1 sleeps: far longer than the timeouts the tests give it


class Refused(Exception):
    """An exception of the probe's own, whose text names another type (``Probe.refuse`` raises it)."""


class Probe(gym.Env[Any, Any]):
    """Observes (step, running sum, a seeded offset); the reward is the action times ``scale``."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["rgb_array"],
        "render_fps": 500,
    }  # HumanRendering waits 1/fps a frame

    def __init__(self, render_mode: str | None = None) -> None:
        self.observation_space = self.observed()
        self.action_space = spaces.Discrete(3)
        self.render_mode = render_mode
        self.scale = 1.0  # what get_attr/set_attr read and change
        self.steps = 0
        self.total = 0
        self.offset = 0.0

    def observed(self) -> spaces.Space[Any]:
        """The observation space."""
        return spaces.Box(-100.0, 100.0, (3,), np.float32)

    def observation(self) -> Any:
        """The observation now."""
        return np.array([self.steps, self.total, self.offset], np.float32)

    def scaled(self, value: float) -> float:
        """A method for ``call``: ``value`` times the env's scale."""
        return value * self.scale

    def refuse(self) -> None:
        """A method for ``call`` that raises an exception whose text, not its type, says AttributeError."""
        raise Refused("refused: AttributeError: in the text only")

    def nap(self, seconds: float) -> float:
        """A method for ``call`` that takes ``seconds``."""
        time.sleep(seconds)
        return seconds

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps, self.total = 0, 0
        self.offset = float(self.np_random.uniform(-1.0, 1.0))
        return self.observation(), {"offset": self.offset}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        self.steps += 1
        self.total += int(action)
        info: dict[str, Any] = {"steps": self.steps}
        if self.steps % 2 == 0:
            info["even"] = True  # only on even steps: a key the other sub-envs may lack
        return self.observation(), float(action) * self.scale, self.total >= SUM_LIMIT, False, info

    def render(self) -> Any:
        if self.render_mode != "rgb_array":
            return None
        frame = np.zeros((4, 4, 3), np.uint8)
        frame[..., 0] = self.steps
        return frame


class DictProbe(Probe):
    """The probe observed as ``{"position": Box, "steps": Discrete}``."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.Dict(
            {"position": spaces.Box(-100.0, 100.0, (2,), np.float32), "steps": spaces.Discrete(TIME_LIMIT + 1)}
        )

    def observation(self) -> Any:
        return {"position": np.array([self.total, self.offset], np.float32), "steps": self.steps}


class TupleProbe(Probe):
    """The probe observed as ``(Box, Discrete)``."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.Tuple((spaces.Box(-100.0, 100.0, (2,), np.float32), spaces.Discrete(TIME_LIMIT + 1)))

    def observation(self) -> Any:
        return (np.array([self.total, self.offset], np.float32), self.steps)


class DiscreteProbe(Probe):
    """The probe observed as its step count, a Python int in Discrete(TIME_LIMIT + 1)."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.Discrete(TIME_LIMIT + 1)

    def observation(self) -> Any:
        return self.steps


POINT = spaces.Box(-100.0, 100.0, (2,), np.float32)


class SequenceProbe(Probe):
    """The probe observed as a Sequence of points, one per step so far (a space of varying size)."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.Sequence(POINT)

    def observation(self) -> Any:
        return tuple(np.array([step, self.offset], np.float32) for step in range(self.steps))


class GraphProbe(Probe):
    """The probe observed as a Graph: a chain of a node per step, each edge the running sum mod 3."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.Graph(node_space=POINT, edge_space=spaces.Discrete(3))

    def observation(self) -> Any:
        nodes = np.array([[step, self.offset] for step in range(self.steps + 1)], np.float32)
        links = np.array([[step, step + 1] for step in range(self.steps)], np.int64).reshape(-1, 2)
        return spaces.GraphInstance(nodes, np.full(self.steps, self.total % 3, np.int64), links)


class OneOfProbe(Probe):
    """The probe observed as a OneOf: a point on even steps, the step count on odd ones."""

    def observed(self) -> spaces.Space[Any]:
        return spaces.OneOf((POINT, spaces.Discrete(TIME_LIMIT + 1)))

    def observation(self) -> Any:
        if self.steps % 2 == 0:
            return (0, np.array([self.total, self.offset], np.float32))
        return (1, self.steps)


class Trouble(Probe):
    """The probe whose action 1 sleeps :data:`NAP` seconds and whose action 2 raises RuntimeError."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if action == 1:
            time.sleep(NAP)
        if action == 2:
            raise RuntimeError("the probe was told to fail")
        return super().step(action)


class ListInfoProbe(Probe):
    """The probe whose step info also holds a list ("pair": [steps, total])."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward, terminated, truncated, {**info, "pair": [self.steps, self.total]}


def vector_of(env_id: str):
    """The ``vector_entry_point`` of ``env_id``: Gymnasium's ``SyncVectorEnv`` of its envs, as
    ``gymnasium.make_vec`` calls an entry point (``num_envs`` and the env's arguments)."""

    def make(
        num_envs: int,
        autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = TIME_LIMIT,
        render_mode: str | None = None,
    ) -> SyncVectorEnv:
        def one() -> gym.Env[Any, Any]:
            return gym.make(env_id, max_episode_steps=max_episode_steps, render_mode=render_mode)

        return SyncVectorEnv([one] * num_envs, autoreset_mode=autoreset_mode)

    return make


IDS = {
    PROBE_ID: Probe,
    DICT_ID: DictProbe,
    TUPLE_ID: TupleProbe,
    TROUBLE_ID: Trouble,
    LIST_INFO_ID: ListInfoProbe,
    SEQUENCE_ID: SequenceProbe,
    GRAPH_ID: GraphProbe,
    ONE_OF_ID: OneOfProbe,
    DISCRETE_ID: DiscreteProbe,
}
for _id, _class in IDS.items():
    if _id not in gym.registry:
        gym.register(
            _id,
            entry_point=_class,
            max_episode_steps=TIME_LIMIT,
            vector_entry_point=vector_of(_id),
            disable_env_checker=True,
        )
