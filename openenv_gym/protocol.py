"""The `/ws` wire protocol: typed frames and the per-session rules, as pure functions (no I/O).

Frames are JSON text messages ``{"type": ..., "data": ...}`` compatible with OpenEnv's ``/ws``
endpoint. A client sends ``reset``, ``step``, ``state`` or ``close``; the server answers
``observation``, ``state`` or ``error``. Our additions are additive, so OpenEnv clients ignore
them: ``truncated`` and ``info`` beside ``done`` in observation data.

The I/O layers (``server/``, ``client.py``) only move text; the decisions live here:

* :class:`ServerSession` turns each received message into a request to carry out, or into the
  error frame to answer with (bad JSON, unknown type, step before reset, ...).
* :class:`ClientSession` builds request frames, allows one call in flight, and checks that each
  reply fits the call that is waiting for it.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from .errors import ProtocolError

__all__ = [
    "ClientFrame",
    "ClientSession",
    "CloseFrame",
    "ErrorCode",
    "ErrorFrame",
    "MessageType",
    "ObservationFrame",
    "ResetFrame",
    "ServerFrame",
    "ServerSession",
    "SessionState",
    "StateFrame",
    "StateRequest",
    "StepFrame",
    "parse_client_frame",
    "parse_server_frame",
]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.loads


class MessageType(str, enum.Enum):
    """The ``type`` field of a frame."""

    RESET = "reset"
    STEP = "step"
    STATE = "state"
    CLOSE = "close"
    OBSERVATION = "observation"
    ERROR = "error"
    # Our batch extension (openenv_gym.batch_protocol), served on /ws/batch only.
    BATCH_RESET = "batch_reset"
    BATCH_STEP = "batch_step"
    BATCH_RESULT = "batch_result"
    BATCH_CALL = "batch_call"
    BATCH_VALUES = "batch_values"


class ErrorCode(str, enum.Enum):
    """The ``code`` of an error frame, as OpenEnv defines them."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


def _elide(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...[{len(text)} chars]"


# Client -> server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetFrame:
    """Start a new episode; ``kwargs`` go to the environment's ``reset`` (``seed``, ``options``...)."""

    kwargs: dict[str, Any] = field(default_factory=dict)

    def serialize(self) -> str:
        return _dumps({"type": "reset", "data": self.kwargs})

    def __str__(self) -> str:
        return f"reset {_elide(self.kwargs)}"


@dataclass(frozen=True)
class StepFrame:
    """Apply one action; ``action`` is the action's wire form, a JSON object of its fields."""

    action: dict[str, Any]

    def serialize(self) -> str:
        return _dumps({"type": "step", "data": self.action})

    def __str__(self) -> str:
        return f"step {_elide(self.action)}"


@dataclass(frozen=True)
class StateRequest:
    """Ask for the session's current state (episode id, step count, env-specific fields)."""

    def serialize(self) -> str:
        return '{"type":"state"}'

    def __str__(self) -> str:
        return "state?"


@dataclass(frozen=True)
class CloseFrame:
    """End the session; the server closes the environment and the connection."""

    def serialize(self) -> str:
        return '{"type":"close"}'

    def __str__(self) -> str:
        return "close"


ClientFrame = Union[ResetFrame, StepFrame, StateRequest, CloseFrame]


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
        return _dumps({"type": "observation", "data": data})

    def check(self) -> None:
        """Raise :class:`ProtocolError` if a field has the wrong JSON type."""
        if not isinstance(self.observation, dict):
            raise _invalid(f"observation must be an object, got {type(self.observation).__name__}")
        # OpenEnv allows bool rewards (Observation.reward: bool | int | float | None).
        if self.reward is not None and not isinstance(self.reward, (int, float)):
            raise _invalid(f"reward must be a number or null, got {self.reward!r}")
        if not isinstance(self.done, bool) or not isinstance(self.truncated, bool):
            raise _invalid("done and truncated must be booleans")
        if not isinstance(self.info, dict):
            raise _invalid(f"info must be an object, got {type(self.info).__name__}")

    def __str__(self) -> str:
        return (
            f"observation {_elide(self.observation)} reward={self.reward} done={self.done} "
            f"truncated={self.truncated}"
        )


@dataclass(frozen=True)
class StateFrame:
    """The session's state, a JSON object."""

    state: dict[str, Any]

    def serialize(self) -> str:
        return _dumps({"type": "state", "data": self.state})

    def __str__(self) -> str:
        return f"state {_elide(self.state)}"


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
        return _dumps({"type": "error", "data": {**self.details, "message": self.message, "code": self.code}})

    @classmethod
    def from_exception(cls, exc: ProtocolError) -> ErrorFrame:
        return cls(exc.code, exc.message, exc.details)

    def __str__(self) -> str:
        return f"error {self.code}: {self.message}"


ServerFrame = Union[ObservationFrame, StateFrame, ErrorFrame]


def _invalid(message: str, **details: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.VALIDATION_ERROR.value, message, details)


def _load_object(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, (bytes, bytearray, memoryview)):
        raise ProtocolError(
            ErrorCode.INVALID_JSON.value,
            "binary frames are not accepted on this session: send JSON text frames",
        )
    try:
        obj = _loads(message)
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON.value, f"Invalid JSON: {exc}") from exc
    except RecursionError as exc:  # hostile nesting: refuse it like any other bad JSON
        raise ProtocolError(ErrorCode.INVALID_JSON.value, "Invalid JSON: nested too deeply") from exc
    if not isinstance(obj, dict):
        raise _invalid(f"a frame must be a JSON object, got {type(obj).__name__}")
    return obj


