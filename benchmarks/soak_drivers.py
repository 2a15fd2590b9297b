"""The soak's sessions, one driver per kind (``benchmarks/soak.py`` holds the load that runs them): each
opens its session, resets, steps with an action of its kind whose result it checks, and closes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import numbers
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Driver",
    "MCPDriver",
    "PlainDriver",
    "Stats",
    "Unexpected",
    "VectorDriver",
    "check_cartpole",
    "check_coding",
    "check_echo",
    "check_tools",
    "echo_call",
    "tool_call",
]

VECTOR_ENVS = 8  # sub-envs of each vector session (one batch session of 8 on the server)
PROGRAMS = (
    "print(1)",
    "print(sum(i * i for i in range(20000)))",
    "import json\nprint(json.dumps({'a': [1, 2, 3]}))",
    "raise ValueError('boom')",
    "def solve(*args):\n    return None\n",
    "import sys\nprint('x' * 1000, file=sys.stderr)",
)
CALL_TIMEOUT = 60.0
OPEN_TIMEOUT = 60.0
MESSAGES = ("hello", "soak", "a longer message of the soak's echo tool calls", "")


@dataclass
class Stats:
    """What the session loops did: actions per kind and what, and every client error."""

    actions: Counter[str] = field(default_factory=Counter)  # "kind step", "kind reset", "kind reconnect"
    errors: Counter[str] = field(default_factory=Counter)
    error_messages: list[str] = field(default_factory=list)

    def error(self, kind: str, exc: BaseException) -> None:
        self.errors[kind] += 1
        if len(self.error_messages) < 20:
            self.error_messages.append(f"{kind}: {type(exc).__name__}: {exc}"[:500])


class Unexpected(RuntimeError):
    """A result that is not what the action should give."""


# -- the sessions of each kind ----------------------------------------------------------------


class Driver:
    """One open session of one kind: :meth:`reset`, :meth:`step` (resetting when the episode
    ends), :meth:`close`."""

    async def reset(self) -> None:
        raise NotImplementedError

    async def step(self, rng: random.Random) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class PlainDriver(Driver):
    """An :class:`~openenv_gym.AsyncRemoteEnv` session; ``act`` draws an action, ``check`` its result."""

    def __init__(self, env: Any, act: Callable[[random.Random], Any], check: Callable[[Any, Any], None]) -> None:
        self.env, self.act, self.check = env, act, check

    @classmethod
    async def open(cls, env_id: str, url: str, act: Any, check: Any, **kwargs: Any) -> PlainDriver:
        import openenv_gym

        env = await openenv_gym.make_async(
            env_id, base_url=url, open_timeout=OPEN_TIMEOUT, call_timeout=CALL_TIMEOUT, **kwargs
        )
        return cls(env, act, check)

    async def reset(self) -> None:
        await self.env.reset()

    async def step(self, rng: random.Random) -> None:
        action = self.act(rng)
        observation, _, terminated, truncated, _ = await self.env.step(action)
        self.check(action, observation)
        if terminated or truncated:
            await self.env.reset()

    async def close(self) -> None:
        await self.env.aclose()


def check_cartpole(action: Any, observation: Any) -> None:
    if getattr(observation, "shape", None) != (4,):
        raise Unexpected(f"CartPole observation {observation!r}")


def check_coding(action: Any, observation: Any) -> None:
    if not isinstance(observation, dict) or not isinstance(observation.get("exit_code"), numbers.Integral):
        raise Unexpected(f"Coding-v0 observation {observation!r}"[:500])
    if action.startswith("print(1)") and observation["stdout"] != "1\n":
        raise Unexpected(f"print(1) printed {observation['stdout']!r}")


def tool_call(rng: random.Random) -> dict[str, Any]:
    tool = rng.choices(("run_python", "run_tests", "submit"), weights=(6, 3, 1))[0]
    return {"name": tool, "arguments": {"code": rng.choice(PROGRAMS)}}


def check_tools(action: Any, observation: Any) -> None:
    if not isinstance(observation, str) or not observation:
        raise Unexpected(f"{action['name']} gave {observation!r}"[:500])
    if action["name"] == "run_python" and action["arguments"]["code"] == "print(1)":
        if json.loads(observation).get("stdout") != "1\n":
            raise Unexpected(f"run_python(print(1)) gave {observation!r}"[:500])


def echo_call(rng: random.Random) -> dict[str, Any]:
    return {"name": "echo_message", "arguments": {"message": rng.choice(MESSAGES)}}


def check_echo(action: Any, observation: Any) -> None:
    if observation != action["arguments"]["message"]:
        raise Unexpected(f"echo_message({action['arguments']['message']!r}) gave {observation!r}"[:500])


class VectorDriver(Driver):
    """A ``RemoteVectorEnv`` of ``VECTOR_ENVS`` CartPoles on one batch session, in ``pool``'s threads."""

    def __init__(self, envs: Any, pool: concurrent.futures.ThreadPoolExecutor) -> None:
        self.envs, self.pool = envs, pool

    @classmethod
    async def open(cls, url: str, backend: str, pool: concurrent.futures.ThreadPoolExecutor) -> VectorDriver:
        import gymnasium as gym

        def make() -> Any:
            return gym.make_vec(
                "openenv/CartPole-v1",
                num_envs=VECTOR_ENVS,
                base_url=url,
                vector_backend=backend,
                open_timeout=OPEN_TIMEOUT,
                call_timeout=CALL_TIMEOUT,
            )

        return cls(await asyncio.get_running_loop().run_in_executor(pool, make), pool)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def reset(self) -> None:
        from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY

        observations, infos = await self._run(self.envs.reset)
        if FAILURE_INFO_KEY in infos or observations.shape != (VECTOR_ENVS, 4):
            raise Unexpected(f"vector reset: {infos.get(FAILURE_INFO_KEY)}")

    async def step(self, rng: random.Random) -> None:
        import numpy as np

        from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY

        actions = np.array([rng.randrange(2) for _ in range(VECTOR_ENVS)])
        observations, _, _, _, infos = await self._run(self.envs.step, actions)
        if FAILURE_INFO_KEY in infos or observations.shape != (VECTOR_ENVS, 4):
            raise Unexpected(f"vector step: {infos.get(FAILURE_INFO_KEY)}")

    async def close(self) -> None:
        await self._run(self.envs.close)


