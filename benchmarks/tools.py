"""Tool-call benchmark: one session's tool calls on our server and on openenv-core's MCP server.

Both servers offer the same echo tool, ``echo_message(message)``, which returns its argument:

* ours: ``openenv_gym serve openenv_gym.envs.echo:EchoEnvironment`` (a ``@tool`` method);
* openenv-core: a stock ``MCPEnvironment`` with FastMCP tools under uvicorn
  (``tests/openenv_core_server.py --env mcp``).

Measured in one run: tool-call round trips/s and per-call round-trip latency (p50/p99) over one
WebSocket session, calling ``echo_message(message="hello")`` through three drivers on each server:

* ``step``: our ``AsyncEnvClient`` sending OpenEnv's call_tool step frames,
  ``{"type":"step","data":{"type":"call_tool","tool_name":..,"arguments":{..}}}``; the same client
  and frames on both servers, so the ratio compares the servers;
* ``mcp``: MCP JSON-RPC ``tools/call`` requests in ``{"type":"mcp","data":{..}}`` frames, sent by a
  bare ``websockets`` connection (no client library: the driver that costs least, so the ratio
  is the most server-bound);
* ``MCPToolClient``: OpenEnv's own async client, ``call_tool("echo_message", message=..)`` (a
  call_tool step over ``/ws``): client and server end to end, as an OpenEnv agent runs them.

Every reply is checked (the tool's result must be the message), so only real echoes are timed.
Each round opens a fresh session per configuration (reset, warm-up calls, then the timed calls);
the configurations take turns, ``--rounds`` times, so machine noise hits both servers alike. The
table shows each configuration's median round and its latencies pooled over the rounds; each
calls/s ratio is the median of its per-round ratios, with their range.

Targets, printed and never asserted, for each driver: ours >= 3x openenv-core's calls/s, and
ours p50 <= 1/3 of openenv-core's. Run from the repository root::

    .venv/bin/python benchmarks/tools.py            # full run: 3 rounds of 3000 calls per configuration
    .venv/bin/python benchmarks/tools.py --quick    # smoke run: one round of 300 calls
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

from servers import Result, met, start_openenv_core, start_ours, stop_all, stop_all_on_sigterm

TOOL = "echo_message"
MESSAGE = "hello"
STEP_ACTION = {"type": "call_tool", "tool_name": TOOL, "arguments": {"message": MESSAGE}}
# The JSON-RPC frame with its request id left to fill in, so the bare driver only formats an int.
MCP_PARAMS = json.dumps({"name": TOOL, "arguments": {"message": MESSAGE}})
MCP_FRAME = (
    '{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": ' + MCP_PARAMS + ', "id": %d}}'
)
CALL_TIMEOUT = 30.0
SESSION_TIMEOUT = 600.0

SERVERS = ("ours", "openenv-core")
DRIVERS = {
    "step": "AsyncEnvClient, call_tool step frames",
    "mcp": "bare WebSocket, JSON-RPC mcp frames",
    "MCPToolClient": "OpenEnv's MCPToolClient.call_tool",
}
TARGET_RATE, TARGET_P50 = 3.0, 1 / 3


def ws_url(url: str) -> str:
    return "ws" + url.removeprefix("http") + "/ws"


async def timed_calls(call: Callable[[], Awaitable[Any]], warmup: int, calls: int) -> tuple[float, list[float]]:
    """Seconds for ``calls`` calls after ``warmup`` untimed ones, and each timed call's latency."""
    for _ in range(warmup):
        await call()
    lat: list[float] = []
    start = time.perf_counter()
    for _ in range(calls):
        t = time.perf_counter()
        await call()
        lat.append(time.perf_counter() - t)
    return time.perf_counter() - start, lat


def unexpected(driver: str, reply: Any) -> RuntimeError:
    return RuntimeError(f"{driver}: unexpected reply to {TOOL}({MESSAGE!r}): {reply!r}"[:2000])


async def drive_step(url: str, warmup: int, calls: int) -> tuple[float, list[float]]:
    from openenv_gym import AsyncEnvClient

    async with AsyncEnvClient(url, call_timeout=CALL_TIMEOUT) as client:
        await client.reset()

        async def call() -> None:
            obs = (await client.step(STEP_ACTION)).observation
            result = obs.get("result")
            if obs.get("error") is not None or not isinstance(result, dict) or result.get("data") != MESSAGE:
                raise unexpected("step", obs)

        return await timed_calls(call, warmup, calls)


