"""Run under OpenEnv 0.10: its ``GenericEnvClient`` resets the server at ``argv[1]`` (with the
reset keywords of the JSON object ``argv[3]``, if given) and takes each action of the JSON list
``argv[2]``; prints each step's reward, done and ``metadata`` (where an OpenEnv client reads what
an env says beside its observation, a rubric's scores among them) as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core import GenericEnvClient


async def main(url: str, actions: list[dict], reset: dict) -> list[dict]:
    async with GenericEnvClient(base_url=url) as client:
        await client.reset(**reset)
        steps = []
        for action in actions:
            result = await client.step(action)
            steps.append({"reward": result.reward, "done": result.done, "metadata": result.metadata})
    return steps


if __name__ == "__main__":
    reset = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), reset)), default=str))
