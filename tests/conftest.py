"""Fixtures shared by test modules in more than one folder."""

from __future__ import annotations

import os
from collections import Counter

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the files with the most slow tests first (each file runs on one worker,
    handed out in this order): a long file handed out last would leave the other worker idle
    while it runs. Within a file the order stays as written."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])