async def drive_mcp(url: str, warmup: int, calls: int) -> tuple[float, list[float]]:
    from websockets.asyncio.client import connect

    async with connect(ws_url(url), proxy=None, compression=None, max_size=2**24) as ws:
        await ws.send('{"type": "reset", "data": {}}')
        await ws.recv()
        ids = iter(range(1, 1 << 62))

        async def call() -> None:
            request_id = next(ids)
            await ws.send(MCP_FRAME % request_id)
            reply = json.loads(await ws.recv())
            data = reply.get("data") or {}
            result = data.get("result")
            if (
                reply.get("type") != "mcp"
                or data.get("id") != request_id
                or not isinstance(result, dict)
                or result.get("data") != MESSAGE
            ):
                raise unexpected("mcp", reply)

        return await timed_calls(call, warmup, calls)


async def drive_mcp_tool_client(url: str, warmup: int, calls: int) -> tuple[float, list[float]]:
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=url, message_timeout_s=CALL_TIMEOUT) as env:
        await env.reset()

        async def call() -> None:
            result = await env.call_tool(TOOL, message=MESSAGE)  # raises on a tool error
            if result != MESSAGE:
                raise unexpected("MCPToolClient", result)

        return await timed_calls(call, warmup, calls)


DRIVE = {"step": drive_step, "mcp": drive_mcp, "MCPToolClient": drive_mcp_tool_client}


def run(driver: str, url: str, warmup: int, calls: int) -> tuple[float, list[float]]:
    # One overall bound on top of the clients' own per-call timeouts (the bare driver has none).
    return asyncio.run(asyncio.wait_for(DRIVE[driver](url, warmup, calls), SESSION_TIMEOUT))


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000, help="timed tool calls per configuration and round")
    p.add_argument("--warmup", type=int, default=300, help="untimed tool calls before timing, per session")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; calls/s is the median round")
    p.add_argument("--quick", action="store_true", help="smoke run: 300 calls, one round")
    args = p.parse_args()
    if args.quick:
        args.calls, args.warmup, args.rounds = 300, 30, 1

    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, openenv-core "
        f"{version('openenv-core')}, fastmcp {version('fastmcp')}, websockets {version('websockets')}, "
        f"uvicorn {version('uvicorn')}"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.calls} calls x {args.rounds} rounds after {args.warmup} warm-up calls; {TOOL}(message={MESSAGE!r})"
    )
    configs = [(server, driver) for driver in DRIVERS for server in SERVERS]
    results = {config: Result() for config in configs}
    stop_all_on_sigterm()
    try:
        urls = {"ours": start_ours().url, "openenv-core": start_openenv_core("--env", "mcp").url}
        for _ in range(args.rounds):
            for server, driver in configs:
                total, lat = run(driver, urls[server], args.warmup, args.calls)
                results[server, driver].rates.append(args.calls / total)
                results[server, driver].lat.extend(lat)
    finally:
        stop_all()

    print(f"\n{'one session: server / driver':<36}{'calls/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for server, driver in configs:
        r = results[server, driver]
        print(f"{server + ' / ' + driver:<36}{r.rate():>9.0f}{r.ms(0.50):>9.3f}{r.ms(0.99):>9.3f}")
    print(
        f"\n{'ratio ours/openenv-core, driver':<36}{'calls/s':>9}{'p50':>9}{'p99':>9}   (calls/s: min..max of rounds)"
    )
    verdicts = []
    for driver, what in DRIVERS.items():
        ours, theirs = results["ours", driver], results["openenv-core", driver]
        per_round = [a / b for a, b in zip(ours.rates, theirs.rates, strict=True)]
        rate, p50 = statistics.median(per_round), ours.ms(0.5) / theirs.ms(0.5)
        print(
            f"{driver:<36}{rate:>8.2f}x{p50:>8.2f}x{ours.ms(0.99) / theirs.ms(0.99):>8.2f}x"
            f"   ({min(per_round):.2f}..{max(per_round):.2f})"
        )
        verdicts.append(
            f"  {driver:<15}({what}): calls/s >= {TARGET_RATE:g}x -> {met(rate >= TARGET_RATE)}; "
            f"p50 <= 1/3 -> {met(p50 <= TARGET_P50)}"
        )
    print("targets, ours against openenv-core:")
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
