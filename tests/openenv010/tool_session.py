"""Run under OpenEnv 0.10: its ``MCPToolClient`` plays one episode on the server at ``argv[1]`` in
mode ``argv[2]``: ``production`` (its default: an HTTP MCP session, ``/ws?session_id=`` for reset
and state, tools over ``POST /mcp``) or ``simulation`` (everything over ``/ws``, tool calls as
steps; its constructor takes only production, so the flag is turned off before it connects). It
resets with the keyword arguments of the JSON object ``argv[3]``, lists the tools, then makes each
call of the JSON list ``argv[4]`` (``[how, tool, arguments]``, how being ``call_tool``, or ``step``
for a ``CallToolAction`` step whose reward and end it records), then reads state; a call the
server refuses is recorded, not fatal. Prints what it saw as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient


async def call(client: MCPToolClient, how: str, tool: str, arguments: dict) -> dict:
    try:
        if how == "call_tool":
            return {"result": await client.call_tool(tool, **arguments)}
        result = await client.step(CallToolAction(tool_name=tool, arguments=arguments))
    except Exception as exc:  # a tool error or the server's refusal, as this client raises it
        return {"raised": type(exc).__name__, "message": str(exc)}
    observation = result.observation
    return {"result": observation.result, "error": observation.error, "reward": result.reward, "done": result.done}


async def main(url: str, mode: str, reset_kwargs: dict, calls: list[list]) -> dict:
    client = MCPToolClient(base_url=url)
    client.use_production_mode = mode == "production"
    async with client:
        reset = await client.reset(**reset_kwargs)
        tools = sorted(tool.name for tool in await client.list_tools())
        made = [await call(client, how, tool, arguments) for how, tool, arguments in calls]
        state = await client.state()
    return {"reset": reset.observation.model_dump(), "tools": tools, "calls": made, "state": state.model_dump()}


if __name__ == "__main__":
    arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    print(json.dumps(asyncio.run(main(*arguments)), default=str))
