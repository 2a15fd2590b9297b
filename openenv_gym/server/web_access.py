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

__all__ = [
    "bearer_token_matches",
    "browser_refusal",
    "cookie_name",
    "has_token",
    "login_response",
    "single_header",
    "token_refusal",
]

# What a Host header may hold: a name or an IPv4 address, or a bracketed IPv6 address, and a port.
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")


def single_header(request: Request, name: str) -> str | None:
    """The value of header ``name``, or ``None`` when the request has none or gives it more than
    once (two ``Authorization`` headers present no token: which one would count is anyone's guess)."""
    values = request.headers.get_all(name)
    return values[0] if len(values) == 1 else None


def _port(host: str) -> int | None:
    """The port a well-formed ``Host`` value names (``None``: none); ``ValueError`` past 65535."""
    if not _HOST.fullmatch(host):
        raise ValueError(f"malformed host {host!r}")
    return urllib.parse.urlsplit(f"//{host}").port


def cookie_name(host: str | None) -> str:
    """The name of the token cookie for a browser that reached the server as ``host`` (its
    ``Host`` header: the port it names, 80 when none or when it is malformed)."""
    try:
        port = _port(host) if host else None
    except ValueError:
        port = None
    return f"openenv_gym_token_{port or 80}"


def _same_secret(presented: str, token: str) -> bool:
    """Constant-time comparison; a presented value may hold any byte (websockets keeps the ones
    past ASCII of a header as surrogates), so it is compared as the bytes it came as."""
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), token.encode())


def bearer_token_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header presents ``token`` (compared in constant time)."""
    scheme, _, presented = (header or "").partition(" ")
    return scheme.lower() == "bearer" and _same_secret(presented.strip(), token)


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
    if bearer_token_matches(single_header(request, "Authorization"), token):
        return True
    if cookie is None:
        return False
    presented = _cookie_token(single_header(request, "Cookie"), cookie)
    return presented is not None and _same_secret(presented, token)


# How a client sends the token, for the 401 to say (it names no token, the server's or the one sent).
_HOW_TO_SEND_THE_TOKEN = (
    "send it as Authorization: Bearer <token> (in Python gym.make(..., token=...); on openenv-gym's "
    "commands --token-env VAR, VAR holding it)"
)


def token_refusal(request: Request, cookie: str | None) -> str:
    """The 401's text for a request without the server's token: one for none sent, another for a
    wrong one, each saying how to send it."""
    cookies = single_header(request, "Cookie") or ""
    sent = single_header(request, "Authorization") is not None or (cookie is not None and f"{cookie}=" in cookies)
    what = "the one sent is not it" if sent else "none was sent"
    return f"this server needs its token, and {what}: {_HOW_TO_SEND_THE_TOKEN}"


def browser_refusal(request: Request, loopback_server: bool) -> Response | None:
    """A 403 for a request that another site's page made the browser send (400 for a malformed
    ``Host`` or ``Origin``), else ``None``.

    ``loopback_server``: the server is bound to a loopback address over TCP, so every ``Host``
    it is rightly reached by is a loopback name.
    """
    try:
        hosts = request.headers.get_all("Host")
        origins = request.headers.get_all("Origin")
        if len(hosts) > 1 or len(origins) > 1:
            raise ValueError
        host = hosts[0] if hosts else ""
        if hosts:
            _port(host)  # a malformed Host, or a port past 65535
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
    if not presented or not _same_secret(presented, token):
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
