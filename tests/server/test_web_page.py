"""The web page's static files: types, caching and the Content-Security-Policy, 404s, no way out of the folder."""

from __future__ import annotations

import http.client
import re

import pytest

from openenv_gym.server.web_page import WEB_ROOT, content_security_policy, is_web_path, web_response
from tests.testing_env import CounterEnvironment
from tests.utils import running_server


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/web", "text/html; charset=utf-8"),
        ("/web/", "text/html; charset=utf-8"),
        ("/web/?watch=abc", "text/html; charset=utf-8"),
        ("/web/index.html", "text/html; charset=utf-8"),
        ("/web/app.js", "text/javascript; charset=utf-8"),
        ("/web/wire.js", "text/javascript; charset=utf-8"),
        ("/web/app.css", "text/css; charset=utf-8"),
    ],
)
def test_the_page_s_files_are_served_with_their_type(path, content_type):
    """/web and /web/ are index.html; each file comes with its Content-Type, no-cache and the policy."""
    response = web_response(path, "127.0.0.1:8000")
    name = path.partition("?")[0].removeprefix("/web").lstrip("/") or "index.html"
    assert response.status_code == 200
    assert response.body == (WEB_ROOT / name).read_bytes()
    assert response.headers["Content-Type"] == content_type
    assert response.headers["Content-Length"] == str(len(response.body))
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Security-Policy"] == content_security_policy("127.0.0.1:8000")


def test_the_policy_keeps_the_page_on_its_own_origin():
    """default-src 'self', WebSockets to the same host only, images also from data: and blob:, no inline script."""
    policy = dict(part.split(" ", 1) for part in content_security_policy("127.0.0.1:8123").split("; "))
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self' ws://127.0.0.1:8123 wss://127.0.0.1:8123"
    assert policy["img-src"] == "'self' data: blob:"
    assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    # A Host header that is no plain host and port is never repeated into the header.
    assert "connect-src 'self';" in content_security_policy("evil.example; script-src *")
    assert "ws://[::1]:80 " in content_security_policy("[::1]:80")


@pytest.mark.parametrize(
    "path",
    [
        "/web/nope.js",
        "/web/README.md",  # an extension the page never serves
        "/web/../env_server.py",
        "/web/..%2fenv_server.py",
        "/web/%2e%2e/env_server.py",
        "/web/./app.js",
        "/web//etc/passwd",
        "/web/web/app.js",
        "/web/.hidden.js",
        "/web/app.js/",
        "/web/C:\\windows.js",
    ],
)
def test_unknown_files_and_paths_out_of_the_folder_are_404(path):
    """Only plain names of files in the page's folder are served; nothing climbs out of it."""
    response = web_response(path)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert b"no file" in response.body


def test_only_web_paths_are_the_page_s():
    assert is_web_path("/web") and is_web_path("/web/") and is_web_path("/web/app.js")
    assert not is_web_path("/webx") and not is_web_path("/schema") and not is_web_path("/ws")


def test_the_page_uses_no_inline_script_handler_or_outside_url():
    """index.html loads its module and stylesheet from /web, with no inline script or on* handler."""
    html = (WEB_ROOT / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="/web/app.js">']
    assert not re.search(r"\son[a-z]+=", html)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    for script in WEB_ROOT.glob("*.js"):
        text = script.read_text()
        assert "innerHTML" not in text and "eval(" not in text and "new Function" not in text, script.name


def test_a_server_routes_web_paths_to_the_page():
    """GET /web on a live server answers the page with its policy; a traversal from /web is a 404."""
    with running_server(CounterEnvironment) as server:
        for path, status in [("/web", 200), ("/web/app.js", 200), ("/web/../schema", 404), ("/web/x.js", 404)]:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            try:
                connection.request("GET", path)  # sent as it is: http.client does not resolve ".."
                response = connection.getresponse()
                body = response.read()
            finally:
                connection.close()
            assert response.status == status, path
            assert response.getheader("Content-Security-Policy", "").startswith("default-src 'self'")
            if path == "/web":
                assert body == (WEB_ROOT / "index.html").read_bytes()
