"""`StepTransport`: how a session's steps travel, the WebSocket or shared memory with a server on this host.

A :class:`~openenv_gym.client.sync_connection.SyncConnection` is handed one. Unless told
``"ws"``, on each fresh connection it asks for the server's offer (``shm_open``) and maps the
segment (:class:`~openenv_gym.client.shm_link.ShmLink`), which the connection then keeps: a step
is written there and its reply read from there, while every other call keeps the WebSocket. The
choice's reason is kept (:attr:`StepTransport.reason`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionLostError, ProtocolError, RemoteError
from ..protocol import ErrorCode
from ..protocol.shm import ShmOffer
from ..urls import is_loopback_host, unix_socket_path

if TYPE_CHECKING:  # the link (numpy, the vector frames) loads when a session first takes one
    from .shm_link import ShmLink
    from .sync_connection import SyncConnection

__all__ = ["TRANSPORTS", "StepTransport", "shm_unreachable"]

#: What a session's steps may travel by: the WebSocket, shared memory (the same host only), or
#: shared memory where the server offers it and can be reached, else the WebSocket.
TRANSPORTS = ("auto", "ws", "shm")


class StepTransport:
    """What a session's steps were asked to travel by, and what they took and why.

    Args:
        requested: ``"ws"`` (the default: every call on the WebSocket); ``"shm"``, shared memory
            with a server on this host (connecting fails, saying why, if the server cannot offer
            it); ``"auto"``, shared memory when the server is on a loopback address or Unix socket
            and offers it, else the WebSocket.
        envs: how many sub-envs the segment holds (a plain session's: one).
        offer_request: the kind's ``shm_open`` request builder (needed unless ``requested`` is ``"ws"``).
    """

    def __init__(self, requested: str = "ws", *, envs: int = 1, offer_request: Callable[[], str] | None = None) -> None:
        if requested not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {requested!r}")
        if requested != "ws" and offer_request is None:
            raise ValueError(f"transport={requested!r} needs a session kind that can ask for shared memory")
        self.requested = requested
        self.envs = envs
        self.offer_request = offer_request
        #: Why the steps take the transport they take (after the connection opened).
        self.reason = "not connected yet"
        self._ws_because = "transport='ws' asked for"

    def keep_to_websocket(self, reason: str) -> None:
        """Have the steps take the WebSocket, for ``reason`` (the caller knows the server cannot offer more)."""
        self.requested, self._ws_because = "ws", f"the WebSocket: {reason}"

    def take(self, connection: SyncConnection[Any]) -> ShmLink | None:
        """The segment the steps of ``connection`` (just opened) go through, or None for the WebSocket.

        Raises:
            ConnectionLostError: ``"shm"`` was asked for and the server cannot offer it or be
                reached (the message says why); the connection is closed again.
        """
        if self.requested == "ws":
            self.reason = self._ws_because
            return None
        url = connection.url
        reason = shm_unreachable(url)
        if reason is None:
            assert self.offer_request is not None  # checked when made
            try:
                offer = connection.request("shm_open", self.offer_request)
                if not isinstance(offer, ShmOffer):
                    raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"shm_open was answered with {offer}")
                from .shm_link import ShmLink

                link = ShmLink.open(offer, self.envs, connection.terms.open_timeout)
                self.reason = "shared memory: the server is on this host"
                return link
            except RemoteError as exc:  # the server cannot: its message says why
                reason = exc.message
            except (OSError, ProtocolError) as exc:
                reason = f"the server's shared-memory socket cannot be reached from here: {exc}"
        if self.requested == "shm":
            connection.close()
            raise ConnectionLostError(url, "shm_open", None, f"transport='shm' cannot be served: {reason}")
        self.reason = f"the WebSocket: {reason}"
        return None


def shm_unreachable(url: str) -> str | None:
    """Why the server at ``url`` cannot share memory with this process, as far as its address tells; None: it may."""
    if unix_socket_path(url) is not None:
        return None
    host = urllib.parse.urlsplit(url).hostname
    if not is_loopback_host(host):
        return f"the server is at {host}, not on a loopback address of this host"
    return None