def _data_object(frame: dict[str, Any], kind: str) -> dict[str, Any]:
    data = frame.get("data", {})
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _invalid(f"the data of a {kind} frame must be a JSON object, got {type(data).__name__}")
    return data


def parse_client_frame(message: str | bytes) -> ClientFrame:
    """Parse one message sent by a client.

    Raises:
        ProtocolError: with code ``INVALID_JSON`` (not JSON, or a binary frame), ``UNKNOWN_TYPE``
            or ``VALIDATION_ERROR`` (wrong shape, or a key besides ``type`` and ``data``).
    """
    frame = _load_object(message)
    kind = frame.get("type")
    extra = frame.keys() - {"type", "data"}
    if extra:
        raise _invalid(
            f"unexpected top-level keys {sorted(extra)}: a frame has only 'type' and 'data'",
            errors=[{"type": "extra_forbidden", "loc": [key]} for key in sorted(extra)],
        )
    if kind == "step":
        return StepFrame(_data_object(frame, "step"))
    if kind == "reset":
        return ResetFrame(_data_object(frame, "reset"))
    if kind == "state":
        return StateRequest()
    if kind == "close":
        return CloseFrame()
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {kind}")


def parse_server_frame(message: str | bytes) -> ServerFrame:
    """Parse one message sent by a server (ours or OpenEnv's).

    OpenEnv's ``metadata`` fields, inside the observation and beside it, are tolerated.

    Raises:
        ProtocolError: if the message is not a well-formed server frame.
    """
    frame = _load_object(message)
    kind = frame.get("type")
    if kind == "observation":
        data = _data_object(frame, "observation")
        observation = data.get("observation", {})
        info = data.get("info")
        result = ObservationFrame(
            observation=observation if observation is not None else {},
            reward=data.get("reward"),
            done=data.get("done", False),
            truncated=data.get("truncated", False),
            info=info if info is not None else {},
            metadata=data.get("metadata"),
        )
        result.check()
        return result
    if kind == "state":
        return StateFrame(_data_object(frame, "state"))
    if kind == "error":
        data = dict(_data_object(frame, "error"))
        code = data.pop("code", ErrorCode.EXECUTION_ERROR.value)
        message_text = data.pop("message", "")
        return ErrorFrame(str(code), str(message_text), data)
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE.value, f"unknown server frame type: {kind!r}")


# Session rules ---------------------------------------------------------------------------------


class SessionState(enum.Enum):
    """Where a session is in its life."""

    OPEN = "open"  # connected, no episode started yet
    READY = "ready"  # an episode was reset; steps are allowed
    CLOSED = "closed"


class ServerSession:
    """The server's side of one session: turns received messages into requests or errors.

    Example:
        >>> session = ServerSession()
        >>> session.receive('{"type":"step","data":{"message":"hi"}}')
        ErrorFrame(code='SESSION_ERROR', message='step before reset: send a reset frame first', details={})
    """

    def __init__(
        self,
        parse: Callable[[str | bytes], Any] | None = None,
        step_types: tuple[type, ...] = (),
    ) -> None:
        self.state = SessionState.OPEN
        # The batch session reuses these rules with its own frames (openenv_gym.batch_protocol).
        self._parse = parse or parse_client_frame
        self._step_types = step_types or (StepFrame,)

    def receive(self, message: str | bytes) -> ClientFrame | ErrorFrame:
        """Parse one received message.

        Returns the request the server must carry out, or the :class:`ErrorFrame` it must send
        back instead. Never raises for bad input; raises :class:`ProtocolError` only when called
        after the session closed.
        """
        if self.state is SessionState.CLOSED:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "session is closed")
        try:
            frame = self._parse(message)
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc)
        if isinstance(frame, self._step_types) and self.state is SessionState.OPEN:
            return ErrorFrame(ErrorCode.SESSION_ERROR, "step before reset: send a reset frame first")
        if isinstance(frame, CloseFrame):
            self.state = SessionState.CLOSED
        return frame

    def reset_succeeded(self) -> None:
        """Record that the environment accepted a reset, so steps are now allowed."""
        if self.state is SessionState.OPEN:
            self.state = SessionState.READY

    def close(self) -> None:
        """Mark the session closed, however it ended."""
        self.state = SessionState.CLOSED


