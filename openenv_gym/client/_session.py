"""What the session clients share: settings, call rules and turning replies into results or errors."""

from __future__ import annotations

from typing import Any

from ..errors import CapacityReachedError, ConnectionLostError, EnvCreationError, RemoteError
from ..protocol import ClientSession, ErrorCode, ErrorFrame
from ..urls import ws_url
from ._http import DEFAULT_OPEN_TIMEOUT

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_MAX_FRAME_BYTES", "DEFAULT_OPEN_TIMEOUT", "SessionClient", "remote_error"]

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_MAX_FRAME_BYTES = 100 * 2**20  # OpenEnv's servers send frames up to 100 MB


def remote_error(frame: ErrorFrame, env_id: str | None) -> RemoteError:
    """The exception that stands for an error frame (``CapacityReachedError`` for ``CAPACITY_REACHED``,
    ``EnvCreationError`` for ``FACTORY_ERROR``)."""
    cls = _REMOTE_ERRORS.get(frame.code, RemoteError)
    return cls(frame.code, frame.message, frame.details, env_id)


_REMOTE_ERRORS: dict[str, type[RemoteError]] = {
    ErrorCode.CAPACITY_REACHED.value: CapacityReachedError,
    ErrorCode.FACTORY_ERROR.value: EnvCreationError,
}


class SessionClient:
    """What the async and the sync session clients share: settings, and turning replies into results.

    Subclasses move the bytes; the call rules live in :class:`~openenv_gym.protocol.ClientSession`,
    and a fresh one starts with every connection.

    Args:
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        open_timeout: seconds to connect and finish the WebSocket handshake.
        call_timeout: seconds to wait for each reply.
        env_id: a name used in error messages.
        max_frame_bytes: the largest frame accepted from the server.
        token: the server's token, sent as ``Authorization: Bearer <token>`` in the handshake.
    """

    def __init__(
        self,
        base_url: str,
        *,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        env_id: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        token: str | None = None,
    ) -> None:
        self.url = ws_url(base_url)
        self.token = token
        self.open_timeout = open_timeout
        self.call_timeout = call_timeout
        self.env_id = env_id
        self.max_frame_bytes = max_frame_bytes
        self._session = self._new_protocol()
        # Why there is no connection, for the error a later call raises.
        self._unusable = "not connected yet: call connect() first"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _new_protocol(self) -> ClientSession[Any]:
        """The call rules of one connection (the batch client uses batch frames)."""
        return ClientSession()

    def _connected(self) -> None:
        """Start the call rules afresh for a new connection."""
        self._session = self._new_protocol()

    def _disconnected(self, why: str) -> None:
        """Record why later calls cannot be made (until a reset reconnects)."""
        self._session = self._new_protocol()
        self._unusable = why

    def _not_connected(self, call: str) -> ConnectionLostError:
        return ConnectionLostError(self.url, call, None, self._unusable)

    def _finish(self, reply: str | bytes) -> Any:
        """Match ``reply`` to the call in flight: its result, or the :class:`RemoteError` it stands for."""
        frame = self._session.receive(reply)
        if isinstance(frame, ErrorFrame):
            raise remote_error(frame, self.env_id)
        return frame
