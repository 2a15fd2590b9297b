"""Who may reach a server from a browser: the token as a cookie, and the checks against other sites.

A browser cannot put an ``Authorization`` header on a WebSocket handshake, so the web page logs
in once at ``/web?token=<token>``: the server answers with the token in an ``HttpOnly``,
``SameSite=Strict`` cookie and sends the browser on to ``/web`` (the token leaves the address
bar). Every later request of the page carries the cookie, and no other site's page can make the
browser send it. Browsers keep cookies per host, not per port: the cookie is named after the
port the browser reached (:func:`cookie_name`, read from ``Host``), so servers on one host do not
overwrite each other's logins; each of them is still sent the others' cookies, so log a browser
in only to servers whose host runs nothing you do not trust.

Browsers also let any site's page open a WebSocket to ``127.0.0.1``: a handshake whose ``Origin``
is not the server itself is refused, and on a server bound to loopback a ``Host`` that is not a
loopback name is too (a site that points its own name at 127.0.0.1, DNS rebinding, is then
refused as well).
"""

from __future__ import annotations

import hmac
import http
import http.cookies
import re
import urllib.parse

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..urls import is_loopback_host

__all__ = ["bearer_token_matches", "browser_refusal", "cookie_name", "has_token", "login_response"]

# What a Host header may hold: a name or an IPv4 address, or a bracketed IPv6 address, and a port.
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")


def cookie_name(host: str | None) -> str:
    """The name of the token cookie for a browser that reached the server as ``host`` (its
    ``Host`` header: the port it names, 80 when none)."""
    port = urllib.parse.urlsplit(f"//{host or ''}").port if host and _HOST.fullmatch(host) else None
    return f"openenv_gym_token_{port or 80}"


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


def has_token(request: Request, token: str, cookie: str | None) -> bool:
    """Whether ``request`` presents ``token``: as a bearer header, or as the web page's cookie
    named ``cookie`` (``None``: the header only)."""
    if bearer_token_matches(request.headers.get("Authorization"), token):
        return True
    if cookie is None:
        return False
    presented = _cookie_token(request.headers.get("Cookie"), cookie)
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


def browser_refusal(request: Request, loopback_server: bool) -> Response | None:
    """A 403 for a request that another site's page made the browser send (400 for a malformed
    ``Host`` or ``Origin``), else ``None``.

    ``loopback_server``: the server is bound to a loopback address over TCP, so every ``Host``
    it is rightly reached by is a loopback name.
    """
    try:
        hosts = request.headers.get_all("Host")
        origins = request.headers.get_all("Origin")
        if len(hosts) > 1 or len(origins) > 1 or (hosts and not _HOST.fullmatch(hosts[0])):
            raise ValueError
        host = hosts[0] if hosts else ""
        name = urllib.parse.urlsplit(f"//{host}").hostname or ""
        origin = urllib.parse.urlsplit(origins[0]).netloc if origins else None
    except ValueError:
        return _text_response(400, "malformed Host or Origin header")
    if loopback_server and host and not is_loopback_host(name):
        return _text_response(403, f"Host {host!r} is not this loopback server's name")
    if origin is not None and origin.lower() != host.lower():
        return _text_response(403, f"requests from pages of {origins[0]} are refused: only this server's own page may")
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
