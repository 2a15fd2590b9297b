"""Run under OpenEnv 0.10: its ``MCPToolClient`` (simulation mode: tool calls as ``/ws`` steps)
resets the tool env at ``argv[1]`` with the keyword arguments of the JSON object ``argv[2]`` and
steps ``CallToolAction(tool_name=argv[3], arguments=argv[4])``; prints the step's reward, done and
``metadata``, beside and inside the observation, as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient


async def main(url: str, reset_kwargs: dict, tool: str, arguments: dict) -> dict:
    client = MCPToolClient(base_url=url)
    client.use_production_mode = False  # its constructor takes only production: turned off before connecting
    async with client:
        await client.reset(**reset_kwargs)
        result = await client.step(CallToolAction(tool_name=tool, arguments=arguments))
    return {
        "reward": result.reward,
        "done": result.done,
        "metadata": result.metadata,
        "observation_metadata": result.observation.metadata,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])))))
