"""The face of a session: how a Gymnasium value becomes a wire action, and a wire frame a Gymnasium result.

Every env of this package (:class:`~openenv_gym.env.RemoteEnv`, the async env, every block of
the vector env) talks to its session through one :class:`Face`:

* :meth:`Face.to_wire` turns an action into the wire action to send (or, for a tool call that
  is not one, into the step result to return at once, with nothing sent);
* :meth:`Face.reset_result` and :meth:`Face.step_result` turn the server's frame into what
  ``reset`` and ``step`` return; :func:`step_result` is the one place a frame's reward and
  flags are read (``reward: null`` is ``0.0``, flags are Python ``bool``).

The faces: :class:`PublishedSpaces` (the server published its Gymnasium spaces),
:class:`SchemaSpaces` (spaces mapped from OpenEnv JSON schemas), :class:`WireFace` (wire
objects passed through, for the vector env's batched fast paths) and, for envs that take tool
calls, :class:`~openenv_gym.tool_face.ToolFace` (loaded only when a tool env is made).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym

from .errors import InvalidActionError, SpaceCodecError
from .spaces import ACTION_FIELD, OBSERVATION_FIELD, from_wire, mismatch, space_from_json, to_wire

if TYPE_CHECKING:
    from .protocol import ObservationFrame
    from .protocol.vector import VectorResultFrame
    from .spaces.schema import SchemaSpace

__all__ = [
    "Face",
    "PublishedSpaces",
    "SchemaSpaces",
    "ServerSpaces",
    "SpacesFace",
    "StepResult",
    "WireFace",
    "as_env_returns",
    "face_of_schema",
    "holds_discrete",
    "offers_tools",
    "shm_refusal",
    "shm_refused",
    "shm_space_refusal",
    "spaces_of_schema",
    "step_result",
    "wants_tool_face",
    "wire_action",
]

#: What ``gymnasium.Env.step`` returns.
StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


def step_result(frame: ObservationFrame, observation: Any, info: dict[str, Any] | None = None) -> StepResult:
    """``step``'s return for ``frame`` with its observation (and info, default the frame's) already
    converted: the one place the reward (``null`` is ``0.0``, always a Python ``float``) and the
    flags (Python ``bool``) are read."""
    reward = 0.0 if frame.reward is None else float(frame.reward)
    return observation, reward, bool(frame.done), bool(frame.truncated), frame.info if info is None else info


def wire_action(face: Face, action: Any, env_id: str | None) -> dict[str, Any] | StepResult:
    """``face.to_wire(action)``, an invalid action's error naming the env ``env_id``."""
    try:
        return face.to_wire(action)
    except InvalidActionError as exc:
        exc.env_id = env_id
        raise


