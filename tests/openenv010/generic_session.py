"""Run under OpenEnv 0.10: its ``GenericEnvClient`` plays one short episode on the server at
``argv[1]`` (reset, then each action of the JSON list ``argv[2]``, then state) and prints what it
saw as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core import GenericEnvClient


async def main(url: str, actions: list[dict]) -> dict:
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset()
        steps = []
        for action in actions:
            result = await client.step(action)
            steps.append({"observation": result.observation, "reward": result.reward, "done": result.done})
        state = await client.state()
    return {"reset": {"observation": first.observation, "done": first.done}, "steps": steps, "state": state}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]))), default=str))
