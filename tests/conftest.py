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


@pytest.fixture(scope="module")
def swarm(docker):
    """The test engine as a Docker Swarm manager, for one module: made a single-node swarm
    (``docker swarm init --advertise-addr 127.0.0.1``) if it is in none, and left again afterwards,
    as it was found. Swarm mode is the whole engine's, so its users run in the suite's serial part."""
    from openenv_gym.providers.docker.swarm import swarm_manager

    state = docker.info()["Swarm"]["LocalNodeState"]
    if state == "inactive":
        docker.swarm.init(advertise_addr="127.0.0.1", listen_addr="127.0.0.1:2377")
    try:
        swarm_manager(docker)  # a worker, or a swarm in another state, is not ours to change
        yield docker
    finally:
        if state == "inactive":
            docker.swarm.leave(force=True)
    assert docker.info()["Swarm"]["LocalNodeState"] == state


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the files with the most slow tests first (each file runs on one worker,
    handed out in this order): a long file handed out last would leave the other worker idle
    while it runs. Within a file the order stays as written."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])


# The conformance tier's count per path, written by the session's controller (see tests/conformance/report.py).
from tests.conformance.report import pytest_terminal_summary  # noqa: E402, F401
