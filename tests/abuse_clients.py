"""Misbehaving clients on raw sockets, for the connection-abuse tests and benchmark.

Each speaks just enough HTTP or WebSocket (websockets' sans-I/O client) to reach the stage it
abuses, then stops: it sends nothing, half a request, completes a handshake and goes silent, or
sends steps and never reads a reply. They are coroutines on non-blocking sockets, so that
thousands share one event loop (the server's own, in the tests). Loopback only; every socket is
the caller's to close.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import socket
from collections.abc import Callable, Iterator
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

PARTIAL_REQUEST = b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"


def raise_open_file_limit(needed: int) -> int:
    """Raise this process's soft open-file limit to ``needed`` (at most the hard limit); the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


async def _connect(port: int, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if receive_buffer is not None:  # before connect, so the window is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.setblocking(False)
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port)), 10.0)
    except BaseException:
        sock.close()
        raise
    return sock


async def half_open(port: int, partial: bool = False) -> socket.socket:
    """A TCP connection that sends nothing, or (``partial``) the first lines of a request."""
    sock = await _connect(port)
    if partial:
        sock.send(PARTIAL_REQUEST)  # a few bytes: they fit in any socket buffer
    return sock


async def is_closed(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closed ``sock`` (EOF or reset) within ``timeout``; data read is dropped."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            while await loop.sock_recv(sock, 65536):
                pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


class RawSession:
    """A WebSocket handshake done by hand (:meth:`open`); afterwards the caller decides whether
    it ever reads or writes again."""

    def __init__(self, sock: socket.socket, protocol: ClientProtocol) -> None:
        self.sock = sock
        self.protocol = protocol
        self.response: Response | None = None
        self._pending = b""
        self._frames: list[Frame] = []  # frames that came with the handshake's response

    @classmethod
    async def open(cls, port: int, path: str = "/ws", receive_buffer: int | None = None) -> RawSession:
        """Connect and complete the handshake (read up to the server's response)."""
        sock = await _connect(port, receive_buffer)
        session = cls(sock, ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}{path}")))
        try:
            session.protocol.send_request(session.protocol.connect())
            await asyncio.get_running_loop().sock_sendall(sock, b"".join(session.protocol.data_to_send()))
            async with asyncio.timeout(10.0):
                while session.response is None:
                    for event in session.protocol.events_received():
                        if isinstance(event, Response):
                            session.response = event
                        elif isinstance(event, Frame):
                            session._frames.append(event)
                    if session.response is None:
                        await session._receive()
        except BaseException:
            sock.close()
            raise
        return session

    async def _receive(self) -> None:
        try:
            data = await asyncio.get_running_loop().sock_recv(self.sock, 65536)
        except ConnectionResetError:
            data = b""
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
            if self.response is None:
                raise ConnectionError("the server closed the connection during the handshake")

    @property
    def opened(self) -> bool:
        """Whether the server answered 101 (a session or a capacity refusal follows)."""
        return self.response is not None and self.response.status_code == 101

    async def next_frame(self, timeout: float) -> Frame | None:
        """The next frame the server sends, or None once the connection is closed."""
        async with asyncio.timeout(timeout):
            while True:
                self._frames += [e for e in self.protocol.events_received() if isinstance(e, Frame)]
                if self._frames:
                    return self._frames.pop(0)
                if self.protocol.state is State.CLOSED:
                    return None
                await self._receive()

    async def next_json(self, timeout: float) -> dict[str, Any]:
        """The next text frame's JSON; raises if the server closed first."""
        frame = await self.next_frame(timeout)
        if frame is None:
            raise ConnectionError("the server closed the connection without a frame")
        value: dict[str, Any] = json.loads(frame.data)
        return value

    def queue(self, frame: dict[str, Any]) -> None:
        """Encode ``frame`` to be written by :meth:`write_some`."""
        self.protocol.send_text(json.dumps(frame).encode())
        self._pending += b"".join(self.protocol.data_to_send())

    def write_some(self) -> bool:
        """Write what is queued until the socket would block; whether all of it went."""
        try:
            while self._pending:
                sent = self.sock.send(self._pending)
                self._pending = self._pending[sent:]
        except (BlockingIOError, InterruptedError, ConnectionResetError, BrokenPipeError):
            return False  # full, or dropped by the server
        return True

    async def fill_without_reading(self, step: dict[str, Any], frames: int = 300) -> int:
        """Send ``reset`` then ``frames`` step frames, and read nothing: with big replies, far more
        than the server and the kernel can buffer. Stops early if the socket stays full or the
        server drops the connection; the step frames sent."""
        self.queue({"type": "reset"})
        sent = 0
        while sent < frames:
            self.queue(step)
            sent += 1
            if not self.write_some():
                await asyncio.sleep(0.1)  # let the server take what it can
                if not self.write_some():
                    break
        return sent

    def close(self) -> None:
        self.sock.close()


async def wait_for_state(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` on the running loop until it holds or ``timeout`` passes; its last value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(interval)
    return predicate()


@contextlib.contextmanager
def closing_all() -> Iterator[list[Any]]:
    """A list for sockets and raw sessions; each is closed on exit."""
    items: list[Any] = []
    try:
        yield items
    finally:
        for item in items:
            with contextlib.suppress(OSError):
                item.close()
