"""The `Environment` base class that servers host, with its typed pydantic Action/Observation/State.

The shape follows OpenEnv's ``Environment`` so its environments port with few changes: ``reset``
and ``step`` return an :class:`Observation` that carries ``reward`` and ``done``; ``state`` is a
property. Our additions: ``truncated`` and ``info`` on the observation, and optional Gymnasium
``action_space`` / ``observation_space`` that the server publishes in ``/schema``, and tools
(``@tool`` methods, :mod:`.tools`) that clients list and call as OpenEnv's MCP environments do.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from ..protocol import ObservationFrame
from ..protocol.frames import observation_fields
from ..protocol.tools import call_tool_observation, list_tools_observation
from ..rewards import Composition, metadata_with_parts
from .tools import DEFAULT_TOOL_TIMEOUT, MAX_TOOL_RESULT_BYTES, Tool, ToolOutcome, collect_tools

if TYPE_CHECKING:
    from gymnasium import spaces

__all__ = [
    "Action",
    "Environment",
    "EnvironmentMetadata",
    "Observation",
    "State",
]


class Action(BaseModel):
    """Base class of an environment's action: its fields are the step frame's ``data``."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    """Base class of an environment's observation.

    Subclasses add the observation's fields; ``reward``, ``done``, ``truncated``, ``info`` and
    ``metadata`` travel beside them in the observation frame, not inside.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    done: bool = False
    reward: bool | int | float | None = None
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


_FRAME_FIELDS = {"done", "reward", "truncated", "info", "metadata"}


