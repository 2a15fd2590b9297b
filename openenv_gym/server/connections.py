"""`ConnectionLimit`: how many TCP connections a server holds at once, whatever stage they are at.

The session limit counts environments; this one counts sockets: connections still in their
handshake (or that never send one), HTTP requests, sessions, watchers, and connections being
refused or closed. Past the limit a new connection is answered ``503`` with ``Retry-After`` at
once and closed, before its request is even read: a flood costs an accept and a close, and the
process keeps file descriptors for its environments (an environment that cannot open a file
fails the session of a well-behaved client).
"""

from __future__ import annotations

import asyncio
import http
import json
import resource
from typing import Any

from websockets.asyncio.server import ServerConnection

__all__ = ["ConnectionLimit", "closing_response", "default_max_connections"]

# The default is this many, or half the open-file limit when that is lower: the other half is
# the environments' (files, pipes, subprocesses), the listening socket's and the log's.
MAX_CONNECTIONS_CAP = 4096
RETRY_AFTER_S = 1


def default_max_connections() -> int:
    """The default connection limit: :data:`MAX_CONNECTIONS_CAP`, or half of the process's
    open-file soft limit (``ulimit -n``) when that is lower.

    Example:
        >>> 1 <= default_max_connections() <= MAX_CONNECTIONS_CAP
        True
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CAP
    return max(1, min(MAX_CONNECTIONS_CAP, soft // 2))


def closing_response(status: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A whole HTTP response with a JSON body that closes the connection, written before (or
    without) any route: a refusal at the connection limit, a body too large.

    Example:
        >>> closing_response(413, {"message": "too large"}).startswith(b"HTTP/1.1 413 Request Entity Too Large")
        True
    """
    payload = json.dumps(body).encode()
    lines = [
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}",
        *(f"{name}: {value}" for name, value in headers),
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def _refusal(limit: int) -> bytes:
    body = {"message": f"server at its connection limit ({limit} open): try again later", "max_connections": limit}
    return closing_response(503, body, (("Retry-After", str(RETRY_AFTER_S)),))


class ConnectionLimit:
    """Count a server's open TCP connections and refuse those past ``limit``.

    Pass :attr:`connection_class` as ``create_connection`` to websockets' ``serve``. A connection
    counts from its accept to its close (``connection_lost``, which asyncio calls exactly once).

    Args:
        limit: the most connections held at once; at least 1.
        base: the connection class counted (websockets' own by default).

    Raises:
        ValueError: ``limit`` is below 1.
    """

    def __init__(self, limit: int, base: type[ServerConnection] = ServerConnection) -> None:
        if limit < 1:
            raise ValueError(f"max_connections must be at least 1, got {limit}")
        self.limit = limit
        #: Connections open now.
        self.open = 0
        #: Connections refused since the server started.
        self.refused = 0
        self.connection_class = self._connection_class(base)

    def __repr__(self) -> str:
        return f"ConnectionLimit({self.open}/{self.limit} open, {self.refused} refused)"

    def _connection_class(self, base: type[ServerConnection]) -> type[ServerConnection]:
        counter = self
        refusal = _refusal(self.limit)

        class LimitedConnection(base):  # type: ignore[valid-type,misc]
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                super().connection_made(transport)
                counter.open += 1
                if counter.open > counter.limit:
                    counter.refused += 1
                    # The reply may go before the request arrives: HTTP lets a server answer
                    # early, and reading a request is work a flood should not get.
                    assert isinstance(transport, asyncio.WriteTransport)
                    transport.write(refusal)
                    transport.close()

            def connection_lost(self, exc: Exception | None) -> None:
                counter.open -= 1
                super().connection_lost(exc)

        return LimitedConnection

    def stats(self) -> dict[str, Any]:
        """The counts, for logs and benchmarks."""
        return {"open": self.open, "max_connections": self.limit, "refused": self.refused}
