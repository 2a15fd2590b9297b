"""A server with a token refuses every request but /health that does not present it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from openenv_gym.client import AsyncEnvClient, http_get_json
from openenv_gym.client.batch_client import BatchClient
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import ServerConnectError
from openenv_gym.protocol.batch import AutoresetMode
from openenv_gym.server.env_server import bearer_token_matches
from openenv_gym.urls import unix_url
from tests.testing_env import CounterEnvironment
from tests.utils import UNIT, run_async, running_server, wait_until

TOKEN = "a-per-run-token"


@pytest.fixture(scope="module")
def server():
    with running_server(CounterEnvironment, token=TOKEN) as running:
        yield running


def test_health_is_open_and_nothing_else_is(server):
    assert http_get_json(server.url, "/health") == {"status": "healthy"}
    for token in (None, "wrong", TOKEN + "x"):
        with pytest.raises(ServerConnectError, match=r"HTTP 401: .*needs its token"):
            http_get_json(server.url, "/schema", token=token)
    assert "action" in http_get_json(server.url, "/schema", token=TOKEN)


@pytest.mark.parametrize("token", [None, "wrong"])
def test_sessions_without_the_token_are_refused(server, token):
    client = EnvClient(server.url, token=token)
    with pytest.raises(ServerConnectError, match="HTTP 401"):
        client.connect()
    client.close()

    async def connect_async():
        async_client = AsyncEnvClient(server.url, token=token)
        try:
            await async_client.connect()
        finally:
            await async_client.close()

    with pytest.raises(ServerConnectError, match="401"):
        run_async(connect_async())
    batch = BatchClient(server.url, envs=2, autoreset_mode=AutoresetMode.NEXT_STEP, token=token)
    with pytest.raises(ServerConnectError, match="HTTP 401"):
        batch.connect()
    batch.close()
    assert server.active_sessions == 0


def test_sessions_with_the_token_work(server):
    with EnvClient(server.url, token=TOKEN) as client:
        client.reset()
        assert client.step({"amount": 2}).reward == 2.0

    async def session():
        async with AsyncEnvClient(server.url, token=TOKEN) as client:
            return await client.reset()

    assert run_async(session()).done is False


def test_token_comparison():
    assert bearer_token_matches(f"Bearer {TOKEN}", TOKEN) and bearer_token_matches(f"bearer {TOKEN}", TOKEN)
    assert not bearer_token_matches(TOKEN, TOKEN) and not bearer_token_matches(None, TOKEN)
    assert not bearer_token_matches(f"Basic {TOKEN}", TOKEN) and not bearer_token_matches("Bearer ", TOKEN)


def test_serve_reads_the_token_from_the_environment_not_argv():
    env = {key: value for key, value in os.environ.items() if key != "MISSING_TOKEN_VAR"}
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0", "--token-env", "MISSING_TOKEN_VAR"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 2 and "--token-env MISSING_TOKEN_VAR: that variable is not set" in result.stderr


def test_serve_reads_the_token_from_a_file_a_secret_is_mounted_as(tmp_path):
    """``--token-file`` (a Swarm or Kubernetes secret): its trailing newline is not part of the token."""
    secret, socket_path = tmp_path / "token", str(tmp_path / "server.sock")
    secret.write_text(TOKEN + "\n")
    command = [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--unix-socket", socket_path]
    with subprocess.Popen([*command, "--token-file", str(secret)], stderr=subprocess.PIPE) as server:
        try:
            assert wait_until(lambda: os.path.exists(socket_path), 60 * UNIT)
            url = unix_url(socket_path)
            assert wait_until(lambda: _healthy(url), 30 * UNIT)
            for wrong in (None, TOKEN[:-1]):
                with pytest.raises(ServerConnectError, match="HTTP 401"):
                    http_get_json(url, "/schema", token=wrong)
            assert "action" in http_get_json(url, "/schema", token=TOKEN)
        finally:
            server.terminate()
            server.wait(30)


def _healthy(url: str) -> bool:
    try:
        return http_get_json(url, "/health") == {"status": "healthy"}
    except ServerConnectError:
        return False


@pytest.mark.parametrize(
    ("content", "arguments", "message"),
    [
        (None, [], "--token-file {path}: cannot read the token: [Errno 2] No such file or directory"),
        ("\n", [], "--token-file {path}: the file is empty"),
        (TOKEN, ["--token-env", "SOME_VAR"], "argument --token-file: not allowed with argument --token-env"),
    ],
)
def test_a_token_file_that_cannot_serve_is_refused_before_anything_starts(tmp_path, content, arguments, message):
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0", *arguments, "--token-file", str(path)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "SOME_VAR": TOKEN},
    )  # fmt: skip
    assert result.returncode == 2 and message.format(path=path) in result.stderr


def test_remote_env_and_vector_env_present_the_token():
    import gymnasium as gym

    import openenv_gym  # noqa: F401 - registers the ids
    from openenv_gym.envs.echo import EchoEnvironment

    with running_server(EchoEnvironment, token=TOKEN) as echo:
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            gym.make("openenv/Echo-v0", base_url=echo.url)
        env = gym.make("openenv/Echo-v0", base_url=echo.url, token=TOKEN)
        try:
            env.reset()
            assert env.step({"message": "hi"})[0]["echoed_message"] == "hi"
        finally:
            env.close()
        for batched in (True, False):
            envs = gym.make_vec("openenv/Echo-v0", num_envs=2, base_urls=[echo.url], token=TOKEN, batched=batched)
            try:
                envs.reset()
                obs = envs.step({"message": np.array(["a", "bc"], dtype=object)})[0]
                assert obs["message_length"].tolist() == [1, 2]
            finally:
                envs.close()


def test_redirects_are_refused_so_the_token_never_travels_elsewhere():
    import http.server
    import threading

    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # the stdlib's name
            received.append(self.headers.get("Authorization"))
            if self.path == "/schema":
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.end_headers()
            else:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    with http.server.HTTPServer(("127.0.0.1", 0), Handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            with pytest.raises(ServerConnectError, match="HTTP 302"):
                http_get_json(f"http://127.0.0.1:{httpd.server_port}", "/schema", token=TOKEN)
        finally:
            httpd.shutdown()
    assert received == [f"Bearer {TOKEN}"]  # the redirect target was never asked


def test_a_missing_and_a_wrong_token_are_refused_with_how_to_pass_it(server):
    """The 401's text tells a missing token from a wrong one, and each says how to pass the token
    (gym.make's token=, the commands' --token-env), without any token in it."""
    refusals = {}
    for token in (None, "wrong-token"):
        with pytest.raises(ServerConnectError) as caught:
            http_get_json(server.url, "/schema", token=token)
        refusals[token] = str(caught.value)
        client = EnvClient(server.url, token=token)
        with pytest.raises(ServerConnectError) as session:
            client.connect()
        client.close()
        assert refusals[token].split("HTTP 401: ")[1] == str(session.value).split("HTTP 401: ")[1]
    assert "none was sent" in refusals[None] and "is not it" in refusals["wrong-token"]
    for text in refusals.values():
        assert "token=" in text and "--token-env" in text
        assert TOKEN not in text and "wrong-token" not in text
