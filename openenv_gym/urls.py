"""Server addresses as URLs, over TCP or a Unix socket: pure functions, no I/O.

A server on TCP is ``http://host:port`` (sessions at ``ws://host:port/ws``). A server on a Unix
socket is ``http+unix://<percent-quoted socket path>`` (sessions at ``ws+unix://.../ws``), the
convention of requests-unixsocket; the WebSocket handshake itself then names ``localhost``.
"""

from __future__ import annotations

import urllib.parse

__all__ = [
    "LOOPBACK_HOSTS",
    "check_base_url",
    "http_url",
    "is_loopback_host",
    "tcp_form",
    "unix_socket_path",
    "unix_url",
    "with_host",
    "ws_url",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss", "http+unix": "ws+unix", "ws+unix": "ws+unix"}
_HTTP_SCHEMES = {"ws": "http", "wss": "https", "ws+unix": "http+unix"}


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` (an address to bind, or a URL's hostname) is this machine's loopback only."""
    return host in LOOPBACK_HOSTS


def unix_url(path: str) -> str:
    """The base URL of a server listening on the Unix socket ``path``."""
    return "http+unix://" + urllib.parse.quote(path, safe="")


def unix_socket_path(url: str) -> str | None:
    """The socket path of an ``http+unix://`` or ``ws+unix://`` URL; ``None`` for a TCP URL."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme.endswith("+unix"):
        return None
    return urllib.parse.unquote(parts.netloc)


def tcp_form(url: str) -> str:
    """``url`` with a Unix socket address replaced by ``localhost`` (what the handshake names)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme.endswith("+unix"):
        return url
    return urllib.parse.urlunsplit((parts.scheme[: -len("+unix")], "localhost", parts.path, parts.query, ""))


def check_base_url(base_url: str) -> str:
    """``base_url`` if it is a server URL this package can reach (``http``, ``https``, ``ws``,
    ``wss``, or their ``+unix`` forms, with an address).

    Raises:
        ValueError: it is not, naming the expected form (and the fix for a missing scheme).
    """
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme in _WS_SCHEMES and parts.netloc:
        return base_url
    hint = ""
    if "://" not in base_url:
        hint = f"; did you mean 'http://{base_url}'?"
    raise ValueError(f"expected a server URL like 'http://127.0.0.1:8000' or 'ws://host:port', got {base_url!r}{hint}")


def ws_url(base_url: str) -> str:
    """The session endpoint of a server: ``http://h:p`` or ``ws://h:p`` becomes ``ws://h:p/ws``."""
    parts = urllib.parse.urlsplit(check_base_url(base_url))
    scheme = _WS_SCHEMES[parts.scheme]
    path = parts.path.rstrip("/")
    if not path.endswith("/ws"):
        path += "/ws"
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def http_url(base_url: str, path: str) -> str:
    """The HTTP URL of ``path`` (``"/schema"``) on the server behind ``base_url``."""
    parts = urllib.parse.urlsplit(base_url)
    scheme = _HTTP_SCHEMES.get(parts.scheme, parts.scheme)
    root = parts.path.rstrip("/")
    if root.endswith("/ws"):
        root = root[: -len("/ws")]
    return urllib.parse.urlunsplit((scheme, parts.netloc, root + path, "", ""))


def with_host(url: str, host: str) -> str:
    """``url`` with its host replaced by ``host`` (an IPv6 address is bracketed), port kept."""
    parts = urllib.parse.urlsplit(url)
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc).geturl()
