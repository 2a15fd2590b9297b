"""Before a request is authenticated, whatever it holds gets a 4xx: never a 500, never a traceback.

Requests are written byte by byte over a socket (no HTTP client would send a duplicated
``Authorization`` header or a ``Host`` naming port 99999), to a token server with its web page on,
and the server's log is read for errors.
"""

from __future__ import annotations

import logging
import socket
import urllib.parse
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.testing_env import CounterEnvironment
from tests.utils import running_server

TOKEN = "a-per-run-token"
HANDSHAKE = [
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
]


class _Records(logging.Handler):
    """Every log record of the process while the module's server runs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int, _Records]]:
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        with running_server(CounterEnvironment, token=TOKEN, web=True) as running:
            address = urllib.parse.urlsplit(running.url)
            assert address.hostname is not None and address.port is not None
            yield address.hostname, address.port, records
    finally:
        root.removeHandler(records)


@pytest.fixture(autouse=True)
def fresh_log(server: tuple[str, int, _Records]) -> None:
    """Each test reads only the records of its own requests."""
    server[2].records.clear()


def request(server: tuple[str, int, _Records], target: str, headers: list[tuple[str, bytes | str]]) -> int:
    """Send ``GET target`` with ``headers`` (in order, duplicates kept); the response's status."""
    host, port, _ = server
    lines = [f"GET {target} HTTP/1.1".encode()]
    lines += [
        name.encode() + b": " + (value if isinstance(value, bytes) else value.encode()) for name, value in headers
    ]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    assert reply, f"the server closed the connection without a response to {target!r} {headers!r}"
    return int(reply.split(b" ", 2)[1])


def host_header(server: tuple[str, int, _Records]) -> tuple[str, str]:
    return ("Host", f"{server[0]}:{server[1]}")


def no_errors_logged(records: _Records) -> list[str]:
    """The log lines at ERROR or above, or with a traceback, since the test (or example) began."""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in records.records
        if record.levelno >= logging.ERROR or record.exc_info is not None
    ]


@pytest.mark.parametrize("path", ["/schema", "/ws", "/ws/batch?envs=2&autoreset_mode=NextStep", "/web", "/nowhere"])
@pytest.mark.parametrize("factories", ["bogus", "", "pickled&factories=pickled"])
def test_a_factories_value_without_the_token_is_refused_as_unauthenticated(server, path, factories):
    """A ``factories=`` value other than ``pickled`` was a 500 on every path, before the token check."""
    joiner = "&" if "?" in path else "?"
    status = request(server, f"{path}{joiner}factories={factories}", [host_header(server), *HANDSHAKE])
    assert status == 401
    assert no_errors_logged(server[2]) == []


def test_a_factories_value_with_the_token_is_a_4xx_or_served():
    """With the token, ``/schema?factories=bogus`` is the schema (the query names nothing the route reads)."""
    with running_server(CounterEnvironment, token=TOKEN) as running:
        address = urllib.parse.urlsplit(running.url)
        target = (address.hostname or "", address.port or 0, _Records())
        auth = ("Authorization", f"Bearer {TOKEN}")
        assert request(target, "/schema?factories=bogus", [host_header(target), auth]) == 200
        assert request(target, "/ws/batch?envs=2&autoreset_mode=NextStep&factories=bogus", [auth, *HANDSHAKE]) < 500


@pytest.mark.parametrize(
    "headers",
    [
        [("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}")],
        [("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer wrong")],
        [("Cookie", f"openenv_gym_token_80={TOKEN}"), ("Cookie", "other=1")],
        [("Authorization", b"Bearer \xff\xfe")],
        [("Cookie", b"openenv_gym_token_80=\xe9t\xe9")],
    ],
    ids=["two-right-tokens", "right-and-wrong", "two-cookies", "bytes-past-ascii", "cookie-past-ascii"],
)
def test_duplicated_or_undecodable_credentials_present_no_token(server, headers):
    """Two ``Authorization`` headers were a 500 (websockets' MultipleValuesError); which would count
    is anyone's guess, so neither does."""
    assert request(server, "/schema", [host_header(server), *headers]) == 401
    assert no_errors_logged(server[2]) == []


@pytest.mark.parametrize("host", ["127.0.0.1:99999", "127.0.0.1:", "[::1]:70000", ""])
def test_a_malformed_host_is_a_400(server, host):
    """A ``Host`` naming a port past 65535 passed the browser checks and made the cookie's name raise (500)."""
    assert request(server, "/schema", [("Host", host)]) == 400
    assert request(server, "/web?token=x", [("Host", host)]) == 400
    assert no_errors_logged(server[2]) == []


def test_the_login_with_a_token_past_ascii_is_refused(server):
    assert request(server, "/web?token=%FF%FE", [host_header(server)]) == 401
    assert no_errors_logged(server[2]) == []


PATHS = ["/", "/ws", "/ws/batch", "/schema", "/metadata", "/web", "/web/app.js", "/sessions", "/x"]
KEYS = ["factories", "render_mode", "envs", "autoreset_mode", "backend", "token", "vector_backend", "codec"]
HEADER_NAMES = [
    "Authorization",
    "Cookie",
    "Host",
    "Origin",
    "Upgrade",
    "Connection",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
    "Sec-Fetch-Site",
    "X-Forwarded-For",
]
# What websockets takes as a query and a header value: visible ASCII, and (in values) bytes past it.
query_text = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#&="), max_size=12)
header_value = st.binary(max_size=40).map(lambda raw: bytes(b for b in raw if b == 0x09 or (b >= 0x20 and b != 0x7F)))
credential = st.sampled_from(
    [f"Bearer {TOKEN}", f"bearer {TOKEN}x", "Bearer", "Basic x", f"openenv_gym_token_80={TOKEN}"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(PATHS),
    query=st.lists(st.tuples(st.sampled_from(KEYS) | query_text, query_text), max_size=4),
    headers=st.lists(
        st.tuples(st.sampled_from(HEADER_NAMES), header_value | credential.map(str.encode)),
        max_size=6,
    ),
    handshake=st.booleans(),
)
def test_no_request_without_the_token_gets_a_5xx(server, path, query, headers, handshake):
    """Paths, query strings and headers (duplicated, garbled, past ASCII) without exactly one right
    ``Authorization`` header: a 400, 401 or 403 every time (200 for ``/health``), nothing logged as an error."""
    server[2].records.clear()
    target = path + ("?" + "&".join(f"{key}={value}" for key, value in query) if query else "")
    sent = [*headers, *(HANDSHAKE if handshake else [])]
    status = request(server, target, sent)
    authorized = [value for name, value in headers if name == "Authorization"] == [f"Bearer {TOKEN}".encode()]
    cookie = any(name == "Cookie" for name, _ in headers)
    if authorized or cookie:  # a right token may be served, or refused for what else the request holds
        assert status < 500, (target, sent, status)
    else:
        assert status in (400, 401, 403), (target, sent, status)
    assert no_errors_logged(server[2]) == []
