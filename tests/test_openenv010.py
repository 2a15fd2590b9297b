"""Interoperability with OpenEnv as its users install it today (PyPI ``openenv`` 0.10), run from a
virtual environment of its own (see ``tests/openenv010``)."""

from __future__ import annotations

import json

import pytest

from openenv_gym.providers import ProcessProvider
from tests.openenv010 import run_peer


@pytest.fixture(scope="module")
def echo_url():
    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as url:
        yield url


def test_openenv_010_generic_client_on_our_echo_server(echo_url):
    """0.10's GenericEnvClient runs reset, step and state on our Echo server."""
    seen = run_peer("generic_session.py", echo_url, json.dumps([{"message": "hello"}]))
    assert seen["reset"]["done"] is False
    assert seen["steps"] == [
        {"observation": {"echoed_message": "hello", "message_length": 5}, "reward": pytest.approx(0.5), "done": False}
    ]
    assert seen["state"]["step_count"] == 1 and seen["state"]["episode_id"]
