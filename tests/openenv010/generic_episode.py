"""Run under OpenEnv 0.10: its ``GenericEnvClient`` plays one episode on the server at ``argv[1]``:
reset with the keyword arguments of the JSON object ``argv[2]``, then each action of the JSON list
``argv[3]`` (a step the server refuses is recorded, not fatal), then state; prints what it saw as
one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core import GenericEnvClient


async def main(url: str, reset_kwargs: dict, actions: list[dict]) -> dict:
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset(**reset_kwargs)
        steps = []
        for action in actions:
            try:
                result = await client.step(action)
            except Exception as exc:  # the server's error frame, as this client raises it
                steps.append({"raised": type(exc).__name__, "message": str(exc)})
                continue
            steps.append({"observation": result.observation, "reward": result.reward, "done": result.done})
        state = await client.state()
    return {"reset": {"observation": first.observation, "done": first.done}, "steps": steps, "state": state}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]))), default=str))
