"""``serve openenv/X-v0`` serves the env the id names (its tools, schema and web page), resolved as
``validate`` resolves it; OpenEnv's own MCPToolClient lists and calls its tools and sees the task at reset."""

from __future__ import annotations

import re

import gymnasium  # noqa: F401 - its import registers openenv-gym's catalog
import pytest
from openenv.core.mcp_client import MCPToolClient  # a test dependency: openenv-gym[test]

from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.providers import ProcessProvider
from openenv_gym.registry import catalog
from openenv_gym.server.runner import _catalog_target, load_factory
from openenv_gym.validation.target import resolve_target


def test_serve_and_validate_resolve_every_catalog_id_alike():
    """Every id that starts a server of its own resolves, for ``serve``, to what ``validate`` runs."""
    served = [entry for entry in catalog.values() if entry.server is not None]
    assert len(served) > 40  # the built-in envs and Gymnasium's twins at least
    for entry in served:
        target = resolve_target(entry.id)
        assert target.app == entry.server, entry.id
        expected = None if entry.server == entry.id else (target.app, target.env_kwargs)
        assert _catalog_target(entry.id, {}) == expected, entry.id


def test_an_id_that_starts_no_server_cannot_be_served():
    with pytest.raises(ValueError, match="openenv/Remote-v0 starts no server of its own"):
        load_factory("openenv/Remote-v0")


def test_an_id_serves_the_environment_class_and_keeps_given_kwargs():
    from openenv_gym.envs.echo import EchoEnvironment

    assert load_factory("openenv/Echo-v0") is EchoEnvironment
    assert load_factory("openenv_gym:openenv/Echo-v0") is EchoEnvironment
    assert _catalog_target("openenv/Git-v0", {"tasks": "x.jsonl"}) == (
        "openenv_gym.envs.git:GitEnvironment",
        {"tasks": "x.jsonl"},
    )


@pytest.mark.parametrize(
    ("env_id", "tools", "call", "expected"),
    [
        (
            "openenv/CodingTools-v0",
            ["run_python", "run_tests", "submit"],
            ("run_python", {"code": "print(6 * 7)"}),
            {"stdout": "42\n", "exit_code": 0},
        ),
        (
            "openenv/Git-v0",
            ["read_file", "run", "submit", "write_file"],
            ("run", {"command": "git rev-parse --is-inside-work-tree"}),
            {"stdout": "true\n", "exit_code": 0},
        ),
    ],
)
def test_serving_a_tool_envs_id_gives_openenvs_tool_client_its_tools_and_task(env_id, tools, call, expected):
    """/schema lists the tools; MCPToolClient lists and calls them, and its reset shows the prompt our
    own client gets for the same seed."""
    with ProcessProvider(env_id) as url:
        assert sorted(tool["name"] for tool in http_get_json(url, "/schema")["tools"]) == tools
        with EnvClient(url) as ours:
            prompt = ours.reset(seed=3).observation["prompt"]
        assert "submit" in prompt
        with MCPToolClient(base_url=url).sync() as env:
            reset = env.reset(seed=3)
            assert reset.observation.metadata["prompt"] == prompt
            assert sorted(tool.name for tool in env.list_tools()) == tools
            result = env.call_tool(call[0], **call[1])
    assert {key: result[key] for key in expected} == expected


@pytest.mark.parametrize("served", ["openenv/CodingTools-v0", "CodingTools-v0"])
def test_gym_make_of_the_id_attaches_to_a_server_of_the_id(served):
    """``gym.make(id, base_url=...)`` takes a server started as ``serve ID`` as one of that env (its
    ``/metadata`` names the id, gym.make expects the class the id names), and refuses another env's."""
    import gymnasium as gym

    from openenv_gym.errors import EnvMismatchError

    with ProcessProvider(served) as url:
        env = gym.make("openenv/CodingTools-v0", base_url=url)
        try:
            prompt, info = env.reset(seed=0)
            assert "submit" in prompt and [tool["function"]["name"] for tool in info["tools"]][-1] == "submit"
        finally:
            env.close()
        with pytest.raises(EnvMismatchError, match=re.escape("not 'openenv_gym.envs.git:GitEnvironment'")):
            gym.make("openenv/Git-v0", base_url=url)