class State(BaseModel):
    """The state a session reports on a ``state`` request; subclasses may add fields."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


class EnvironmentMetadata(BaseModel):
    """What ``GET /metadata`` returns (the fields OpenEnv defines)."""

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class Environment(abc.ABC, Generic[ActT, ObsT, StateT]):
    """An environment a server hosts: one instance per session.

    Subclasses set the class attributes and implement :meth:`reset`, :meth:`step` and
    :attr:`state`. The server calls them from one thread per session when :attr:`blocking` is
    true, so a slow step never stalls other sessions; cheap environments set it to false and run
    on the event loop.

    Attributes:
        action_type: the pydantic model a step frame's ``data`` is validated against.
        observation_type: the pydantic model :meth:`reset` and :meth:`step` return.
        state_type: the pydantic model :attr:`state` returns.
        action_space: the Gymnasium action space published in ``/schema``, if any.
        observation_space: the Gymnasium observation space published in ``/schema``, if any.
        space_descriptions: the same two spaces given as data instead, in the JSON form of
            :mod:`openenv_gym.spaces` (``{"action": {...}, "observation": {...}}``), so that
            serving the environment needs neither gymnasium nor numpy.
        SUPPORTS_CONCURRENT_SESSIONS: whether many instances may live in one server process.
        blocking: whether ``reset``/``step`` may block and must run off the event loop.
        tools: the class's ``@tool`` methods by name, collected when the class is created.
        tool_timeout_s: seconds a tool call may take unless the tool or the call says otherwise;
            an instance may set its own.
        max_tool_result_bytes: the largest text one tool call may return.
        render_modes, render_fps: what :meth:`render` can give, as Gymnasium's
            ``metadata["render_modes"]`` and ``["render_fps"]`` say; published in ``/schema``.
        max_episode_steps: the steps after which an episode is truncated, if the environment
            has such a time limit; published in ``/schema`` (the web page shows it).
        reward_composition: for an env whose steps return ``info["reward_components"]``, how
            its reward is made of them (:class:`openenv_gym.rewards.Composition`); published in
            ``/schema["reward"]``.
    """

    action_type: ClassVar[type[Action]] = Action
    state_type: ClassVar[type[State]] = State
    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = False
    # A class's defaults, which an instance may set for itself (an env of two modes, a Gymnasium
    # env served in its own thread or not).
    observation_type: type[Observation] = Observation
    blocking: bool = True

    action_space: spaces.Space[Any] | None = None
    observation_space: spaces.Space[Any] | None = None
    space_descriptions: dict[str, Any] | None = None

    tools: ClassVar[Mapping[str, Tool]] = {}
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT
    max_tool_result_bytes: int = MAX_TOOL_RESULT_BYTES
    render_modes: Sequence[str] = ()
    render_fps: float | None = None
    max_episode_steps: int | None = None
    reward_composition: Composition | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A bad tool fails here, when the class is created.
        cls.tools = collect_tools(cls, protected=frozenset(dir(Environment)))

    @abc.abstractmethod
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        """Start a new episode and return its first observation."""

    @abc.abstractmethod
    def step(self, action: ActT) -> ObsT:
        """Apply ``action`` and return the next observation, with its reward and flags."""

    @property
    @abc.abstractmethod
    def state(self) -> StateT:
        """The session's current state."""

    def close(self) -> None:
        """Release what the environment holds; called once when its session ends, however it ends."""

    def render(self) -> Any:
        """The frame of the session's render mode (an RGB array, text, a list of them, or None).

        Raises:
            NotImplementedError: the environment renders nothing (the default).
        """
        raise NotImplementedError(f"{type(self).__name__} renders nothing")

    # Snapshots: an environment that can copy its state implements both; the server keeps the bytes.

    def snapshot(self) -> bytes:
        """The environment's whole state as bytes, which :meth:`restore` takes back.

        Everything a later step depends on belongs in it: the episode's data, random generators,
        step counts. The server keeps the bytes (and counts them against the session's limit), and
        a portable snapshot carries them to another server of the same environment.

        Raises:
            NotImplementedError: the environment cannot be snapshotted (the default), or not now;
                the message says why, and the client gets it as ``SnapshotUnsupportedError``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement snapshot() and restore()")

    def restore(self, state: bytes) -> None:
        """Put the environment back into ``state``, bytes :meth:`snapshot` returned (in this
        instance or another of the same class, maybe in another process).

        ``state`` may be restored many times, so it must not be consumed. Raise
        :class:`~openenv_gym.errors.SnapshotRefusedError` for a state this instance will not
        take, before changing anything (the session goes on); raise anything else rather than
        leave a half-restored environment (the session then needs a reset before it steps).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement snapshot() and restore()")

    def snapshot_support(self) -> dict[str, Any]:
        """What ``/schema["snapshot"]`` says of this environment (called once per server, on a fresh instance).

        ``{"supported": true, "method": ...}``, or ``{"supported": false, "reason": ...}``.
        """
        if type(self).snapshot is Environment.snapshot:
            return {"supported": False, "reason": f"{type(self).__name__} does not implement snapshot() and restore()"}
        return {"supported": True, "method": "environment"}

    def task_catalog(self) -> dict[str, Any] | None:
        """What ``/schema["tasks"]`` says of the env's task set (``None``, the default: it has none).

        Task envs return their ``TaskSet.describe()``: counts, splits, fields and each task's id.
        """
        return None

    def get_metadata(self) -> EnvironmentMetadata:
        """Describe the environment for ``GET /metadata``."""
        return EnvironmentMetadata(
            name=type(self).__name__, description=(type(self).__doc__ or "").strip().split("\n")[0]
        )

    # Wire hooks: how the server turns frames into calls and results into frames. Environments
    # whose actions are not pydantic models (the Gymnasium adapter) override these.

    def parse_action(self, data: dict[str, Any]) -> ActT:
        """Turn a step frame's ``data`` into an action; raise ``ValueError`` if it does not fit."""
        # A class attribute cannot name the class's type parameter: a subclass's action_type is its ActT.
        return cast(ActT, self.action_type.model_validate(data))

    def observation_frame(self, observation: ObsT) -> ObservationFrame:
        """Turn what :meth:`reset` or :meth:`step` returned into an observation frame."""
        data = observation.model_dump(exclude=_FRAME_FIELDS)
        metadata = metadata_with_parts(observation.metadata, observation.info)
        if self.tools and metadata:
            # OpenEnv's tool clients read metadata inside the observation (its servers drop it
            # there: OpenEnv #616); ours send it in both places, as OpenEnv 0.10 does.
            data["metadata"] = metadata
        return ObservationFrame(
            observation=data,
            reward=observation.reward,
            done=observation.done,
            truncated=observation.truncated,
            info=observation.info,
            metadata=metadata,
        )

    def reset_frame(self, observation: ObsT) -> ObservationFrame:
        """The observation frame that answers a reset: :meth:`observation_frame`'s, and for an env with
        tools, the observation's own fields (the task's prompt) also in the ``metadata`` inside it.

        OpenEnv's tool client keeps only that ``metadata`` of an observation that is neither a tool
        list nor a tool's result (openenv-core 0.3's ``MCPToolClient._parse_result``): without the
        copy, its users would never see the task.
        """
        frame = self.observation_frame(observation)
        if not self.tools:
            return frame
        metadata = {**observation_fields(frame.observation), **(frame.observation.get("metadata") or {})}
        return (
            dataclasses.replace(frame, observation={**frame.observation, "metadata": metadata}) if metadata else frame
        )

    def tool_descriptions(self) -> list[dict[str, Any]]:
        """Each tool's name, description and input schema, as ``tools/list`` and ``/schema`` give them."""
        return [tool.describe() for tool in self.tools.values()]

    def tools_frame(self) -> ObservationFrame:
        """The observation that answers ``list_tools``."""
        return ObservationFrame(list_tools_observation(self.tool_descriptions()))

    def tool_frame(self, outcome: ToolOutcome) -> ObservationFrame:
        """The observation that answers one ``call_tool``."""
        data = call_tool_observation(outcome.name, outcome.result, outcome.error)
        metadata = metadata_with_parts(outcome.metadata, outcome.info)
        if metadata:
            data["metadata"] = metadata
        return ObservationFrame(
            data,
            reward=outcome.reward,
            done=outcome.done,
            truncated=outcome.truncated,
            info=outcome.info,
            metadata=metadata,
        )

    def state_data(self) -> dict[str, Any]:
        """The JSON object a state frame carries."""
        return self.state.model_dump()

    def schema(self) -> dict[str, Any]:
        """What ``GET /schema`` returns: JSON schemas, plus the Gymnasium spaces when declared."""
        result: dict[str, Any] = {
            "action": self.action_type.model_json_schema(),
            "observation": self.observation_type.model_json_schema(),
            "state": self.state_type.model_json_schema(),
        }
        if self.tools:  # our extension: a client learns it may call tools without asking
            result["tools"] = self.tool_descriptions()
        if self.render_modes:  # our extension: what a session may ask with /ws?render_mode=
            result["render"] = {"modes": list(self.render_modes), "fps": self.render_fps}
        if self.max_episode_steps is not None:
            result["max_episode_steps"] = self.max_episode_steps
        if self.reward_composition is not None:  # our extension: the reward's parts (openenv_gym.rewards)
            result["reward"] = self.reward_composition.describe()
        tasks = self.task_catalog()
        if tasks is not None:  # our extension: a task env's task set (openenv_gym.tasks reads it)
            result["tasks"] = tasks
        # Our extension: whether a session may snapshot, restore and fork (openenv_gym.protocol.snapshot).
        result["snapshot"] = self.snapshot_support()
        if self.space_descriptions is not None:
            result["spaces"] = self.space_descriptions
        elif self.action_space is not None and self.observation_space is not None:
            from ..spaces import space_to_json

            result["spaces"] = {
                "action": space_to_json(self.action_space),
                "observation": space_to_json(self.observation_space),
            }
        return result
