"""``openenv-gym web URL``: a server's web page, reached through a local TCP forward when needed.

The forward listens on this machine's loopback only and relays bytes as they are, so the
page's origin stays ``127.0.0.1``, its token cookie and the WebSocket upgrade pass through
untouched. It relays what it gets: the hop to the server is as (un)encrypted as the server
speaks, plain HTTP for ours, so over an untrusted network prefer SSH, ``ssh -L
8000:localhost:8000 host`` to a server bound to the remote machine's loopback (see docs/web-page.md).
Each relayed connection must name a loopback ``Host``, so that a site whose name a browser has
been made to resolve to 127.0.0.1 (DNS rebinding) cannot drive the server through the forward.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Callable

from ..urls import is_loopback_host

__all__ = ["PortForward", "needs_forward", "page_url", "serve_forward"]

_CHUNK = 64 * 1024
_HEAD_TIMEOUT = 10.0  # a request head must come this soon (one over the stream's 64 KiB limit is refused)


def page_url(base_url: str, token: str | None = None) -> str:
    """The web page of the server at ``base_url``; with ``token``, the page's login address."""
    url = base_url.rstrip("/") + "/web"
    return url if token is None else f"{url}?{urllib.parse.urlencode({'token': token})}"


def needs_forward(base_url: str) -> bool:
    """Whether the server at ``base_url`` is beyond this machine's loopback."""
    return not is_loopback_host(urllib.parse.urlsplit(base_url).hostname)


def _request_host(head: bytes) -> str | None:
    """The host name a request head's ``Host`` header names (``None`` without one)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"host":
            return urllib.parse.urlsplit("//" + value.strip().decode("latin-1")).hostname
    return None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of file, then pass the end on (the other direction may still be talking)."""
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


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
        """A forward to the server at ``base_url`` (``http://host:port``).

        Raises:
            ValueError: the URL is not ``http://`` with a host (the browser would speak plain
                HTTP to the forward: a TLS server, or a Unix socket, is not reached this way).
        """
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "ws") or parts.hostname is None:
            raise ValueError(f"{base_url!r}: the forward relays http:// servers only (for others, use ssh -L)")
        return cls(parts.hostname, parts.port or 80, port=port)

    @property
    def local_url(self) -> str:
        """The forward's base URL on this machine."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on loopback."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Cut every relayed connection and stop listening."""
        for task in self._relays:
            task.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
                return
            if not is_loopback_host(_request_host(head)):
                writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            try:
                remote_reader, remote_writer = await asyncio.wait_for(
                    asyncio.open_connection(self.remote_host, self.remote_port), self.connect_timeout
                )
            except (OSError, TimeoutError):
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            try:
                remote_writer.write(head)
                await asyncio.gather(_pipe(reader, remote_writer), _pipe(remote_reader, writer))
            finally:
                remote_writer.close()
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            self._relays.discard(task)


async def serve_forward(forward: PortForward, ready: Callable[[str], object]) -> None:
    """Run ``forward`` until cancelled, calling ``ready(local_url)`` once it listens."""
    await forward.start()
    try:
        ready(forward.local_url)
        await asyncio.Event().wait()
    finally:
        await forward.stop()
