"""What the sync and the async connections share, held rather than inherited: the session's terms
(:class:`SessionTerms`: the server, the settings, the session kind, why there is no connection),
replies turned into results or errors, and :class:`Delegated`, how a client shows what callers read
of the connection it holds."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, overload

from ..errors import (
    CapacityReachedError,
    ConnectionLostError,
    EnvCreationError,
    RemoteEpisodeEndedError,
    RemoteError,
    ServerClosedError,
    SnapshotError,
    SnapshotUnsupportedError,
)
from ..protocol import ErrorCode, ErrorFrame
from ..protocol.closing import SERVER_CLOSED_CODE, SERVER_CLOSED_REASON, closed_by_owner
from ..urls import ws_url
from ._http import DEFAULT_OPEN_TIMEOUT
from .session_kind import SessionKind

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_OPEN_TIMEOUT",
    "Delegated",
    "SessionTerms",
    "connection_lost",
    "remote_error",
]

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_MAX_FRAME_BYTES = 100 * 2**20  # OpenEnv's servers send frames up to 100 MB

ReplyT = TypeVar("ReplyT")
T = TypeVar("T")


def remote_error(frame: ErrorFrame, env_id: str | None) -> RemoteError:
    """The exception that stands for an error frame (``CapacityReachedError`` for ``CAPACITY_REACHED``,
    ``EnvCreationError`` for ``FACTORY_ERROR``)."""
    cls = _REMOTE_ERRORS.get(frame.code, RemoteError)
    return cls(frame.code, frame.message, frame.details, env_id)


def connection_lost(url: str, call: str | None, code: int | None, reason: str) -> ConnectionLostError:
    """The exception for a connection that ended with close ``code`` and ``reason`` (``None`` and
    ``""`` without a close frame): :class:`~openenv_gym.errors.ServerClosedError` when its owner
    closed the server (:mod:`openenv_gym.protocol.closing`)."""
    cls = ServerClosedError if closed_by_owner(code, reason) else ConnectionLostError
    return cls(url, call, code, reason)


_REMOTE_ERRORS: dict[str, type[RemoteError]] = {
    ErrorCode.CAPACITY_REACHED.value: CapacityReachedError,
    ErrorCode.FACTORY_ERROR.value: EnvCreationError,
    ErrorCode.EPISODE_ENDED.value: RemoteEpisodeEndedError,
    ErrorCode.SNAPSHOT_UNSUPPORTED.value: SnapshotUnsupportedError,
    ErrorCode.SNAPSHOT_UNKNOWN.value: SnapshotError,
    ErrorCode.SNAPSHOT_LIMIT.value: SnapshotError,
    ErrorCode.SNAPSHOT_REFUSED.value: SnapshotError,
}


class SessionTerms(Generic[ReplyT]):
    """A session's terms, which its connection (sync or async) holds: the server, the settings, the
    session kind, and why there is no connection now; and the replies matched to their calls.

    A connection moves bytes; what travels is the business of the
    :class:`~openenv_gym.client.session_kind.SessionKind` it is handed (its URL, its frames, the
    checks on its replies), as a websockets ``Connection`` is handed its protocol.

    Args:
        kind: the session's logic (plain ``/ws``, batch, vector...); one kind per connection.
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        open_timeout: seconds to connect and finish the WebSocket handshake.
        call_timeout: seconds to wait for each reply.
        env_id: a name used in error messages.
        max_frame_bytes: the largest frame accepted from the server.
        token: the server's token, sent as ``Authorization: Bearer <token>`` in the handshake.
    """

    def __init__(
        self,
        kind: SessionKind[ReplyT],
        base_url: str,
        *,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        env_id: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        token: str | None = None,
    ) -> None:
        self.kind = kind
        self.address = ws_url(base_url)
        self.token = token
        self.open_timeout = open_timeout
        self.call_timeout = call_timeout
        self.env_id = env_id
        self.max_frame_bytes = max_frame_bytes
        #: Why there is no connection, for the error a later call raises.
        self.unusable = "not connected yet: call connect() first"

    @property
    def url(self) -> str:
        """The session's ``ws://`` URL: the server's address with the kind's path and query."""
        return self.kind.url(self.address)

    def connected(self, subprotocol: str | None) -> None:
        """Start the session's rules afresh for a new connection that agreed on ``subprotocol``."""
        self.kind.restart(subprotocol)

    def disconnected(self, why: str) -> None:
        """Record why later calls cannot be made (until a reset reconnects)."""
        self.kind.restart(None)
        self.unusable = why

    def not_connected(self, call: str) -> ConnectionLostError:
        """The error of ``call`` made while there is no connection."""
        if self.unusable == SERVER_CLOSED_REASON:  # every later call says so, not only the first
            return ServerClosedError(self.url, call, SERVER_CLOSED_CODE, SERVER_CLOSED_REASON)
        return ConnectionLostError(self.url, call, None, self.unusable)

    def finish(self, reply: str | bytes) -> ReplyT:
        """Match ``reply`` to the call in flight: its result, or the :class:`RemoteError` it stands for
        (a vector env raises a sub-env's as its own type: ``vector/faults.py``)."""
        kind = self.kind
        frame = kind.session.receive(reply)
        if isinstance(frame, ErrorFrame):
            raise remote_error(frame, self.env_id)
        return kind.check(frame)


class Delegated(property, Generic[T]):
    """A client's read-only attribute that is an object's it holds (``path`` from the client, as
    ``"connection.terms.token"``): a client holds its connection rather than extending it.

    A ``property`` whose getter is an ``operator.attrgetter``, so reading it runs no Python code.
    """

    def __init__(self, path: str) -> None:
        super().__init__(operator.attrgetter(path))

    if TYPE_CHECKING:  # what a read gives, for type checkers (at run time, property's own)

        @overload
        def __get__(self, instance: None, owner: type[Any] | None = None) -> Self: ...

        @overload
        def __get__(self, instance: object, owner: type[Any] | None = None) -> T: ...

        def __get__(self, instance: object, owner: type[Any] | None = None) -> Self | T: ...
