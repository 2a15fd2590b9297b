"""OpenEnv's own MCP client (openenv-core's MCPToolClient) on our Echo's tools, compared with what it
gets from a stock openenv-core MCPEnvironment (FastMCP tools) offering the same echo tools."""

from __future__ import annotations

import pytest
from openenv.core.mcp_client import MCPToolClient  # a test dependency: openenv-gym[test]

from openenv_gym.providers import ProcessProvider
from tests.utils import openenv_core_servers, run_async

ECHO_TOOLS = ("echo_message", "echo_with_length")


class EchoEnv(MCPToolClient):
    """OpenEnv's echo env client, as its echo_env package defines it: MCPToolClient, unchanged."""


@pytest.fixture(scope="module")
def urls():
    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as ours, openenv_core_servers(("mcp",)) as theirs:
        yield {"ours": ours, "theirs": theirs["mcp"]}


def _drive_sync(url: str) -> dict:
    with EchoEnv(base_url=url).sync() as env:
        env.reset()
        tools = {
            tool.name: (tool.description, tool.input_schema) for tool in env.list_tools() if tool.name in ECHO_TOOLS
        }
        results = {
            "echo_message": env.call_tool("echo_message", message="Hello!"),
            "echo_with_length": env.call_tool("echo_with_length", message="Test"),
            "unicode": env.call_tool("echo_message", message="héllo ✓"),
        }
        errors = {}
        for case, name, arguments in [("unknown", "nope", {}), ("missing", "echo_message", {})]:
            with pytest.raises(RuntimeError) as exc_info:
                env.call_tool(name, **arguments)
            errors[case] = str(exc_info.value).rsplit("(type: ", 1)[1]
        return {"tools": tools, "results": results, "errors": errors}


def test_mcp_tool_client_gets_the_same_from_our_echo_as_from_openenv_core(urls):
    """The same tool list (names, descriptions, input schemas), results and error types."""
    ours, theirs = _drive_sync(urls["ours"]), _drive_sync(urls["theirs"])
    assert set(ours["tools"]) == set(ECHO_TOOLS)
    assert ours == theirs
    assert ours["results"] == {
        "echo_message": "Hello!",
        "echo_with_length": {"message": "Test", "length": 4},
        "unicode": "héllo ✓",
    }
    assert ours["errors"] == {"unknown": "tool_not_found)", "missing": "invalid_args)"}


def test_async_mcp_tool_client_on_our_echo(urls):
    async def session():
        async with MCPToolClient(base_url=urls["ours"]) as env:
            await env.reset()
            assert await env.has_tool("echo_with_length")
            step = await env.step(_call("echo_message", message="hi"))
            return await env.call_tool("echo_with_length", message="abc"), step

    result, step = run_async(session())
    assert result == {"message": "abc", "length": 3}
    assert step.observation.tool_name == "echo_message" and step.observation.error is None
    assert step.observation.result["data"] == "hi"


def _call(name: str, **arguments):
    from openenv.core.env_server.mcp_types import CallToolAction

    return CallToolAction(tool_name=name, arguments=arguments)
