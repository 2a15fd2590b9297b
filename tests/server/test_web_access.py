"""Browsers reach a server only as its own page: the token cookie, Origin and Host checks, and the switch."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

import pytest
import websockets
from websockets.sync.client import connect

from openenv_gym.client.port_forward import PortForward, page_url
from openenv_gym.server import EnvServer
from tests.testing_env import CounterEnvironment
from tests.utils import free_port, running_server, stop_process

TOKEN = "a-web-token"


def _get(port: int, path: str, host: str = "127.0.0.1", **headers: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_a_browser_logs_in_once_and_carries_the_token_as_a_cookie():
    with running_server(CounterEnvironment, token=TOKEN) as server:
        assert _get(server.port, "/web/sessions").status == 401
        assert _get(server.port, "/web?token=wrong").status == 401
        login = _get(server.port, f"/web?token={TOKEN}")
        assert login.status == 303 and login.getheader("Location") == "/web"
        cookie = login.getheader("Set-Cookie")
        name = f"openenv_gym_token_{server.port}"  # per port: a host's cookies go to all its ports
        assert cookie.startswith(f"{name}={TOKEN}") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert _get(server.port, "/web/sessions", Cookie=f"{name}={TOKEN}").status == 200
        assert _get(server.port, "/web/sessions", Cookie=f"openenv_gym_token_1={TOKEN}").status == 401
        assert _get(server.port, "/schema", Authorization=f"Bearer {TOKEN}").status == 200
        # A login with the cookie already set still moves the token out of the address bar.
        again = _get(server.port, f"/web?token={TOKEN}", Cookie=f"{name}={TOKEN}")
        assert again.status == 303 and again.getheader("Location") == "/web"
        assert _get(server.port, "/web?token=wrong", Cookie=f"{name}={TOKEN}").status == 401
        # The cookie opens what the page uses, not sessions that unpickle a client's code.
        pickled = "/ws/batch?envs=1&autoreset_mode=NextStep&factories=pickled"
        assert _get(server.port, pickled, Cookie=f"{name}={TOKEN}").status == 401
        with connect(f"ws://127.0.0.1:{server.port}/ws", additional_headers={"Cookie": f"{name}={TOKEN}"}) as page:
            page.send('{"type":"reset","data":{}}')
            assert json.loads(page.recv(timeout=10))["type"] == "observation"


def test_other_sites_pages_and_rebound_names_are_refused():
    with running_server(CounterEnvironment) as server:
        origin = f"http://127.0.0.1:{server.port}"
        with connect(f"ws://127.0.0.1:{server.port}/ws", origin=origin) as page:  # the server's own page
            page.send('{"type":"reset","data":{}}')
            assert json.loads(page.recv(timeout=10))["type"] == "observation"
        with pytest.raises(websockets.InvalidStatus, match="403"):
            connect(f"ws://127.0.0.1:{server.port}/ws", origin="http://evil.example", open_timeout=10)
        # DNS rebinding: a site's own name pointed at 127.0.0.1 reaches a loopback server with its Host.
        refused = _get(server.port, "/schema", Host=f"evil.example:{server.port}")
        assert refused.status == 403
        assert _get(server.port, "/schema", Host=f"localhost:{server.port}").status == 200
        assert _get(server.port, "/schema", Host=f"[::1]:{server.port}").status == 200
        for malformed in ("[::1", f"evil@127.0.0.1:{server.port}", "a b"):
            assert _get(server.port, "/schema", Host=malformed).status == 400
        assert server.active_sessions == 0


def test_the_page_is_off_beyond_loopback_unless_asked():
    with running_server(CounterEnvironment, host="127.0.0.2", insecure=True) as server:
        assert not server.web
        off = _get(server.port, "/web/sessions", host="127.0.0.2")
        assert off.status == 404
    with running_server(CounterEnvironment, host="127.0.0.2", web=True, token=TOKEN) as server:
        assert _get(server.port, "/web/sessions", host="127.0.0.2").status == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert _get(server.port, "/web/sessions", host="127.0.0.2", **headers).status == 200
    with pytest.raises(ValueError, match="beyond loopback needs a token"):
        EnvServer(CounterEnvironment, host="127.0.0.2", web=True)
    with running_server(CounterEnvironment, web=False) as server:
        assert _get(server.port, "/web/sessions").status == 404


class _Lines:
    """A command's stdout, line by line, each waited for with a timeout (a thread reads them)."""

    def __init__(self, stream: TextIO) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=lambda: [self._lines.put(line) for line in stream], daemon=True)
        self._thread.start()

    def next(self, timeout: float = 60.0) -> str:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout:g} s") from None


@contextlib.contextmanager
def _command(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], _Lines]]:
    """``openenv-gym ARGS`` running, with its stdout; stopped and closed afterwards."""
    process = subprocess.Popen([sys.executable, "-m", "openenv_gym", *args], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    try:
        yield process, _Lines(process.stdout)
    finally:
        stop_process(process)
        process.stdout.close()


def test_serve_prints_the_page_s_address():
    port = free_port()
    with _command("serve", "CartPole-v1", "--port", str(port)) as (_, stdout):
        stdout.next()
        assert stdout.next() == f"web page: http://127.0.0.1:{port}/web\n"


def test_web_opens_a_remote_page_through_a_loopback_forward():
    """`openenv-gym web URL` forwards a server beyond loopback (here 127.0.0.2) to 127.0.0.1, token and all."""
    port = free_port()
    env = {**os.environ, "WEB_TOKEN": TOKEN}
    serve = ("serve", "CartPole-v1", "--host", "127.0.0.2", "--port", str(port), "--web", "--token-env", "WEB_TOKEN")
    with _command(*serve, env=env) as (_, server_out):
        server_out.next()
        line = server_out.next()
        assert "log in once at /web?token=<token>" in line and TOKEN not in line
        web = ("web", f"http://127.0.0.2:{port}", "--no-browser", "--token-env", "WEB_TOKEN")
        with _command(*web, env=env) as (_, forward_out):
            line = forward_out.next()
            assert line.startswith("web page: http://127.0.0.1:") and TOKEN not in line
            local = line.split()[2].removesuffix("/web")
            local_port = int(local.rsplit(":", 1)[1])
            assert _get(local_port, "/schema", Host="evil.example").status == 403  # DNS rebinding, through the forward
            login = _get(local_port, page_url("", TOKEN))
            assert login.status == 303
            cookie = login.getheader("Set-Cookie").split(";")[0]
            assert _get(local_port, "/schema", Cookie=cookie).status == 200
            headers = {"Cookie": cookie}
            with connect(f"ws://127.0.0.1:{local_port}/ws", origin=local, additional_headers=headers) as page:
                page.send('{"type":"reset","data":{"seed":0}}')
                assert json.loads(page.recv(timeout=10))["type"] == "observation"


def test_web_on_a_loopback_server_needs_no_forward():
    with running_server(CounterEnvironment) as server:
        done = subprocess.run(
            [sys.executable, "-m", "openenv_gym", "web", server.url, "--no-browser"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0 and done.stdout == f"web page: {server.url}/web\n"
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "web", f"http://127.0.0.1:{free_port()}", "--no-browser"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "openenv-gym web: error:" in done.stderr


def test_serve_refuses_a_page_beyond_loopback_without_a_token():
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--host", "127.0.0.2", "--web"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--web on 127.0.0.2 needs --token-env" in done.stderr


def test_the_forward_relays_plain_http_servers_only():
    for url in ("https://10.1.2.3:8443", "http+unix://%2Ftmp%2Fs.sock"):
        with pytest.raises(ValueError, match="relays http:// servers only"):
            PortForward.to(url)