class ClientSession:
    """The client's side of one session: builds requests and matches each reply to its call.

    One call may be in flight at a time, as OpenEnv servers answer strictly in order.

    Example:
        >>> session = ClientSession()
        >>> session.send_step({"message": "hi"})
        '{"type":"step","data":{"message":"hi"}}'
        >>> session.receive('{"type":"observation","data":{"observation":{},"reward":null,"done":false}}')
        ObservationFrame(observation={}, reward=None, done=False, truncated=False, info={}, metadata=None)
    """

    #: The reply each call expects, besides an error frame.
    REPLIES: dict[MessageType, type] = {
        MessageType.RESET: ObservationFrame,
        MessageType.STEP: ObservationFrame,
        MessageType.STATE: StateFrame,
    }

    def __init__(
        self,
        parse: Callable[[str | bytes], Any] | None = None,
        replies: dict[MessageType, type] | None = None,
    ) -> None:
        self.state = SessionState.OPEN
        self.pending: MessageType | None = None
        # The batch client reuses these rules with its own frames (openenv_gym.batch_protocol).
        self._parse = parse or parse_server_frame
        self._replies = replies or self.REPLIES

    def send(self, kind: MessageType, frame: Any) -> str:
        """Return the text of ``frame``, a request of type ``kind``, and mark it as in flight.

        Raises:
            ProtocolError: the session is closed, or another call is still waiting.
            TypeError, ValueError: the frame has a value JSON cannot carry; nothing is in flight.
        """
        if self.state is SessionState.CLOSED:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"{kind.value} after the session closed")
        if self.pending is not None:
            raise ProtocolError(
                ErrorCode.SESSION_ERROR.value,
                f"{kind.value} while {self.pending.value} is still waiting for its reply: "
                "one call at a time per session",
            )
        text = frame.serialize()  # may raise (a value JSON cannot carry): then nothing is in flight
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError as exc:
                bad = text[exc.start : exc.end]
                raise ValueError(
                    f"the {kind.value} frame holds {bad!r}, a lone surrogate: not valid Unicode, so it cannot "
                    "travel as UTF-8 (decode bytes with errors='replace', or send them base64-encoded)"
                ) from None
        self.pending = kind
        return text

    def send_reset(self, kwargs: dict[str, Any] | None = None) -> str:
        """Return the text of a reset frame and mark a reset as in flight."""
        return self.send(MessageType.RESET, ResetFrame(kwargs or {}))

    def send_step(self, action: dict[str, Any]) -> str:
        """Return the text of a step frame and mark a step as in flight."""
        return self.send(MessageType.STEP, StepFrame(action))

    def send_state(self) -> str:
        """Return the text of a state request and mark it as in flight."""
        return self.send(MessageType.STATE, StateRequest())

    def send_close(self) -> str:
        """Return the text of a close frame; no reply is expected and the session is closed."""
        self.state = SessionState.CLOSED
        self.pending = None
        return CloseFrame().serialize()

    def receive(self, message: str | bytes) -> ServerFrame:
        """Parse the reply to the call in flight.

        Raises:
            ProtocolError: the reply is malformed, unexpected (no call in flight) or of the
                wrong type for the call.
        """
        if self.pending is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "unexpected frame: no call is waiting")
        call, self.pending = self.pending, None
        frame = self._parse(message)
        if isinstance(frame, ErrorFrame):
            return frame  # type: ignore[no-any-return]
        expected = self._replies[call]
        if not isinstance(frame, expected):
            raise ProtocolError(
                ErrorCode.SESSION_ERROR.value,
                f"{call.value} expects a {expected.__name__}, the server sent {type(frame).__name__}",
            )
        if call in (MessageType.RESET, MessageType.BATCH_RESET):
            self.state = SessionState.READY
        return frame  # type: ignore[no-any-return]
