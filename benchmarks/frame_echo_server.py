"""A WebSocket server that does no work: every text frame gets the same CartPole observation frame.

``benchmarks/vector.py`` runs it as the transport floor of the per-session path: the same
websockets asyncio server, sessions and client as ours, minus the environment and the protocol
work, so what is left is what the WebSocket round trips themselves cost on this machine.
``GET /health`` answers 200 so ``servers.wait_health`` can wait for it. With ``BYTES``, every
frame gets a binary message of that many bytes instead (the transport's floor for a vector env's
packed results, e.g. Atari frames). Run as::

    python benchmarks/frame_echo_server.py PORT [BYTES]
"""

from __future__ import annotations

import asyncio
import json
import sys
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

# What our server answers to a CartPole step (the same keys, 4 floats of the same length).
REPLY = json.dumps(
    {
        "type": "observation",
        "data": {
            "observation": {
                "observation": [0.013235742226243019, -0.21745604276657104, -0.04686959087848663, 0.2295069843530655]
            },
            "reward": 1.0,
            "done": False,
            "truncated": False,
            "info": {},
        },
    },
    separators=(",", ":"),
)


async def answer(connection: ServerConnection) -> None:
    try:
        async for _ in connection:
            await connection.send(BINARY_REPLY or REPLY)
    except ConnectionClosed:  # a client's close frame gets an answer the closed connection refuses
        pass


def health(connection: ServerConnection, request: Any) -> Any:
    if request.path == "/health":
        return connection.respond(HTTPStatus.OK, "ok\n")
    return None


async def main(port: int) -> None:
    async with serve(answer, "127.0.0.1", port, compression=None, process_request=health) as server:
        await server.serve_forever()


BINARY_REPLY = bytes(int(sys.argv[2])) if len(sys.argv) > 2 else b""

if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
