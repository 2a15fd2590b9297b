"""`AsyncEnvClient`: one session with an environment server over a WebSocket, for asyncio code.

It speaks OpenEnv's ``/ws`` protocol, so it works with our servers and with OpenEnv's; the
synchronous twin is :class:`~openenv_gym.sync_client.EnvClient`. Both share the URL, HTTP and
error helpers below. Every wait is bounded: connecting by ``open_timeout``, each call by
``call_timeout``. A call that times out leaves the session unusable (a late reply could be taken
for the next one's), so the connection is dropped and later calls raise
:class:`~openenv_gym.errors.ConnectionLostError`.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from .errors import (
    CapacityReachedError,
    ConnectionLostError,
    EnvCreationError,
    RemoteError,
    RequestTimeoutError,
    ServerConnectError,
)
from .protocol import ClientSession, ErrorCode, ErrorFrame, ObservationFrame, StateFrame
from .urls import http_url, is_loopback_host, tcp_form, unix_socket_path, ws_url

__all__ = ["AsyncEnvClient", "SessionClient", "http_get_json", "http_url", "remote_error", "ws_url"]

DEFAULT_OPEN_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_MAX_FRAME_BYTES = 100 * 2**20  # OpenEnv's servers send frames up to 100 MB
MAX_HTTP_BODY_BYTES = 16 * 2**20  # /schema and /metadata are small; refuse a runaway answer
MAX_ERROR_BODY_BYTES = 2**16  # an error answer: a message and perhaps a traceback


def auth_headers(token: str | None) -> dict[str, str]:
    """The headers that present ``token`` to a server that requires one."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def http_get_json(base_url: str, path: str, timeout: float = DEFAULT_OPEN_TIMEOUT, token: str | None = None) -> Any:
    """``GET`` a JSON endpoint of the server (``/health``, ``/schema``, ``/metadata``).

    It connects directly, never through an HTTP proxy from the environment, as the sessions of
    the synchronous clients do: a proxy would see the token, and may not reach cluster addresses.

    Raises:
        EnvCreationError: the server answered that it cannot create its environment.
        ServerConnectError: the server is unreachable, answered another error status, or not JSON.
    """
    url = http_url(base_url, path)
    socket_path = unix_socket_path(url)
    if socket_path is not None:
        return _unix_get_json(url, socket_path, timeout, token)
    # No proxies, and no redirects: a redirect would carry the token elsewhere.
    opener = urllib.request.build_opener(_NoRedirects(), urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers=auth_headers(token)), timeout=timeout) as response:
            body = response.read(MAX_HTTP_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise _status_error(url, exc.code, exc.read(MAX_ERROR_BODY_BYTES)) from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
        raise ServerConnectError(url, str(reason)) from exc
    return _json_body(url, body)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: servers of ours never send one, and following it would leak the token."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _json_body(url: str, body: bytes) -> Any:
    if len(body) > MAX_HTTP_BODY_BYTES:
        raise ServerConnectError(url, f"answer is larger than {MAX_HTTP_BODY_BYTES} bytes")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ServerConnectError(url, f"answer is not JSON: {exc}") from exc


def _unix_get_json(url: str, socket_path: str, timeout: float, token: str | None) -> Any:
    """``GET`` over a Unix socket (urllib speaks TCP only)."""
    connection = http.client.HTTPConnection("localhost", timeout=timeout)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.sock = sock
        sock.settimeout(timeout)
        sock.connect(socket_path)
        connection.request("GET", urllib.parse.urlsplit(url).path, headers=auth_headers(token))
        response = connection.getresponse()
        body = response.read(MAX_HTTP_BODY_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise ServerConnectError(url, f"{type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
    if response.status >= 400:
        raise _status_error(url, response.status, body)
    return _json_body(url, body)


def _status_error(url: str, status: int, body: bytes) -> Exception:
    """The error for an HTTP error answer: the env's own failure when the server says so."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and data.get("code") == ErrorCode.FACTORY_ERROR.value:
        details = {key: value for key, value in data.items() if key not in ("code", "message")}
        return EnvCreationError(ErrorCode.FACTORY_ERROR.value, str(data.get("message", "")), details)
    return ServerConnectError(url, f"HTTP {status}: {body[:500].decode(errors='replace')}")


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

    def _new_protocol(self) -> ClientSession:
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

    def _finish(self, reply: str) -> Any:
        """Match ``reply`` to the call in flight: its result, or the :class:`RemoteError` it stands for."""
        frame = self._session.receive(reply)
        if isinstance(frame, ErrorFrame):
            raise remote_error(frame, self.env_id)
        return frame


class AsyncEnvClient(SessionClient):
    """An async session with one environment server; arguments as :class:`SessionClient`.

    Example::

        async with AsyncEnvClient("http://127.0.0.1:8000") as client:
            first = await client.reset(seed=0)
            result = await client.step({"action": 1})
    """

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._ws: ClientConnection | None = None
        self.subprotocols: list[str] | None = None  # offered in the handshake (the batch client's codec)

    async def connect(self) -> AsyncEnvClient:
        """Open the session; idempotent.

        Raises:
            ServerConnectError: refused, unreachable, or no handshake within ``open_timeout``.
        """
        if self._ws is not None:
            return self
        loopback = is_loopback_host(urllib.parse.urlsplit(self.url).hostname)
        options: dict[str, Any] = {
            "open_timeout": self.open_timeout,
            "max_size": self.max_frame_bytes,
            "compression": None,
            "close_timeout": 2,
            "subprotocols": self.subprotocols,
            "additional_headers": auth_headers(self.token),
        }
        socket_path = unix_socket_path(self.url)
        try:
            if socket_path is not None:
                self._ws = await unix_connect(socket_path, tcp_form(self.url), **options)
            else:
                self._ws = await connect(self.url, proxy=None if loopback else True, **options)
        except TimeoutError as exc:
            raise ServerConnectError(self.url, f"no handshake within {self.open_timeout:g} s") from exc
        except (OSError, InvalidHandshake, InvalidURI) as exc:
            raise ServerConnectError(self.url, str(exc) or type(exc).__name__) from exc
        self._connected()
        return self

    async def _request(self, call: str, build: Callable[[], str]) -> Any:
        """Send the frame ``build`` makes (once the connection is known to be there); await its reply."""
        ws = self._ws
        if ws is None:
            raise self._not_connected(call)
        text = build()
        try:
            async with asyncio.timeout(self.call_timeout):
                try:
                    await ws.send(text)
                except ConnectionClosed:
                    pass  # a server may say why before it closes (CAPACITY_REACHED): read that
                reply = await ws.recv()
        except TimeoutError:
            self._abandon(f"the session was abandoned after {call} timed out; make a new client")
            raise RequestTimeoutError(self.url, call, self.call_timeout) from None
        except ConnectionClosed as exc:
            self._abandon("the connection was closed earlier")
            received = exc.rcvd
            raise ConnectionLostError(
                self.url, call, received.code if received else None, received.reason if received else ""
            ) from exc
        except BaseException:  # cancelled: its late reply would be taken for the next call's
            self._abandon(f"the session was abandoned when {call} was cancelled; make a new client")
            raise
        try:
            return self._finish(reply)
        except CapacityReachedError:
            self._abandon("the server refused the session: it is at capacity")
            raise

    def _abandon(self, why: str) -> None:
        """Drop the connection at once, without a close handshake the server may never answer."""
        ws, self._ws = self._ws, None
        self._disconnected(why)
        if ws is not None:
            ws.transport.abort()

    async def reset(self, **kwargs: Any) -> ObservationFrame:
        """Start an episode; ``kwargs`` (``seed``, ``options``, ...) go to the environment's reset.

        Connects first if needed.

        Raises:
            RemoteError: the server answered with an error frame; the session stays usable.
            RequestTimeoutError, ConnectionLostError: see the module docstring.
        """
        await self.connect()
        frame = await self._request("reset", lambda: self._session.send_reset(kwargs))
        assert isinstance(frame, ObservationFrame)
        return frame

    async def step(self, action: dict[str, Any]) -> ObservationFrame:
        """Apply one action, given as its wire form (a JSON object of its fields)."""
        frame = await self._request("step", lambda: self._session.send_step(action))
        assert isinstance(frame, ObservationFrame)
        return frame

    async def state(self) -> dict[str, Any]:
        """The session's state (``episode_id``, ``step_count`` and env-specific fields)."""
        frame = await self._request("state", self._session.send_state)
        assert isinstance(frame, StateFrame)
        return frame.state

    async def close(self) -> None:
        """Send a close frame and close the connection; idempotent, never raises for a dead server."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            await ws.send(self._session.send_close())
        except ConnectionClosed:
            pass
        self._disconnected("the client was closed")
        await ws.close()

    async def __aenter__(self) -> AsyncEnvClient:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
