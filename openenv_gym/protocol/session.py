"""The per-session rules of the ``/ws`` protocol, for both ends, as state machines (no I/O).

The I/O layers (``server/``, ``client/``) only move text; the decisions live here:

* :class:`ServerSession` turns each received message into a request to carry out, or into the
  error frame to answer with (bad JSON, unknown type, step before reset, ...).
* :class:`ClientSession` builds request frames, allows one call in flight, and checks that each
  reply fits the call that is waiting for it.

Both hold the episode-end rule: once a step's observation says ``done`` or ``truncated``, a
further step (a tool call included; listing tools is not one) is refused until a reset, by the
client before it is sent (:class:`~openenv_gym.errors.EpisodeEndedError`) and by the server
(``EPISODE_ENDED``), so an ended episode is never stepped, and never pays again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast, overload

from ..errors import EpisodeEndedError, ProtocolError
from .codes import ErrorCode, MessageType
from .frames import (
    ClientFrame,
    CloseFrame,
    ErrorFrame,
    McpFrame,
    ObservationFrame,
    RenderFrame,
    RenderRequest,
    ResetFrame,
    ServerFrame,
    StateFrame,
    StateRequest,
    StepFrame,
    parse_client_frame,
    parse_server_frame,
)
from .snapshot import BatchSnapshotRequest, ReleaseRequest, RestoreRequest, SnapshotFrame, SnapshotRequest

__all__ = ["ClientSession", "ServerSession", "SessionState"]

#: What a client session's parser makes of a reply (:data:`ServerFrame` unless told otherwise).
ReplyT = TypeVar("ReplyT")


class _Request(Protocol):
    """A frame a client sends."""

    def serialize(self) -> str: ...


# Session rules ---------------------------------------------------------------------------------


class SessionState(enum.Enum):
    """Where a session is in its life."""

    OPEN = "open"  # connected, no episode started yet
    READY = "ready"  # an episode was reset; steps are allowed
    ENDED = "ended"  # the episode ended (done or truncated): steps are refused until a reset
    CLOSED = "closed"


EPISODE_ENDED_MESSAGE = "the episode ended (terminated or truncated): reset before stepping again"


def _lists_tools(frame: object) -> bool:
    """Whether ``frame`` is the step that lists tools: OpenEnv needs no reset before it."""
    return isinstance(frame, StepFrame) and frame.action.get("type") == "list_tools"


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
        # The batch session reuses these rules with its own frames (openenv_gym.protocol.batch).
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
        if isinstance(frame, self._step_types) and not _lists_tools(frame):
            if self.state is SessionState.OPEN:
                return ErrorFrame(ErrorCode.SESSION_ERROR, "step before reset: send a reset frame first")
            if self.state is SessionState.ENDED:
                return ErrorFrame(ErrorCode.EPISODE_ENDED, EPISODE_ENDED_MESSAGE)
        if isinstance(frame, (SnapshotRequest, BatchSnapshotRequest)) and self.state is SessionState.OPEN:
            # A restore may come first: a fork's new session starts from its parent's state.
            return ErrorFrame(ErrorCode.SESSION_ERROR, "snapshot before reset: there is no episode to keep yet")
        if isinstance(frame, CloseFrame):
            self.state = SessionState.CLOSED
        return frame

    def reset_succeeded(self) -> None:
        """Record that the environment accepted a reset, so steps are now allowed."""
        if self.state in (SessionState.OPEN, SessionState.ENDED):
            self.state = SessionState.READY

    def stepped(self, done: bool, truncated: bool) -> None:
        """Record a step's (or tool call's) end flags: after either, steps are refused until a reset."""
        if (done or truncated) and self.state is SessionState.READY:
            self.state = SessionState.ENDED

    def reset_needed(self) -> None:
        """Record that the env's state is unknown (a restore failed): steps are refused until a reset."""
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.OPEN

    def restored(self, ended: bool) -> None:
        """Record that the env was put back into a kept state: an ended episode stays ended."""
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.ENDED if ended else SessionState.READY

    def close(self) -> None:
        """Mark the session closed, however it ended."""
        self.state = SessionState.CLOSED


