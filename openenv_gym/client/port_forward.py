"""``openenv-gym web URL``: a server's web page, reached through a local TCP forward when needed.

A browser pointed at a server beyond loopback would talk to it in the clear from wherever it
runs; the forward instead listens on this machine's loopback only and relays bytes as they are
(so TLS, the WebSocket upgrade and the token cookie pass through untouched). Over an SSH
connection, ``ssh -L 8000:localhost:8000 host`` does the same job for a server that is bound to
the remote machine's loopback (the safer set-up: see the README).
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Awaitable, Callable

from ..protocol.urls import is_loopback_host

__all__ = ["PortForward", "page_url"]

_CHUNK = 64 * 1024


def page_url(base_url: str, token: str | None = None) -> str:
    """The web page of the server at ``base_url``; with ``token``, the page's login address."""
    url = base_url.rstrip("/") + "/web"
    return url if token is None else f"{url}?{urllib.parse.urlencode({'token': token})}"


def needs_forward(base_url: str) -> bool:
    """Whether the server at ``base_url`` is beyond this machine's loopback."""
    return not is_loopback_host(urllib.parse.urlsplit(base_url).hostname)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class PortForward:
    """Relay connections to ``127.0.0.1:port`` to ``remote_host:remote_port``, byte for byte.

    Args:
        remote_host, remote_port: where the server listens.
        port: the local port; 0 picks a free one (read :attr:`port` after :meth:`start`).
        connect_timeout: seconds to wait for the server to accept each relayed connection.
    """

    def __init__(self, remote_host: str, remote_port: int, *, port: int = 0, connect_timeout: float = 10.0) -> None:
        self.remote_host = remote_host
        self.remote_port = remote_port
        self.port = port
        self.connect_timeout = connect_timeout
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()

    @classmethod
    def to(cls, base_url: str, *, port: int = 0) -> PortForward:
        """A forward to the server at ``base_url`` (``http://host:port``)."""
        parts = urllib.parse.urlsplit(base_url)
        if parts.hostname is None:
            raise ValueError(f"{base_url!r} names no host")
        default = 443 if parts.scheme in ("https", "wss") else 80
        return cls(parts.hostname, parts.port or default, port=port)

    @property
    def local_url(self) -> str:
        """The forward's base URL on this machine."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on loopback."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and cut every relayed connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in self._relays:
            task.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            remote_reader, remote_writer = await asyncio.wait_for(
                asyncio.open_connection(self.remote_host, self.remote_port), self.connect_timeout
            )
        except (OSError, TimeoutError):
            writer.close()
            self._relays.discard(task)
            return
        try:
            await asyncio.gather(_pipe(reader, remote_writer), _pipe(remote_reader, writer))
        finally:
            self._relays.discard(task)


async def serve_forward(forward: PortForward, ready: Callable[[str], Awaitable[None] | None]) -> None:
    """Run ``forward`` until cancelled, calling ``ready(local_url)`` once it listens."""
    await forward.start()
    try:
        result = ready(forward.local_url)
        if result is not None:
            await result
        await asyncio.Event().wait()
    finally:
        await forward.stop()
