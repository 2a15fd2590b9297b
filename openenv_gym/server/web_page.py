"""The web debug page's static files under ``/web``: a request path in, an HTTP response out.

The page (``server/web/``: ``index.html``, its ES modules and its stylesheet, no build step) opens
its own ``/ws`` session on the server's origin. Every response carries a Content-Security-Policy
that lets the page reach nothing but that origin: no inline script, no eval, no other host.
"""

from __future__ import annotations

import http
import re
from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Response

__all__ = ["WEB_PREFIX", "WEB_ROOT", "content_security_policy", "is_web_path", "web_response"]

#: Where the page is served.
WEB_PREFIX = "/web"
#: The folder its files are read from (package data).
WEB_ROOT = Path(__file__).with_name("web")

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
# A file name the page may ask for: one plain name with a known extension. Nothing with a slash,
# a dot before its name or an escape passes, so no path can lead out of WEB_ROOT.
_FILE_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
# What a Host header may hold to be repeated in the policy (a name or address and a port).
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")


def is_web_path(path: str) -> bool:
    """Whether ``path`` (without its query) is the page's: ``/web`` or anything under ``/web/``."""
    return path == WEB_PREFIX or path.startswith(WEB_PREFIX + "/")


def content_security_policy(host: str | None) -> str:
    """The page's policy: its own origin only; WebSockets to the same host (``ws:``/``wss:``).

    ``'self'`` covers same-origin WebSockets in CSP Level 3; the host's ``ws://`` and ``wss://``
    are named too for browsers that read ``'self'`` as HTTP(S) only. A Host header that is not a
    plain host and port is left out rather than repeated.
    """
    connect = "'self'"
    if host and _HOST.fullmatch(host):
        connect += f" ws://{host} wss://{host}"
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            f"connect-src {connect}",
            "img-src 'self' data: blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def _response(status: int, body: bytes, content_type: str, host: str | None) -> Response:
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            # No build step, so no hashed names: the browser asks again each time (a few KiB).
            ("Cache-Control", "no-cache"),
            ("Content-Security-Policy", content_security_policy(host)),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ]
    )
    return Response(status, http.HTTPStatus(status).phrase, headers, body)


def web_response(path: str, host: str | None = None) -> Response:
    """The response to ``GET path`` for a path under ``/web`` (see :func:`is_web_path`).

    ``/web`` and ``/web/`` are the page itself (``index.html``); ``/web/NAME`` is the file NAME
    of :data:`WEB_ROOT`; anything else, a subfolder or a path that tries to climb out, is a 404.

    Args:
        path: the request's path, with or without its query string.
        host: the request's Host header, named in the policy's ``connect-src``.
    """
    path = path.partition("?")[0]
    name = path[len(WEB_PREFIX) :].lstrip("/") or "index.html"
    suffix = Path(name).suffix
    file = WEB_ROOT / name
    if _FILE_NAME.fullmatch(name) and suffix in _CONTENT_TYPES and file.is_file():
        return _response(200, file.read_bytes(), _CONTENT_TYPES[suffix], host)
    body = f"no file {path} on this server's web page".encode()
    return _response(404, body, "text/plain; charset=utf-8", host)
