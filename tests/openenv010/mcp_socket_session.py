"""Run under OpenEnv 0.10: one WebSocket to ``/mcp`` of the server at ``argv[1]`` (no client of 0.10
uses it: its own ``websockets``), each text frame of the JSON list ``argv[2]`` sent in turn; every
answer is read as 0.10's ``JsonRpcResponse`` reads one. Prints the answers as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from openenv.core.env_server.mcp_types import JsonRpcResponse
from websockets.asyncio.client import connect


async def main(url: str, frames: list[str]) -> list[dict]:
    answers = []
    async with connect(url.replace("http", "ws", 1) + "/mcp", open_timeout=60) as socket:
        for frame in frames:
            await socket.send(frame)
            answer = json.loads(await asyncio.wait_for(socket.recv(), 120))
            JsonRpcResponse(**answer)  # 0.10's model of an answer: it raises on one it cannot read
            answers.append(answer)
    return answers


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))))