def as_env_returns(space: gym.Space[Any], value: Any) -> Any:
    """A decoded observation as the env returned it, as far as JSON tells: its Discrete values (and a
    OneOf's index) the Python ints JSON holds, as Gymnasium's envs return them (``gym.make``'s env,
    SyncVectorEnv's ``final_obs``); JSON cannot tell an ``int`` from an ``np.int64``, and a packed
    session sends the value itself, types and all. Arrays stay arrays. The single env's observations
    and a vector env's final observations both go through it."""
    if isinstance(space, gym.spaces.Discrete):
        return int(value)
    if isinstance(space, gym.spaces.Dict):
        return {key: as_env_returns(sub, value[key]) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(as_env_returns(sub, item) for sub, item in zip(space.spaces, value))
    if isinstance(space, gym.spaces.OneOf):
        index, item = value
        return int(index), as_env_returns(space.spaces[int(index)], item)
    if isinstance(space, gym.spaces.Sequence) and not space.stack:
        return tuple(as_env_returns(space.feature_space, item) for item in value)
    return value


def holds_discrete(space: gym.Space[Any]) -> bool:
    """Whether :func:`as_env_returns` changes any value of ``space`` (else it need not be called)."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.OneOf)):
        return True
    if isinstance(space, gym.spaces.Dict):
        return any(holds_discrete(sub) for sub in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return any(holds_discrete(sub) for sub in space.spaces)
    return isinstance(space, gym.spaces.Sequence) and not space.stack and holds_discrete(space.feature_space)


class Face(Protocol):
    """How one session's actions become wire actions and its frames become Gymnasium results."""

    @property
    def action_space(self) -> gym.Space[Any]:
        """The space of the actions :meth:`to_wire` takes."""
        ...

    @property
    def observation_space(self) -> gym.Space[Any]:
        """The space of the observations the results hold."""
        ...

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The env's tools as its server lists them (``[]`` for a face of spaces)."""
        ...

    def to_wire(self, action: Any) -> dict[str, Any] | StepResult:
        """The wire action to send for ``action``, or the step result to return without sending anything.

        Raises:
            InvalidActionError: ``action`` is not in the action space (nothing may be sent).
        """
        ...

    def reset_result(self, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        """What ``reset`` returns for the server's reset ``frame``."""
        ...

    def step_result(self, frame: ObservationFrame) -> StepResult:
        """What ``step`` returns for the server's step ``frame``."""
        ...

    def restored_result(self, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        """What ``restore`` returns for the frame a restore answers with: that of the reset or
        step (or tool call) that reached the restored state."""
        ...

    def tool_list_request(self) -> dict[str, Any] | None:
        """The step action that lists the server's tools when the face still needs them, else ``None``."""
        ...

    def take_tool_list(self, frame: ObservationFrame) -> None:
        """Take the tool list from the answer to :meth:`tool_list_request`."""
        ...


class SpacesFace:
    """A face of Gymnasium spaces: values checked against them and converted field by field.

    (``openenv_gym.env.ServerSpaces`` is this class.)

    Attributes:
        action_space, observation_space: the Gymnasium spaces.
        published: ``True`` when the server published them (``/schema["spaces"]``, openenv-gym's
            extension: exact); ``False`` when they were mapped from its JSON schemas
            (:mod:`openenv_gym.spaces.schema`), as for servers built with OpenEnv itself.
        unmapped: for mapped spaces, the fields left out (``"observation.x"`` / ``"action.y"``
            paths) with the reason.
    """

    def __init__(
        self,
        action_space: gym.Space[Any],
        observation_space: gym.Space[Any],
        published: bool,
        unmapped: dict[str, str] | None = None,
    ) -> None:
        self.action_space = action_space
        self.observation_space = observation_space
        self.published = published
        self.unmapped = dict(unmapped or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.action_space}, {self.observation_space})"

    def action_to_wire(self, action: Any) -> dict[str, Any]:
        """``action`` as the wire object to send.

        Raises:
            InvalidActionError: ``action`` is outside the action space; nothing was sent.
        """
        raise NotImplementedError

    def observation_from_wire(self, data: Any) -> Any:
        """The Gymnasium observation of a frame's wire observation."""
        raise NotImplementedError

    @property
    def tools(self) -> list[dict[str, Any]]:
        return []  # a face of spaces offers no tools

    def to_wire(self, action: Any) -> dict[str, Any]:
        return self.action_to_wire(action)

    def returned_observation(self, data: Any) -> Any:
        """The observation ``reset`` and ``step`` return for a frame's wire observation."""
        return self.observation_from_wire(data)

    def reset_result(self, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        return self.returned_observation(frame.observation), frame.info

    def step_result(self, frame: ObservationFrame) -> StepResult:
        return step_result(frame, self.returned_observation(frame.observation))

    def restored_result(self, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        return self.reset_result(frame)  # a reset's frame and a step's carry the observation alike

    def tool_list_request(self) -> dict[str, Any] | None:
        return None

    def take_tool_list(self, frame: ObservationFrame) -> None:
        raise TypeError(f"{self!r} takes no tool list")


#: The spaces of a server and how their values travel (importable from :mod:`openenv_gym.env` too).
ServerSpaces = SpacesFace


def _model_fields(model_schema: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The field names of a pydantic model's JSON schema, and the required ones among them."""
    if not isinstance(model_schema, dict) or not isinstance(model_schema.get("properties"), dict):
        return frozenset(), frozenset()
    required = model_schema.get("required")
    return frozenset(model_schema["properties"]), frozenset(required if isinstance(required, list) else ())


class PublishedSpaces(SpacesFace):
    """The spaces a server published (``/schema["spaces"]``): values travel by :func:`openenv_gym.spaces.to_wire`.

    Args:
        action_space, observation_space: the published spaces.
        action_schema: the server's action model's JSON schema: an action given as the fields
            of a model of its own (OpenEnv's ``{"code": ...}``) is sent as it is.
    """

    def __init__(self, action_space: gym.Space[Any], observation_space: gym.Space[Any], action_schema: Any = None):
        super().__init__(action_space, observation_space, True)
        self._fields, self._required = _model_fields(action_schema)
        # Only a model of its own, such as OpenEnv's CodeAction: the Gymnasium action's wire model
        # ({"action": ...}, nothing required) is checked against the space like any action.
        self._own_model = bool(self._required) and ACTION_FIELD not in self._fields
        self._scalars = holds_discrete(observation_space)  # Discrete values: the Python ints the env returned

    @property
    def own_action_model(self) -> bool:
        """Whether the server's actions have a model of their own (OpenEnv's ``{"code": ...}``)
        besides the Gymnasium action's ``{"action": value}``."""
        return self._own_model

    def action_to_wire(self, action: Any) -> dict[str, Any]:
        if (
            self._own_model
            and isinstance(action, dict)
            and not isinstance(self.action_space, gym.spaces.Dict)
            and action.keys() != {ACTION_FIELD}
            and self._required <= action.keys() <= self._fields
        ):
            # The fields of the server's own action model: sent as they are, and the server validates them.
            return dict(action)
        return to_wire(self.action_space, self.space_value(action), ACTION_FIELD)

    def space_value(self, action: Any) -> Any:
        """``action`` as a value of the action space (given in its wire form, ``{"action": value}``,
        it is unwrapped), checked against it.

        Raises:
            InvalidActionError: it is not in the action space.
        """
        value = action
        if (
            isinstance(action, dict)
            and not isinstance(self.action_space, gym.spaces.Dict)
            and action.keys() == {ACTION_FIELD}
        ):
            value = action[ACTION_FIELD]
        problem = mismatch(self.action_space, value)
        if problem is not None:
            raise InvalidActionError(action, self.action_space, problem)
        return value

    def row_result(self, result: VectorResultFrame) -> StepResult:
        """``step``'s return for a step's results through shared memory (a batch of one), as
        :meth:`step_result` returns them for its frame: the same types, the info as JSON."""
        observation = result.observations[0, ...]
        if self._scalars:
            observation = as_env_returns(self.observation_space, observation[()])  # as the wire's decoding gives
        rewards, terminated, truncated = result.rewards, result.terminated, result.truncated
        assert rewards is not None and terminated is not None and truncated is not None
        return observation, float(rewards[0]), bool(terminated[0]), bool(truncated[0]), result.infos

    def observation_from_wire(self, data: Any) -> Any:
        return from_wire(self.observation_space, data, OBSERVATION_FIELD)

    def returned_observation(self, data: Any) -> Any:
        observation = from_wire(self.observation_space, data, OBSERVATION_FIELD)
        return as_env_returns(self.observation_space, observation) if self._scalars else observation


class SchemaSpaces(SpacesFace):
    """Spaces mapped from a server's OpenEnv JSON schemas (:func:`openenv_gym.spaces.schema.openenv_spaces`)."""

    def __init__(self, action: SchemaSpace, observation: SchemaSpace, unmapped: dict[str, str]) -> None:
        super().__init__(action.space, observation.space, False, unmapped)
        self._action = action
        self._observation = observation

    def action_to_wire(self, action: Any) -> dict[str, Any]:
        try:
            return self._action.to_wire(action)
        except InvalidActionError:
            raise
        except SpaceCodecError as exc:  # the mapped fields check each value as they convert it
            raise InvalidActionError(action, self.action_space, str(exc)) from None

    def observation_from_wire(self, data: Any) -> Any:
        return self._observation.from_wire(data)


class WireFace(SpacesFace):
    """Wire objects passed through as they are: the vector env's batched paths convert a whole
    batch at once (or its server-side vector env's arrays need no conversion at all).

    Args:
        action_space, observation_space: the spaces of the values (``None``: unchecked).
        published: as :class:`SpacesFace`'s (``True``: the values are the spaces' own).
    """

    def __init__(
        self,
        action_space: gym.Space[Any] | None = None,
        observation_space: gym.Space[Any] | None = None,
        published: bool = False,
    ) -> None:
        super().__init__(action_space or gym.spaces.Dict(), observation_space or gym.spaces.Dict(), published)

    def action_to_wire(self, action: Any) -> Any:
        return dict(action) if isinstance(action, dict) else action

    def observation_from_wire(self, data: Any) -> Any:
        return data

    # The plain sessions' per-step path: the same results as SpacesFace's, with no call that converts nothing.
    to_wire = action_to_wire

    def step_result(self, frame: ObservationFrame) -> StepResult:
        return step_result(frame, frame.observation)


def offers_tools(schema: Any) -> bool:
    """Whether a server's ``/schema`` says it takes tool calls.

    Ours list their tools there (``"tools"``); an OpenEnv MCP server's action schema is its
    ``CallToolAction`` (fields ``tool_name`` and ``arguments``).
    """
    if not isinstance(schema, dict):
        return False
    if schema.get("tools"):
        return True
    action = schema.get("action")
    properties = action.get("properties") if isinstance(action, dict) else None
    return isinstance(properties, dict) and {"tool_name", "arguments"} <= properties.keys()


def wants_tool_face(tool_calls: bool | None, schema: Any, base_url: str) -> bool:
    """Whether to give an env the tool face: asked for, or tools and no spaces of its own.

    Raises:
        ValueError: ``tool_calls=True`` for a server that offers no tools.
    """
    offered = offers_tools(schema)
    if tool_calls and not offered:
        raise ValueError(f"tool_calls=True, but the server at {base_url} offers no tools in its /schema")
    if tool_calls is None:
        return offered and not (isinstance(schema, dict) and schema.get("spaces"))
    return tool_calls


def spaces_of_schema(schema: Any, base_url: str, json_schema_fallback: bool = False) -> SpacesFace:
    """The face of the spaces a server's ``/schema`` gives (``base_url`` names the server in messages).

    A server's own Gymnasium spaces (``/schema["spaces"]``) are always used when it publishes
    them. Otherwise, with ``json_schema_fallback``, they are built from its JSON schemas by
    :func:`openenv_gym.spaces.schema.openenv_spaces`, with one warning naming the fields left out.

    Raises:
        ValueError: it publishes no Gymnasium spaces and ``json_schema_fallback`` is off.
        UnsupportedSpaceError: a field every action needs has no space (the message names it).
    """
    spaces = schema.get("spaces") if isinstance(schema, dict) else None
    if spaces:
        return PublishedSpaces(
            space_from_json(spaces["action"]), space_from_json(spaces["observation"]), schema.get("action")
        )
    if not json_schema_fallback or not isinstance(schema, dict):
        raise ValueError(
            f"the server at {base_url} publishes no Gymnasium spaces in /schema (an OpenEnv server?); "
            "to build spaces from its JSON schemas use gym.make('openenv/Remote-v0', base_url=...) "
            "or pass json_schema_fallback=True"
        )
    from .spaces.schema import openenv_spaces

    action, observation = openenv_spaces(schema)
    unmapped = {
        f"{mapped.role}.{path}": reason for mapped in (action, observation) for path, reason in mapped.unmapped.items()
    }
    if unmapped:
        listed = "; ".join(f"{path}: {reason}" for path, reason in unmapped.items())
        warnings.warn(
            f"openenv-gym: the server at {base_url} publishes JSON schemas only, and these fields have no "
            f"Gymnasium space, so they are left out of the spaces (optional action fields take the server's "
            f"default): {listed}",
            UserWarning,
            stacklevel=4,
        )
    return SchemaSpaces(action, observation, unmapped)


def face_of_schema(schema: Any, base_url: str, *, json_schema_fallback: bool, tool_calls: bool | None) -> Face:
    """How one env's actions and observations travel, by its server's ``/schema``: its spaces, or
    the tool face (whose ``tools`` may be empty: an OpenEnv server lists them to a session)."""
    if wants_tool_face(tool_calls, schema, base_url):
        from .tool_face import ToolFace  # loaded only for a tool env

        return ToolFace(list(schema.get("tools") or []))
    return spaces_of_schema(schema, base_url, json_schema_fallback)


#: The spaces whose values shared memory carries: each one fixed-size array of numbers.
SHM_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def shm_refusal(face: Face, seat: Mapping[str, str]) -> str | None:
    """Why a plain session of this face cannot take shared memory, or None if its server may offer it.

    Known before any connection: ``transport="shm"`` is then refused at once (``ValueError``)
    and ``"auto"`` keeps to the WebSocket without asking the server.
    """
    if isinstance(face, SchemaSpaces):
        return "the server publishes no Gymnasium spaces (an OpenEnv server)"
    if not isinstance(face, PublishedSpaces):
        return "a tool call's step takes the WebSocket"
    if face.own_action_model:
        return "the server's actions have a model of their own"
    if seat:
        return "a seat in a game takes turns on the WebSocket"
    return shm_space_refusal(face.action_space, face.observation_space)


def shm_space_refusal(action_space: gym.Space[Any], observation_space: gym.Space[Any]) -> str | None:
    """Why shared memory cannot carry a (sub-)env of these spaces, or None if it can: the one rule
    of the single env's and the server-side vector env's ``transport="shm"``."""
    for what, space in (("action", action_space), ("observation", observation_space)):
        if not isinstance(space, SHM_SPACES):  # a Dict, Tuple, Text, Sequence, Graph, OneOf...
            kinds = ", ".join(kind.__name__ for kind in SHM_SPACES)
            return f"the {what} space {space} does not batch into one array of numbers (shared memory carries {kinds})"
    return None


def shm_refused(reason: str) -> ValueError:
    """The error of ``transport="shm"`` asked for an env that :func:`shm_refusal` refuses, raised before connecting."""
    return ValueError(f"transport='shm' cannot be served: {reason}; 'auto' or 'ws' carries this env")
