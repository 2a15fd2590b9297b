"""The frames of the ``/ws`` protocol as typed dataclasses, and parsing them from text (no I/O).

Frames are JSON text messages ``{"type": ..., "data": ...}`` compatible with OpenEnv's ``/ws``
endpoint. A client sends ``reset``, ``step``, ``state`` or ``close``; the server answers
``observation``, ``state`` or ``error``. An ``mcp`` frame carries one MCP JSON-RPC message
either way (:mod:`.jsonrpc`). Our additions are additive, so OpenEnv clients ignore
them: ``truncated`` and ``info`` beside ``done`` in observation data; ``render``; and
``snapshot``, ``restore`` and ``release`` (:mod:`.snapshot`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ProtocolError
from . import arrays
from ._json import data_object, dumps, elide, invalid, load_object, text_of
from .codes import ErrorCode
from .snapshot import (
    ReleaseRequest,
    RestoreRequest,
    SnapshotFrame,
    SnapshotRequest,
    parse_snapshot_frame,
    parse_snapshot_request,
)

__all__ = [
    "ClientFrame",
    "CloseFrame",
    "ErrorFrame",
    "McpFrame",
    "ObservationFrame",
    "RenderFrame",
    "RenderRequest",
    "ResetFrame",
    "ServerFrame",
    "StateFrame",
    "StateRequest",
    "StepFrame",
    "observation_fields",
    "parse_client_frame",
    "parse_server_frame",
]


# Client -> server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetFrame:
    """Start a new episode; ``kwargs`` go to the environment's ``reset`` (``seed``, ``options``...)."""

    kwargs: dict[str, Any] = field(default_factory=dict)

    def serialize(self) -> str:
        return dumps({"type": "reset", "data": self.kwargs})

    def __str__(self) -> str:
        return f"reset {elide(self.kwargs)}"


@dataclass(frozen=True)
class StepFrame:
    """Apply one action; ``action`` is the action's wire form, a JSON object of its fields."""

    action: dict[str, Any]

    def serialize(self) -> str:
        return dumps({"type": "step", "data": self.action})

    def __str__(self) -> str:
        return f"step {elide(self.action)}"


@dataclass(frozen=True)
class StateRequest:
    """Ask for the session's current state (episode id, step count, env-specific fields)."""

    def serialize(self) -> str:
        return '{"type":"state"}'

    def __str__(self) -> str:
        return "state?"


@dataclass(frozen=True)
class RenderRequest:
    """Ask for the env's frame in the session's render mode (our extension; ``/ws?render_mode=``)."""

    def serialize(self) -> str:
        return '{"type":"render"}'

    def __str__(self) -> str:
        return "render?"


@dataclass(frozen=True)
class CloseFrame:
    """End the session; the server closes the environment and the connection."""

    def serialize(self) -> str:
        return '{"type":"close"}'

    def __str__(self) -> str:
        return "close"


@dataclass(frozen=True)
class McpFrame:
    """One MCP JSON-RPC 2.0 message (a request from a client, its response from the server)."""

    data: dict[str, Any]

    def serialize(self) -> str:
        return dumps({"type": "mcp", "data": self.data})

    def __str__(self) -> str:
        return f"mcp {elide(self.data)}"


ClientFrame = (
    ResetFrame
    | StepFrame
    | StateRequest
    | RenderRequest
    | CloseFrame
    | McpFrame
    | SnapshotRequest
    | RestoreRequest
    | ReleaseRequest
)


