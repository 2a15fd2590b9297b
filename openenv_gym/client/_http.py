"""HTTP helpers of the clients: ``GET`` a server's JSON endpoints (``/health``, ``/schema``, ``/metadata``),
``POST`` a JSON body to one (OpenEnv's Task API)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..errors import EnvCreationError, ServerConnectError
from ..protocol import ErrorCode, ErrorFrame
from ..redaction import RedactingLogger
from ..urls import http_url, unix_socket_path

__all__ = [
    "MAX_ERROR_BODY_BYTES",
    "MAX_HTTP_BODY_BYTES",
    "auth_headers",
    "http_get_json",
    "http_post_json",
    "websockets_logger",
]

DEFAULT_OPEN_TIMEOUT = 10.0
MAX_HTTP_BODY_BYTES = 16 * 2**20  # /schema and /metadata are small; refuse a runaway answer
MAX_ERROR_BODY_BYTES = 2**16  # an error answer: a message and perhaps a traceback


def auth_headers(token: str | None) -> dict[str, str]:
    """The headers that present ``token`` to a server that requires one."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def websockets_logger(token: str | None) -> RedactingLogger:
    """The logger a client's websockets connection logs to: ``websockets.client``, with ``token``
    (and every credential header) elided from its handshake lines."""
    return RedactingLogger(logging.getLogger("websockets.client"), [token] if token else [])


def http_get_json(
    base_url: str,
    path: str,
    timeout: float = DEFAULT_OPEN_TIMEOUT,
    token: str | None = None,
    *,
    absent: frozenset[int] = frozenset(),
) -> Any:
    """``GET`` a JSON endpoint of the server (``/health``, ``/schema``, ``/metadata``).

    It connects directly, never through an HTTP proxy from the environment, as the sessions of
    the synchronous clients do: a proxy would see the token, and may not reach cluster addresses.

    Args:
        absent: statuses that mean the server has no such endpoint (``404``, ``501``): ``None``
            is returned for them instead of an error.

    Raises:
        EnvCreationError: the server answered that it cannot create its environment.
        ServerConnectError: the server is unreachable, answered another error status, or not JSON.
    """
    return _request_json("GET", base_url, path, None, timeout, token, absent)


def http_post_json(
    base_url: str,
    path: str,
    body: Any,
    timeout: float = DEFAULT_OPEN_TIMEOUT,
    token: str | None = None,
    *,
    absent: frozenset[int] = frozenset(),
) -> Any:
    """``POST`` ``body`` as JSON to an endpoint of the server and read its JSON answer, as
    :func:`http_get_json` reads one (directly, no redirects).

    Args:
        absent: as for :func:`http_get_json`.

    Raises:
        EnvCreationError, ServerConnectError: as :func:`http_get_json`.
    """
    return _request_json("POST", base_url, path, json.dumps(body).encode(), timeout, token, absent)


def _request_json(
    method: str,
    base_url: str,
    path: str,
    body: bytes | None,
    timeout: float,
    token: str | None,
    absent: frozenset[int] = frozenset(),
) -> Any:
    url = http_url(base_url, path)
    headers = auth_headers(token)
    if body is not None:
        headers["Content-Type"] = "application/json"
    socket_path = unix_socket_path(url)
    if socket_path is not None:
        status, answer = _unix_request(method, url, socket_path, body, headers, timeout)
    else:
        status, answer = _tcp_request(method, url, body, headers, timeout)
    if status in absent:
        return None
    if not 200 <= status < 300:  # a redirect too: following it would carry the token elsewhere
        raise _status_error(url, status, answer)
    return _json_body(url, answer)


def _tcp_request(
    method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    # No proxies, and no redirects: a redirect would carry the token elsewhere.
    opener = urllib.request.build_opener(_NoRedirects(), urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read(MAX_HTTP_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(MAX_ERROR_BODY_BYTES)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
        raise ServerConnectError(url, str(reason)) from exc


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


def _unix_request(
    method: str, url: str, socket_path: str, body: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """A request over a Unix socket (urllib speaks TCP only)."""
    connection = http.client.HTTPConnection("localhost", timeout=timeout)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.sock = sock
        sock.settimeout(timeout)
        sock.connect(socket_path)
        connection.request(method, urllib.parse.urlsplit(url).path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(MAX_HTTP_BODY_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise ServerConnectError(url, f"{type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()


def _status_error(url: str, status: int, body: bytes) -> Exception:
    """The error for an HTTP error answer: the env's own failure when the server says so."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and data.get("code") == ErrorCode.FACTORY_ERROR.value:
        frame = ErrorFrame.from_data(data)
        return EnvCreationError(frame.code, frame.message, frame.details)
    return ServerConnectError(url, f"HTTP {status}: {body[:500].decode(errors='replace')}")
