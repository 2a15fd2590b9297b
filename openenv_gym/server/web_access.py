"""Who may reach a server from a browser: the token as a cookie, and the checks against other sites.

A browser cannot put an ``Authorization`` header on a WebSocket handshake, so the web page logs
in once at ``/web?token=<token>``: the server answers with the token in an ``HttpOnly``,
``SameSite=Strict`` cookie and sends the browser on to ``/web`` (the token leaves the address
bar). Every later request of the page carries the cookie, and no other site's page can make the
browser send it. Browsers keep cookies per host, not per port, so the cookie is named after the
server's port (:func:`cookie_name`): one server's token is never sent to another on the same host.

Browsers also let any site's page open a WebSocket to ``127.0.0.1``: a handshake whose ``Origin``
is not the server itself is refused, and on a server bound to loopback a ``Host`` that is not a
loopback name is too (a site that points its own name at 127.0.0.1, DNS rebinding, is then
refused as well).
"""

from __future__ import annotations

import hmac
import http
import http.cookies
import urllib.parse

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..protocol.urls import is_loopback_host

__all__ = ["bearer_token_matches", "browser_refusal", "cookie_name", "has_token", "login_response"]


def cookie_name(port: int | None) -> str:
    """The name of the token cookie of a server on ``port`` (``None``: a Unix socket)."""
    return "openenv_gym_token" if port is None else f"openenv_gym_token_{port}"


def bearer_token_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header presents ``token`` (compared in constant time)."""
    scheme, _, presented = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())


def _cookie_token(header: str | None, name: str) -> str | None:
    if not header:
        return None
    cookies = http.cookies.SimpleCookie()
    try:
        cookies.load(header)
    except http.cookies.CookieError:
        return None
    morsel = cookies.get(name)
    return None if morsel is None else morsel.value


def has_token(request: Request, token: str, cookie: str) -> bool:
    """Whether ``request`` presents ``token``: as a bearer header, or as the web page's cookie
    named ``cookie``."""
    if bearer_token_matches(request.headers.get("Authorization"), token):
        return True
    presented = _cookie_token(request.headers.get("Cookie"), cookie)
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


def _host_name(host: str) -> str:
    """The name in a ``Host`` header or an origin's netloc, without the port and brackets."""
    return urllib.parse.urlsplit(f"//{host}").hostname or ""


def browser_refusal(request: Request, loopback_server: bool) -> Response | None:
    """A 403 for a request that another site's page made the browser send, else ``None``.

    ``loopback_server``: the server is bound to a loopback address over TCP, so every ``Host``
    it is rightly reached by is a loopback name.
    """
    host = request.headers.get("Host", "")
    if loopback_server and host and not is_loopback_host(_host_name(host)):
        return _text_response(403, f"Host {host!r} is not this loopback server's name")
    origin = request.headers.get("Origin")
    if origin is not None and urllib.parse.urlsplit(origin).netloc != host:
        return _text_response(403, f"requests from pages of {origin} are refused: only this server's own page may")
    return None


def login_response(query: str, token: str, cookie_name: str) -> Response | None:
    """The answer to ``/web?token=...`` with the right token: the cookie, and on to ``/web``.

    ``None`` when the query holds no token or a wrong one.
    """
    presented = urllib.parse.parse_qs(query).get("token", [""])[0]
    if not presented or not hmac.compare_digest(presented.encode(), token.encode()):
        return None
    cookie = http.cookies.SimpleCookie()
    cookie[cookie_name] = token
    morsel = cookie[cookie_name]
    morsel["httponly"] = True
    morsel["samesite"] = "Strict"
    morsel["path"] = "/"
    headers = Headers(
        [
            ("Location", "/web"),
            ("Set-Cookie", morsel.OutputString()),
            ("Cache-Control", "no-store"),
            ("Content-Length", "0"),
        ]
    )
    return Response(303, http.HTTPStatus(303).phrase, headers, b"")


def _text_response(status: int, text: str) -> Response:
    body = text.encode()
    headers = Headers([("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return Response(status, http.HTTPStatus(status).phrase, headers, body)