# Server -> client ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObservationFrame:
    """The result of a reset or a step.

    ``observation`` is the wire form of the observation (a JSON object of its fields); ``reward``
    may be ``None`` as in OpenEnv; ``truncated`` and ``info`` are our extensions.
    """

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] | None = None

    def serialize(self) -> str:
        data: dict[str, Any] = {
            "observation": self.observation,
            "reward": self.reward,
            "done": self.done,
            "truncated": self.truncated,
            "info": self.info,
        }
        if self.metadata:
            data["metadata"] = self.metadata
        return dumps({"type": "observation", "data": data})

    def check(self) -> None:
        """Raise :class:`ProtocolError` if a field has the wrong JSON type."""
        if not isinstance(self.observation, dict):
            raise invalid(f"observation must be an object, got {type(self.observation).__name__}")
        # OpenEnv allows bool rewards (Observation.reward: bool | int | float | None).
        if self.reward is not None and not isinstance(self.reward, (int, float)):
            raise invalid(f"reward must be a number or null, got {self.reward!r}")
        if not isinstance(self.done, bool) or not isinstance(self.truncated, bool):
            raise invalid("done and truncated must be booleans")
        if not isinstance(self.info, dict):
            raise invalid(f"info must be an object, got {type(self.info).__name__}")

    def __str__(self) -> str:
        return f"observation {elide(self.observation)} reward={self.reward} done={self.done} truncated={self.truncated}"


@dataclass(frozen=True)
class StateFrame:
    """The session's state, a JSON object."""

    state: dict[str, Any]

    def serialize(self) -> str:
        return dumps({"type": "state", "data": self.state})

    def __str__(self) -> str:
        return f"state {elide(self.state)}"


@dataclass(frozen=True)
class RenderFrame:
    """What ``render()`` returned: an RGB array, text (``ansi``), a list of them (``*_list``
    modes), or ``None``. Arrays travel packed (:mod:`openenv_gym.protocol.arrays`): as raw bytes
    on a connection that negotiated the binary subprotocol, inline in JSON otherwise.

    On a batch or vector session the frame is one per sub-env: a list (each item what that
    sub-env's ``render()`` returned), or whatever the server-side vector env's ``render()``
    returned: Gymnasium's ``CartPoleVectorEnv`` gives a list, its ``SyncVectorEnv`` a tuple, which
    travels as a list with ``"tuple": true`` beside it."""

    frame: Any

    @classmethod
    def from_object(cls, frame: Any) -> RenderFrame:
        """The frame a decoded ``{"type": "render", "data": {"frame": ...}}`` object holds.

        Raises:
            ProtocolError: ``frame`` is not such an object.
        """
        if not isinstance(frame, dict) or frame.get("type") != "render" or not isinstance(frame.get("data"), dict):
            raise invalid("a render frame must be an object with type 'render' and data.frame")
        data = frame["data"]
        value = data.get("frame")
        return cls(tuple(value) if data.get("tuple") is True and isinstance(value, list) else value)

    def _frame(self) -> dict[str, Any]:
        if isinstance(self.frame, tuple):  # SyncVectorEnv's frames are a tuple, CartPoleVectorEnv's a list: say which
            return {"type": "render", "data": {"frame": list(self.frame), "tuple": True}}
        return {"type": "render", "data": {"frame": self.frame}}

    def serialize(self) -> str:
        return arrays.to_json(self._frame())

    def serialize_binary(self) -> bytes:
        return arrays.pack(self._frame())

    def check(self, size: int) -> None:
        """Raise :class:`ProtocolError` unless the frame holds ``size`` frames, one per sub-env
        (a list or tuple, or an array of ``size`` rows), as a batch or vector session's must."""
        count: int | None = len(self.frame) if isinstance(self.frame, (list, tuple)) else None
        shape = getattr(self.frame, "shape", None)
        if count is None and shape:  # an array stacks the frames along its first axis
            count = int(shape[0])
        if count != size:
            raise invalid(f"a batch render frame must hold {size} frames, one per sub-env, got {elide(self.frame)}")

    def __str__(self) -> str:
        return f"render {type(self.frame).__name__}"


