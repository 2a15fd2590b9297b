"""``serve --snapshot-key-file``: the snapshot key as a secret, read from a file (a Swarm secret) or
a line of the standard input (a starter's pipe), never from the command line, and exclusive with
``$OPENENV_GYM_SNAPSHOT_KEY``. A server started so restores what a server of the same key sealed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from openenv_gym.client import http_get_json
from openenv_gym.env import RemoteEnv
from openenv_gym.errors import ServerConnectError, SnapshotError
from openenv_gym.server.runner import load_factory
from openenv_gym.snapshot import restore, snapshot
from openenv_gym.startup import SNAPSHOT_KEY_ENV_VAR
from openenv_gym.urls import unix_url
from tests.utils import UNIT, running_server, wait_until

KEY = "a-snapshot-key-of-this-run"
TOKEN = "a-token-of-this-run"


def _sealed_by(key: str):
    """A portable snapshot of CartPole after a few steps, sealed by a server with ``key``."""
    with running_server(load_factory("CartPole-v1"), snapshot_key=key) as server:
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=4)
            env.step(0)
            return snapshot(env, portable=True)
        finally:
            env.close()


def _serve(tmp_path, arguments: list[str], stdin: str | None = None) -> tuple[subprocess.Popen, str]:
    socket_path = str(tmp_path / "server.sock")
    environment = {key: value for key, value in os.environ.items() if key != SNAPSHOT_KEY_ENV_VAR}
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--unix-socket", socket_path, *arguments],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert server.stdin is not None
    if stdin is not None:
        server.stdin.write(stdin)
    server.stdin.close()
    url = unix_url(socket_path)
    assert wait_until(lambda: os.path.exists(socket_path) or server.poll() is not None, 60 * UNIT)
    assert server.poll() is None, server.communicate(timeout=30)[1]
    return server, url


def _restores(url: str, handle, token: str | None = None) -> bool:
    env = RemoteEnv(base_url=url, token=token)
    try:
        restore(env, handle)
        return True
    except SnapshotError as exc:
        assert exc.code == "SNAPSHOT_REFUSED" and "not sealed with this server's key" in exc.message
        return False
    finally:
        env.close()


@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_server_given_the_key_as_a_secret_restores_what_that_key_sealed(tmp_path, where):
    ours, another = _sealed_by(KEY), _sealed_by("another-key")
    if where == "file":
        secret = tmp_path / "snapshot-key"
        secret.write_text(KEY + "\n")
        server, url = _serve(tmp_path, ["--snapshot-key-file", str(secret)])
        token = None
    else:  # a starter's pipe: the token's line, then the key's
        server, url = _serve(
            tmp_path, ["--token-file", "/dev/stdin", "--snapshot-key-file", "/dev/stdin"], stdin=f"{TOKEN}\n{KEY}\n"
        )
        token = TOKEN
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            http_get_json(url, "/schema")
    try:
        assert _restores(url, ours, token)
        assert not _restores(url, another, token)
    finally:
        server.terminate()
        server.wait(30)
        server.stderr.close()
    assert KEY not in " ".join(server.args)  # never on the command line


@pytest.mark.parametrize(
    ("content", "variable", "message"),
    [
        (KEY, KEY, f"--snapshot-key-file and ${SNAPSHOT_KEY_ENV_VAR} both give a snapshot key: give one"),
        ("\n", None, "--snapshot-key-file {path}: the file is empty"),
        (None, None, "--snapshot-key-file {path}: cannot read the snapshot key: [Errno 2] No such file or directory"),
    ],
)
def test_a_key_file_that_cannot_serve_is_refused_before_anything_starts(tmp_path, content, variable, message):
    path = tmp_path / "snapshot-key"
    if content is not None:
        path.write_text(content)
    environment = {key: value for key, value in os.environ.items() if key != SNAPSHOT_KEY_ENV_VAR}
    if variable is not None:
        environment[SNAPSHOT_KEY_ENV_VAR] = variable
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0", "--snapshot-key-file", str(path)],
        capture_output=True, text=True, timeout=60 * UNIT, env=environment,
    )  # fmt: skip
    assert result.returncode == 2 and message.format(path=path) in result.stderr, result.stderr
