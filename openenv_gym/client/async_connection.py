"""`AsyncConnection`: a session's connection for asyncio code, on websockets' asyncio client.

The twin of :class:`~openenv_gym.client.sync_connection.SyncConnection`, handed a
:class:`~openenv_gym.client.session_kind.SessionKind` in the same way. Every wait is bounded:
connecting by ``open_timeout``, each call by ``call_timeout``. A call that times out leaves the
session unusable (a late reply could be taken for the next one's), so the connection is dropped
and later calls raise :class:`~openenv_gym.errors.ConnectionLostError`.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.protocol import State

from ..errors import CapacityReachedError, RequestTimeoutError, ServerClosedError, ServerConnectError
from ..protocol.closing import SERVER_CLOSED_REASON
from ..urls import is_loopback_host, tcp_form, unix_socket_path
from . import _holding as holding
from ._http import auth_headers, websockets_logger
from ._session import Delegated, SessionTerms, connection_lost
from .session_kind import SessionKind

__all__ = ["AsyncConnection"]

ReplyT = TypeVar("ReplyT")


class AsyncConnection(Generic[ReplyT]):
    """An async session with one environment server, of the kind it is handed; arguments as
    :class:`~openenv_gym.client.SessionTerms` (held as :attr:`terms`)."""

    #: The session's ``ws://`` URL (see :class:`~openenv_gym.client.SessionTerms`).
    url: Delegated[str] = Delegated("terms.url")
    __repr__ = holding.describe

    def __init__(self, kind: SessionKind[ReplyT], base_url: str, **settings: Any) -> None:
        self.terms = SessionTerms(kind, base_url, **settings)
        self.kind = kind
        self._ws: ClientConnection | None = None

    @property
    def is_open(self) -> bool:
        """Whether the connection is there and open (false once the server closed it or died)."""
        return self._ws is not None and self._ws.state is State.OPEN

    async def connect(self) -> Self:
        """Open the session, and send the kind's opening request if it has one; idempotent.

        Raises:
            ServerConnectError: refused, unreachable, or no handshake within ``open_timeout``.
        """
        if self._ws is not None:
            return self
        terms, url = self.terms, self.url
        loopback = is_loopback_host(urllib.parse.urlsplit(url).hostname)
        options: dict[str, Any] = {
            "open_timeout": terms.open_timeout,
            "max_size": terms.max_frame_bytes,
            "compression": None,
            "close_timeout": 2,
            "subprotocols": self.kind.subprotocols,
            "additional_headers": auth_headers(terms.token),
            "logger": websockets_logger(terms.token),
        }
        socket_path = unix_socket_path(url)
        try:
            if socket_path is not None:
                self._ws = await unix_connect(socket_path, tcp_form(url), **options)
            else:
                self._ws = await connect(url, proxy=None if loopback else True, **options)
        except TimeoutError as exc:
            raise ServerConnectError(url, f"no handshake within {terms.open_timeout:g} s") from exc
        except (OSError, InvalidHandshake, InvalidURI) as exc:
            if isinstance(exc, OSError) and terms.unusable == SERVER_CLOSED_REASON:  # say why it refuses
                raise terms.not_connected("connect") from exc
            raise ServerConnectError(url, str(exc) or type(exc).__name__) from exc
        terms.connected(self._ws.subprotocol)
        opening = self.kind.opening()
        if opening is not None:
            try:
                self.kind.opened(await self.request(*opening))
            except BaseException:
                await self.close()
                raise
        return self

    async def request(self, call: str, build: Callable[..., str | bytes], *args: Any) -> ReplyT:
        """Send the frame ``build(*args)`` makes (once the connection is known to be there); await its reply."""
        ws = self._ws
        if ws is None:
            raise self.terms.not_connected(call)
        text = build(*args)
        try:
            async with asyncio.timeout(self.terms.call_timeout):
                try:
                    await ws.send(text)
                except ConnectionClosed:
                    pass  # a server may say why before it closes (CAPACITY_REACHED): read that
                reply = await ws.recv()
        except TimeoutError:
            self._abandon(f"the session was abandoned after {call} timed out; make a new client")
            raise RequestTimeoutError(self.url, call, self.terms.call_timeout) from None
        except ConnectionClosed as exc:
            received = exc.rcvd
            lost = connection_lost(
                self.url, call, received.code if received else None, received.reason if received else ""
            )
            self._abandon(
                SERVER_CLOSED_REASON if isinstance(lost, ServerClosedError) else "the connection was closed earlier"
            )
            raise lost from exc
        except BaseException:  # cancelled: its late reply would be taken for the next call's
            self._abandon(f"the session was abandoned when {call} was cancelled; make a new client")
            raise
        try:
            return self.terms.finish(reply)
        except CapacityReachedError:
            self._abandon("the server refused the session: it is at capacity")
            raise

    def _abandon(self, why: str) -> None:
        """Drop the connection at once, without a close handshake the server may never answer."""
        ws, self._ws = self._ws, None
        self.terms.disconnected(why)
        if ws is not None:
            ws.transport.abort()

    async def close(self) -> None:
        """Send a close frame and close the connection; idempotent, never raises for a dead server."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            await ws.send(self.kind.close())
        except ConnectionClosed:
            pass
        self.terms.disconnected("the client was closed")
        await ws.close()

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
