"""The Docker provider without an engine: clear errors, nothing leaked. These run with no engine at all."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys

import pytest

from openenv_gym.providers.docker.provider import DockerProvider, DockerUnavailableError, docker_client


def test_an_engine_that_is_down_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(DockerUnavailableError, match="no Docker Engine answers"):
        DockerProvider("CartPole-v1").start()
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "clean"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"},
    )  # fmt: skip
    assert result.returncode == 1 and result.stderr.startswith("openenv-gym clean: error: no Docker Engine answers")


def test_a_stopped_engine_is_a_clear_error_and_leaks_no_socket(monkeypatch, tmp_path):
    """A socket file left by a stopped engine: refused at once, nothing left open (pytest errors on leaks)."""
    path = tmp_path / "stopped-engine.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(path))  # bound, never listening: connections are refused, as after dockerd stops
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    with pytest.raises(DockerUnavailableError, match=r"no Docker Engine answers .nothing listens"):
        docker_client()
    gc.collect()  # a leaked socket would be reported here, as an unraisable ResourceWarning