class MCPDriver(Driver):
    """MCP JSON-RPC ``tools/call`` frames (``echo_message``) over a bare WebSocket session."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = iter(range(1, 1 << 62))

    @classmethod
    async def open(cls, url: str) -> MCPDriver:
        from websockets.asyncio.client import connect

        ws_url = "ws" + url.removeprefix("http") + "/ws"
        ws = await asyncio.wait_for(connect(ws_url, proxy=None, compression=None), OPEN_TIMEOUT)
        return cls(ws)

    async def _call(self, frame: dict[str, Any]) -> dict[str, Any]:
        await self.ws.send(json.dumps(frame))
        reply: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), CALL_TIMEOUT))
        return reply

    async def reset(self) -> None:
        reply = await self._call({"type": "reset", "data": {}})
        if reply.get("type") != "observation":
            raise Unexpected(f"mcp session's reset: {reply!r}"[:500])

    async def step(self, rng: random.Random) -> None:
        request_id, message = next(self.ids), rng.choice(MESSAGES)
        params = {"name": "echo_message", "arguments": {"message": message}}
        reply = await self._call(
            {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": params, "id": request_id}}
        )
        data = reply.get("data") or {}
        result = data.get("result")
        if reply.get("type") != "mcp" or data.get("id") != request_id or not isinstance(result, dict):
            raise Unexpected(f"tools/call: {reply!r}"[:500])
        if result.get("data") != message:
            raise Unexpected(f"echo_message({message!r}) gave {result!r}"[:500])

    async def close(self) -> None:
        await asyncio.wait_for(self.ws.close(), 10)


# -- the soak ----------------------------------------------------------------------------------
