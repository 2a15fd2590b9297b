"""openenv/Harness-v0 with the Docker provider: the server, the agent and its sandbox all inside the
container (its image: the runtime plus the agents, ``envs/harness``), which has no network.

mini-swe-agent solves a task through its bash tool and is paid 1.0, a wrong solution 0; the agent's
process is the container's, not this machine's, and its commands reach no network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401 - registers openenv/Harness-v0
from tests.envs.coding_reference import SOLUTIONS
from tests.envs.harness_policy import LIMITS, SUBMIT, bash, write
from tests.envs.harness_policy import play as play_task
from tests.utils import our_containers

pytestmark = pytest.mark.slow

TASK = "clamp-values"
WRONG = "def clamp_values(values, low, high):\n    return list(values)\n"


@pytest.fixture(scope="module")
def env(docker) -> Iterator[gym.Env[Any, Any]]:
    made = gym.make("openenv/Harness-v0", provider="docker", env_kwargs=LIMITS)
    try:
        assert made.unwrapped.base_url.startswith("http+unix://")  # the container's network is none
        yield made
    finally:
        made.close()


def container_commands(docker) -> list[str]:
    (container,) = our_containers(docker)
    top = container.top(ps_args="-eo pid,args")  # the engine needs the pid column
    column = top["Titles"].index("COMMAND")
    return [row[column] for row in top["Processes"]]


# The network interfaces the agent's commands see (by name: no packet is sent): loopback alone.
INTERFACES = 'python3 -c "import socket; print(sorted(name for _, name in socket.if_nameindex()))"'


def test_an_agent_in_the_container_solves_a_task_and_earns_1(env, docker):
    """The agent runs in the container (its process is the container's), its commands see no network
    interface but loopback, and its solution is graded there: 1.0."""
    _, info = env.reset(options={"task_id": TASK})
    assert info["dialect"] == "chat_completions"
    assert any("minisweagent" in command for command in container_commands(docker))
    text, _, terminated, truncated, _ = env.step(json.dumps(bash(INTERFACES)))
    assert not (terminated or truncated)
    result = json.loads(json.loads(text)["messages"][-1]["content"])  # mini-swe-agent's tool result
    assert result == {"returncode": 0, "output": "['lo']\n"}
    env.step(json.dumps(write(SOLUTIONS[TASK])))
    _, reward, terminated, truncated, info = env.step(json.dumps(bash(SUBMIT)))
    assert (reward, terminated, truncated) == (1.0, True, False), info
    assert info["tests_passed"] == info["tests_total"]


def test_a_wrong_solution_in_the_container_earns_0(env):
    _, reward, info = play_task(env, [write(WRONG), bash(SUBMIT)], TASK)
    assert reward == 0.0 and info["end"] == "agent_exited" and info["tests_passed"] < info["tests_total"]