class ClientSession(Generic[ReplyT]):
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
    REPLIES: ClassVar[dict[MessageType, type]] = {
        MessageType.RESET: ObservationFrame,
        MessageType.STEP: ObservationFrame,
        MessageType.STATE: StateFrame,
        MessageType.RENDER: RenderFrame,
        MessageType.MCP: McpFrame,
        MessageType.SNAPSHOT: SnapshotFrame,
        MessageType.RESTORE: ObservationFrame,
        MessageType.RELEASE: SnapshotFrame,
    }

    @overload
    def __init__(self: ClientSession[ServerFrame], parse: None = None, replies: None = None) -> None: ...

    @overload
    def __init__(
        self, parse: Callable[[str | bytes], ReplyT], replies: dict[MessageType, type] | None = None
    ) -> None: ...

    def __init__(
        self,
        parse: Callable[[str | bytes], Any] | None = None,
        replies: dict[MessageType, type] | None = None,
    ) -> None:
        self.state = SessionState.OPEN
        self.pending: MessageType | None = None
        # The batch client reuses these rules with its own frames (openenv_gym.protocol.batch).
        # Without a parser, the first overload has made ReplyT the ServerFrame that parses to.
        self._parse = cast("Callable[[str | bytes], ReplyT]", parse or parse_server_frame)
        self._replies = replies or self.REPLIES

    def send_binary(self, kind: MessageType, frame: Any) -> bytes:
        """Return the binary form of ``frame`` (its ``serialize_binary()``) and mark it as in flight."""
        self._check_can_send(kind)
        message: bytes = frame.serialize_binary()
        self.pending = kind
        return message

    def _check_can_send(self, kind: MessageType) -> None:
        if self.state is SessionState.CLOSED:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"{kind.value} after the session closed")
        if self.pending is not None:
            raise ProtocolError(
                ErrorCode.SESSION_ERROR.value,
                f"{kind.value} while {self.pending.value} is still waiting for its reply: "
                "one call at a time per session",
            )

    def send(self, kind: MessageType, frame: _Request) -> str:
        """Return the text of ``frame``, a request of type ``kind``, and mark it as in flight.

        Raises:
            ProtocolError: the session is closed, or another call is still waiting.
            TypeError, ValueError: the frame has a value JSON cannot carry; nothing is in flight.
        """
        self._check_can_send(kind)
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
        """Return the text of a step frame and mark a step as in flight.

        Raises:
            EpisodeEndedError: the episode ended; only a reset (or listing tools) may follow.
        """
        frame = StepFrame(action)
        if not _lists_tools(frame):
            self.check_can_step()
        return self.send(MessageType.STEP, frame)

    def check_can_step(self) -> None:
        """Raise :class:`EpisodeEndedError` if the episode ended (a step said ``done`` or ``truncated``,
        or :meth:`end_episode` was called) and no reset has followed."""
        if self.state is SessionState.ENDED:
            raise EpisodeEndedError(ErrorCode.EPISODE_ENDED.value, EPISODE_ENDED_MESSAGE)

    def end_episode(self) -> None:
        """End the episode from this side (a client-side time limit truncated it): steps are refused until a reset."""
        if self.state is SessionState.READY:
            self.state = SessionState.ENDED

    def send_state(self) -> str:
        """Return the text of a state request and mark it as in flight."""
        return self.send(MessageType.STATE, StateRequest())

    def send_render(self) -> str:
        """Return the text of a render request and mark it as in flight."""
        return self.send(MessageType.RENDER, RenderRequest())

    def send_snapshot(self, portable: bool = False) -> str:
        """Return the text of a snapshot request (with ``portable``, the state comes back as bytes too)."""
        return self.send(MessageType.SNAPSHOT, SnapshotRequest(portable))

    def send_restore(self, snapshot_id: str | None = None, portable: bytes | None = None) -> str:
        """Return the text of a restore request, of a kept id or of portable bytes."""
        return self.send(MessageType.RESTORE, RestoreRequest(snapshot_id, portable))

    def send_release(self, ids: tuple[str, ...]) -> str:
        """Return the text of a release request for the kept ``ids``."""
        return self.send(MessageType.RELEASE, ReleaseRequest(ids))

    def send_close(self) -> str:
        """Return the text of a close frame; no reply is expected and the session is closed."""
        self.state = SessionState.CLOSED
        self.pending = None
        return CloseFrame().serialize()

    def receive(self, message: str | bytes) -> ReplyT:
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
            return frame
        expected = self._replies[call]
        if not isinstance(frame, expected):
            raise ProtocolError(
                ErrorCode.SESSION_ERROR.value,
                f"{call.value} expects a {expected.__name__}, the server sent {type(frame).__name__}",
            )
        if call in (MessageType.RESET, MessageType.BATCH_RESET):
            self.state = SessionState.READY
        elif call is MessageType.RESTORE and isinstance(frame, ObservationFrame):
            self.state = SessionState.ENDED if frame.done or frame.truncated else SessionState.READY
        elif call is MessageType.STEP and isinstance(frame, ObservationFrame) and (frame.done or frame.truncated):
            self.end_episode()
        return frame
