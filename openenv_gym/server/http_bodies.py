"""`BodyReadingConnection`: requests with a body (OpenEnv's ``POST /reset``, ``/step``, ``/mcp``),
which websockets' server does not read.

websockets reads a request's head and drops the connection, unanswered, when a body follows. This
connection reads each request with h11 first: one with a body is read whole and handed to the
handshake as though websockets had read it, its body in :attr:`~BodyReadingConnection.request_body`,
so the server's ``process_request`` answers it as it answers any HTTP request; any other request
(a WebSocket handshake, a ``GET``) goes to websockets untouched, and its later frames skip this
class altogether.

The connection also keeps the handshake timeout: the whole request must arrive within it. Only the
request's arrival is timed (the server passes ``open_timeout=None`` to websockets), so what a route
does once it has the request (make an env and step it) is bounded by the route, not by the time a
client has to send its request.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import h11
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request

from .connections import closing_response

__all__ = ["MAX_HEAD_BYTES", "BodyReadingConnection"]

#: The most bytes of a request line and headers read before the request is refused (websockets
#: refuses longer heads of its own requests too).
MAX_HEAD_BYTES = 16 * 1024


def _has_body(request: h11.Request) -> bool:
    for name, value in request.headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class BodyReadingConnection(ServerConnection):
    """A websockets server connection that also reads request bodies; see the module's docstring.

    The server sets the class attributes on a subclass of its own.
    """

    #: Seconds a client has to send its whole request.
    handshake_timeout: ClassVar[float] = 10.0
    #: The largest body read; a larger one is answered 413 and the connection closed.
    max_body_bytes: ClassVar[int] = 16 * 2**20

    @classmethod
    def configured(cls, handshake_timeout: float, max_body_bytes: int) -> type[BodyReadingConnection]:
        """A subclass with these limits, for one server."""
        limits = {"handshake_timeout": handshake_timeout, "max_body_bytes": max_body_bytes}
        return type(cls.__name__, (cls,), limits)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The body of the request, when it had one (``b""`` otherwise).
        self.request_body = b""
        self._received = bytearray()  # what came before websockets or h11 was chosen, for websockets
        self._parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._request: h11.Request | None = None
        self._body = bytearray()
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._deadline = self.loop.call_later(self.handshake_timeout, self._request_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _request_too_slow(self) -> None:
        if self.request is None:  # neither websockets nor h11 has read a whole request
            assert isinstance(self.transport, asyncio.Transport)
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self._received += data
        self._parser.receive_data(data)
        try:
            while True:
                event = self._parser.next_event()
                if event is h11.NEED_DATA:
                    return
                if isinstance(event, h11.Request):
                    if not _has_body(event):
                        return self._to_websockets()
                    if self._parser.they_are_waiting_for_100_continue:
                        self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    self._request = event
                elif isinstance(event, h11.Data):
                    self._body += event.data
                    if len(self._body) > self.max_body_bytes:
                        return self._refuse(413, f"a body is at most {self.max_body_bytes} bytes")
                elif isinstance(event, h11.EndOfMessage):
                    return self._hand_over()
                else:  # ConnectionClosed: the client stopped sending mid-request
                    return self._refuse(400, "the request ended before its body did")
        except h11.RemoteProtocolError:
            # Not HTTP h11 can read (or a head too long): websockets refuses it as it always has.
            self._to_websockets()

    def eof_received(self) -> None:
        if self.request is None and self._received:
            self._to_websockets()
        super().eof_received()

    def _to_websockets(self) -> None:
        """Give websockets the connection as it would have had it, and step out of its way."""
        received, self._received = bytes(self._received), bytearray()
        # An instance attribute: asyncio looks data_received up on each call, so later frames skip us.
        self.data_received = super().data_received  # type: ignore[method-assign]
        if received:
            super().data_received(received)

    def _hand_over(self) -> None:
        """Hand the whole request to the handshake, as websockets hands over a request it read."""
        head = self._request
        assert head is not None  # EndOfMessage comes after a Request
        self._received = bytearray()
        self.data_received = self._ignore  # type: ignore[method-assign]  # the answer closes the connection
        self.request_body = bytes(self._body)
        headers = Headers((name.decode("latin-1"), value.decode("latin-1")) for name, value in head.headers)
        protocol = f"HTTP/{head.http_version.decode('ascii')}"
        self.request = Request(head.target.decode("ascii", "replace"), headers, head.method.decode("ascii"), protocol)
        self.request_rcvd.set_result(None)

    def _refuse(self, status: int, message: str) -> None:
        self.data_received = self._ignore  # type: ignore[method-assign]
        self._write(closing_response(status, {"message": message}))
        assert isinstance(self.transport, asyncio.Transport)
        self.transport.close()

    def _write(self, data: bytes) -> None:
        assert isinstance(self.transport, asyncio.WriteTransport)
        self.transport.write(data)

    def _ignore(self, data: bytes) -> None:
        """What arrives after a request that is answered (and the connection closed) by us."""
