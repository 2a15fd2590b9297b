"""Fixtures shared by test modules in more than one folder."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def docker():
    """A Docker SDK client on the engine the tests use; skips without an engine, except in CI, where it fails."""
    from openenv_gym.errors import DockerUnavailableError
    from openenv_gym.providers.docker.provider import docker_client

    try:
        client = docker_client()
    except DockerUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker tests: {exc}")
        pytest.skip(f"no Docker Engine here: {exc}")
    yield client
    client.close()