@dataclass(frozen=True)
class ErrorFrame:
    """An error answered to one request; the session stays open unless the server closes it."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Accept ErrorCode members but store the wire string, so str() and == see "SESSION_ERROR".
        if isinstance(self.code, ErrorCode):
            object.__setattr__(self, "code", self.code.value)

    def serialize(self) -> str:
        return dumps({"type": "error", "data": self.data()})

    def data(self) -> dict[str, Any]:
        """The JSON object the frame carries as its ``data`` (also what ``/schema`` answers with)."""
        return {**self.details, "message": self.message, "code": self.code}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ErrorFrame:
        """The frame whose :meth:`data` is ``data`` (a missing code reads as ``EXECUTION_ERROR``)."""
        details = dict(data)
        code = details.pop("code", ErrorCode.EXECUTION_ERROR.value)
        message = details.pop("message", "")
        return cls(str(code), str(message), details)

    @classmethod
    def from_exception(cls, exc: ProtocolError) -> ErrorFrame:
        return cls(exc.code, exc.message, exc.details)

    def __str__(self) -> str:
        return f"error {self.code}: {self.message}"


ServerFrame = ObservationFrame | StateFrame | RenderFrame | ErrorFrame | McpFrame | SnapshotFrame


def parse_client_frame(message: str | bytes) -> ClientFrame:
    """Parse one message sent by a client.

    Raises:
        ProtocolError: with code ``INVALID_JSON`` (not JSON, or a binary frame), ``UNKNOWN_TYPE``
            or ``VALIDATION_ERROR`` (wrong shape, or a key besides ``type`` and ``data``).
    """
    frame = load_object(message)
    kind = frame.get("type")
    extra = frame.keys() - {"type", "data"}
    if extra:
        raise invalid(
            f"unexpected top-level keys {sorted(extra)}: a frame has only 'type' and 'data'",
            errors=[{"type": "extra_forbidden", "loc": [key]} for key in sorted(extra)],
        )
    if kind == "step":
        return StepFrame(data_object(frame, "step"))
    if kind == "reset":
        return ResetFrame(data_object(frame, "reset"))
    if kind == "state":
        return StateRequest()
    if kind == "render":
        return RenderRequest()
    if kind == "close":
        return CloseFrame()
    if kind == "mcp":
        return McpFrame(data_object(frame, "mcp"))
    if kind in ("snapshot", "restore", "release"):
        return parse_snapshot_request(kind, frame)
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {kind}")


def observation_fields(observation: dict[str, Any]) -> dict[str, Any]:
    """An observation's own fields: OpenEnv's ``metadata`` inside it is never one of them.

    Example:
        >>> observation_fields({"prompt": "p", "metadata": {"prompt": "p"}})
        {'prompt': 'p'}
    """
    return {name: value for name, value in observation.items() if name != "metadata"}


def parse_server_frame(message: str | bytes) -> ServerFrame:
    """Parse one message sent by a server (ours or OpenEnv's).

    OpenEnv's ``metadata``, inside the observation and beside it, becomes the frame's ``metadata``
    (the one beside it when both are sent): it is never an observation field, so a Gymnasium face's
    spaces never see it. Inside it, copies of the observation's own fields (ours add them to a tool
    env's reset for OpenEnv's tool client) are dropped.

    Raises:
        ProtocolError: if the message is not a well-formed server frame.
    """
    if not isinstance(message, str) and arrays.is_packed(message):  # a rendered frame, on a binary connection
        return RenderFrame.from_object(arrays.unpack(message))
    text = text_of(message)
    frame = load_object(text)
    kind = frame.get("type")
    if kind == "observation":
        data = data_object(frame, "observation")
        observation = data.get("observation", {})
        observation = observation if observation is not None else {}
        metadata = data.get("metadata")
        if isinstance(observation, dict) and "metadata" in observation:
            inside, observation = observation["metadata"], observation_fields(observation)
            if metadata is None and isinstance(inside, dict):
                copies = {name for name, value in inside.items() if name in observation and observation[name] == value}
                metadata = {name: value for name, value in inside.items() if name not in copies} or None
        info = data.get("info")
        result = ObservationFrame(
            observation=observation,
            reward=data.get("reward"),
            done=data.get("done", False),
            truncated=data.get("truncated", False),
            info=info if info is not None else {},
            metadata=metadata,
        )
        result.check()
        return result
    if kind == "state":
        return StateFrame(data_object(frame, "state"))
    if kind == "render":
        return RenderFrame.from_object(arrays.from_json(text))
    if kind == "error":
        return ErrorFrame.from_data(data_object(frame, "error"))
    if kind == "mcp":
        return McpFrame(data_object(frame, "mcp"))
    if kind == "snapshot":
        return parse_snapshot_frame(frame)
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE.value, f"unknown server frame type: {kind!r}")
