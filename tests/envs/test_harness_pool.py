"""openenv/Harness-v0 through an AsyncEnvPool: several mini-swe-agent episodes at once on one server,
each answered by the scripted policy of test_harness_env.py and paid 1.0 by Coding's grader; each
session goes back to the pool and serves a next episode."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from openenv_gym import AsyncEnvPool
from openenv_gym.envs.harness import HarnessEnvironment
from tests.envs.coding_reference import SOLUTIONS
from tests.envs.harness_policy import LIMITS, SUBMIT, bash, write
from tests.envs.test_harness_env import TASK
from tests.utils import UNIT, run_async, running_server

pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")

pytestmark = pytest.mark.slow

EPISODES = 3


async def solve(pool: AsyncEnvPool) -> tuple[list[str], float, dict[str, Any]]:
    """One episode on a session of the pool: the tools of the agent's first call, its reward and last info."""
    env = await pool.acquire()
    try:
        text, _ = await env.reset(options={"task_id": TASK})
        tools = [tool["function"]["name"] for tool in json.loads(text)["tools"]]
        _, reward, terminated, _, _ = await env.step(json.dumps(write(SOLUTIONS[TASK])))
        assert reward == 0.0 and not terminated
        _, reward, terminated, truncated, info = await env.step(json.dumps(bash(SUBMIT)))
        assert terminated and not truncated
        return tools, reward, info
    finally:
        await env.aclose()


def test_an_async_pool_runs_several_agents_at_once_each_paid():
    """Three sessions, each its own agent waiting on its call while the others run: every episode is
    solved; a second round on the same sessions is paid too."""
    with running_server(lambda: HarnessEnvironment(**LIMITS), max_sessions=EPISODES) as server:

        async def rounds() -> list[list[tuple[list[str], float, dict[str, Any]]]]:
            async with AsyncEnvPool("openenv/Harness-v0", size=EPISODES, base_url=server.url) as pool:
                first = await asyncio.gather(*(solve(pool) for _ in range(EPISODES)))
                assert pool.in_use == 0
                second = await asyncio.gather(*(solve(pool) for _ in range(EPISODES)))
                return [list(first), list(second)]

        for outcomes in run_async(rounds(), timeout=1200 * UNIT):
            assert [tools for tools, _, _ in outcomes] == [["bash"]] * EPISODES
            assert [reward for _, reward, _ in outcomes] == [1.0] * EPISODES
            assert [info["end"] for _, _, info in outcomes] == ["agent_exited"] * EPISODES
