"""`ShmConnection`: a session connection whose steps may go through shared memory with a server on this host.

The vector client and the plain client (``EnvClient``) both are one. On each fresh connection
it asks for the server's offer (``shm_open``), unless told ``transport="ws"``, and maps the
segment (:class:`~openenv_gym.client.shm_link.ShmLink`); a step is then written there and its
reply read from there, while every other call keeps the WebSocket. The choice and its reason
are kept (:attr:`ShmConnection.transport`, :attr:`ShmConnection.transport_reason`).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ..errors import ConnectionLostError, ProtocolError, RemoteError, ServerClosedError
from ..protocol import ErrorCode, ErrorFrame
from ..protocol.closing import SERVER_CLOSED_REASON
from ..protocol.shm import ShmOffer
from ..urls import is_loopback_host, unix_socket_path
from ._session import remote_error
from .sync_connection import SyncConnection

if TYPE_CHECKING:  # the link (numpy, the vector frames) loads when a session first takes one
    from .shm_link import ShmLink

__all__ = ["TRANSPORTS", "ShmConnection"]

ReplyT = TypeVar("ReplyT")

#: What a session's steps may travel by: the WebSocket, shared memory (the same host only), or
#: shared memory where the server offers it and can be reached, else the WebSocket.
TRANSPORTS = ("auto", "ws", "shm")


class ShmConnection(SyncConnection[ReplyT]):
    """A :class:`SyncConnection` whose steps take shared memory when ``transport`` allows and the
    server offers it (see the module). Subclasses say what asks for the offer and for how many
    sub-envs (:meth:`_shm_open`, :attr:`_shm_envs`)."""

    def __init__(self, *args: Any, transport: str = "auto", **settings: Any) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
        super().__init__(*args, **settings)
        self.requested_transport = transport
        #: The shared-memory segment the steps go through, while connected with ``shm``.
        self.link: ShmLink | None = None
        #: Why the steps take the transport they take (after :meth:`connect`).
        self.transport_reason = "not connected yet"
        self._ws_because = "transport='ws' asked for"
        self._link_in_flight = False

    def keep_to_websocket(self, reason: str) -> None:
        """Have the steps take the WebSocket, for ``reason`` (the caller knows the server cannot offer more)."""
        self.requested_transport, self._ws_because = "ws", f"the WebSocket: {reason}"

    def _shm_open(self) -> str:
        """The ``shm_open`` request (marked in flight by the kind's session)."""
        raise NotImplementedError

    @property
    def _shm_envs(self) -> int:
        """How many sub-envs the segment holds (a plain session's: one)."""
        raise NotImplementedError

    @property
    def transport(self) -> str:
        """``"shm"`` while the steps go through shared memory, else ``"ws"``."""
        return "shm" if self.link is not None else "ws"

    def connect(self) -> Self:
        """Open the session and, unless ``transport="ws"``, move its steps to shared memory (see the module).

        Raises:
            ServerConnectError, RemoteError: as :meth:`SyncConnection.connect`.
            ConnectionLostError: ``transport="shm"`` and the server cannot offer it or be reached
                (the message says why); the connection is closed again.
        """
        with self._lock:
            fresh = self._ws is None
            super().connect()
            if fresh:
                self._take_transport()
        return self

    def _take_transport(self) -> None:
        if self.requested_transport == "ws":
            self.transport_reason = self._ws_because
            return
        reason = self._shm_unreachable()
        if reason is None:
            try:
                offer = self._request("shm_open", self._shm_open)
                if not isinstance(offer, ShmOffer):
                    raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"shm_open was answered with {offer}")
                from .shm_link import ShmLink

                self.link = ShmLink.open(offer, self._shm_envs, self.open_timeout)
                self.transport_reason = "shared memory: the server is on this host"
                return
            except RemoteError as exc:  # the server cannot: its message says why
                reason = exc.message
            except (OSError, ProtocolError) as exc:
                reason = f"the server's shared-memory socket cannot be reached from here: {exc}"
        if self.requested_transport == "shm":
            self.close()
            raise ConnectionLostError(self.url, "shm_open", None, f"transport='shm' cannot be served: {reason}")
        self.transport_reason = f"the WebSocket: {reason}"

    def _shm_unreachable(self) -> str | None:
        """Why the server cannot share memory with this process, as far as its address tells; None: it may."""
        if unix_socket_path(self.url) is not None:
            return None
        host = urllib.parse.urlsplit(self.url).hostname
        if not is_loopback_host(host):
            return f"the server is at {host}, not on a loopback address of this host"
        return None

    def _drop(self, why: str) -> None:
        link, self.link = self.link, None
        self._link_in_flight = False
        if link is not None:
            link.close()
        super()._drop(why)

    def _begin_link_step(self, call: str, write: Callable[[ShmLink], None]) -> None:
        """Ask for a step through the segment: ``write(link)`` writes its actions and asks;
        :meth:`complete` reads the reply (a frame, or the error frame the server wrote).

        Raises:
            ValueError: what ``write`` raised for actions that do not fit (nothing was asked).
            ConnectionLostError: the channel failed (the session is dropped).
        """
        with self._lock:
            if self._in_flight:
                raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"{call} while {self._call} is in flight")
            assert self.link is not None
            self._call, self._deadline = call, time.monotonic() + self.call_timeout
            try:
                write(self.link)
            except OSError as exc:
                lost = self._failed(call, exc)
                self._drop(
                    SERVER_CLOSED_REASON
                    if isinstance(lost, ServerClosedError)
                    else "the shared-memory channel failed earlier"
                )
                raise lost from exc
            self._link_in_flight = self._in_flight = True

    def _next_message(self) -> Any:
        """The reply to the call in flight: from shared memory for a step there (a frame, already
        read), else the WebSocket's next message. :meth:`complete` maps the failures, as for both."""
        if not self._link_in_flight:
            return super()._next_message()
        assert self.link is not None
        try:
            # The WebSocket is watched too: a connection cut under this client ends the step at once.
            reply = self.link.receive(self._deadline, self._sock, lambda: self._read(self._deadline))
        except ProtocolError as exc:  # a malformed segment: the channel is not to be trusted further
            raise ConnectionLostError(self.url, self._call, None, str(exc)) from exc
        self._link_in_flight = False
        return reply

    def _finish(self, reply: Any) -> Any:
        if isinstance(reply, (str, bytes)):
            return super()._finish(reply)
        if isinstance(reply, ErrorFrame):  # written by the server into the segment
            raise remote_error(reply, self.env_id)
        return reply

    def answered(self) -> bool:
        """Whether a reply to the request in flight has begun to arrive (or the connection is gone)."""
        if self._link_in_flight and self.link is not None:
            return self.link.answered()
        return super().answered()

    def waitable(self) -> Any:
        if self._link_in_flight and self.link is not None:
            return self.link.waitable()
        return super().waitable()
