"""Run inside an agent's sandbox, which has no network but its own loopback: listen on that loopback's
``PORT`` and relay each connection to the model endpoint's Unix socket (bound into the sandbox), run the
agent, and once it exits write ``{"exit_code", "left_running"}`` (JSON) to the file descriptor
``STATUS_FD``, which the agent does not inherit: whether any process of the agent's was still running in
the sandbox's pid namespace, which dies with this relay. Only the standard library: it runs with the
agent's interpreter.

Usage: ``python -c RELAY SOCKET PORT STATUS_FD AGENT_ARGV...``
"""

from __future__ import annotations

import asyncio
import json
import os
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


def _others() -> list[int]:
    """The namespace's processes but bubblewrap's init (1) and this relay."""
    own = {1, os.getpid()}
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in own]


async def _main(socket_path: str, port: int, argv: list[str]) -> int:
    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer), return_exceptions=True)

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    async with server:
        agent = await asyncio.create_subprocess_exec(*argv)
        return await agent.wait()


if __name__ == "__main__":
    status = int(sys.argv[3])
    os.set_inheritable(status, False)
    code = asyncio.run(_main(sys.argv[1], int(sys.argv[2]), sys.argv[4:]))
    with os.fdopen(status, "w") as report:
        report.write(json.dumps({"exit_code": code, "left_running": bool(_others())}))
    sys.exit(code)
