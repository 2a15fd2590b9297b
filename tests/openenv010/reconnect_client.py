"""Run under OpenEnv 0.10: its ``GenericEnvClient`` on a server that drops its socket mid-episode,
each call's outcome printed as one JSON object (``{"reward": ...}`` or ``{"error": type, "message"}``).

``reconnect_client.py idle URL KEEPALIVE_IDLE REAP_IDLE``: pings every 0.2 s (a 1 s pong timeout);
reset, step, silence for KEEPALIVE_IDLE seconds, step, silence for REAP_IDLE seconds (past the
server's idle timeout), step, reset, step.

``reconnect_client.py crash URL GO``: reset, step, then a step that holds its reply while the test
kills the server and starts it again on the same port; once the file GO exists, the step again
(as a caller that retries would), then reset and step.

``reconnect_client.py seeds URL``: the first observation of ``reset(seed=3)`` twice, of
``reset(seed=4)``, and what ``reset(seed=3)`` then ``reset()`` give on the server (a draw or an error).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from openenv.core import GenericEnvClient


async def outcome(call: Any) -> dict[str, Any]:
    try:
        result = await call
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"reward": result.reward, "observation": result.observation}


async def idle(url: str, keepalive_idle: float, reap_idle: float) -> dict[str, Any]:
    async with GenericEnvClient(base_url=url, websocket_ping_interval_s=0.2, websocket_ping_timeout_s=1.0) as client:
        seen = {"reset": await outcome(client.reset()), "first": await outcome(client.step({"pay": 1}))}
        await asyncio.sleep(keepalive_idle)
        seen["after_pings"] = await outcome(client.step({"pay": 2}))
        await asyncio.sleep(reap_idle)
        seen["after_reaped"] = await outcome(client.step({"pay": 4}))
        seen["reset_again"] = await outcome(client.reset())
        seen["next"] = await outcome(client.step({"pay": 1}))
    return seen


async def crash(url: str, go: str) -> dict[str, Any]:
    async with GenericEnvClient(base_url=url) as client:
        seen = {"reset": await outcome(client.reset()), "first": await outcome(client.step({"pay": 1}))}
        seen["dropped"] = await outcome(client.step({"pay": 5, "hold": 120}))
        deadline = time.monotonic() + 300
        while not os.path.exists(go) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        seen["retried"] = await outcome(client.step({"pay": 5}))
        seen["reset_again"] = await outcome(client.reset())
        seen["next"] = await outcome(client.step({"pay": 1}))
    return seen


async def seeds(url: str) -> dict[str, Any]:
    async with GenericEnvClient(base_url=url) as client:
        return {
            "seed_3": await outcome(client.reset(seed=3)),
            "seed_3_again": await outcome(client.reset(seed=3)),
            "seed_4": await outcome(client.reset(seed=4)),
            "unseeded": await outcome(client.reset()),
        }


if __name__ == "__main__":
    mode, url, *args = sys.argv[1:]
    if mode == "idle":
        seen = asyncio.run(idle(url, float(args[0]), float(args[1])))
    elif mode == "crash":
        seen = asyncio.run(crash(url, args[0]))
    else:
        seen = asyncio.run(seeds(url))
    print(json.dumps(seen, default=str))
