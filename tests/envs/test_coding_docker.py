"""The Coding env's hostile-code suite inside its Docker container (bubblewrap within the container).

The container has no network; its server is reached through a Unix socket. Each case runs in
session A; then A and B (a second session on the same container) solve the task, and the
container holds exactly the processes it held after setup.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401 - registers openenv/Coding-v0
from tests.envs.hostile_cases import HOSTILE, SERVER_PORT, SERVICE_PORT, SOLUTION, TASK, WALL_TIME, Case
from tests.utils import UNIT, our_containers, wait_until

pytestmark = pytest.mark.slow

INSTALLED_TASKS = "/usr/local/lib/python3.11/dist-packages/openenv_gym/envs/coding/tasks.jsonl"
CASES = {
    **HOSTILE,
    # In the container bubblewrap runs unprivileged and runs keep the worker's uid, so the kill is
    # permitted; but the worker is its pid namespace's init, which SIGKILL from inside never reaches.
    "kill the parent": Case("import os\nos.kill(os.getppid(), 9)\nprint('worker alive')", "worker alive", 0),
    "read the installed hidden tests": Case(f"print(open({INSTALLED_TASKS!r}).read())", "FileNotFoundError", 1),
    "reach the network": Case(
        "import socket\nsocket.create_connection(('10.0.0.1', 80), timeout=1)", "Network is unreachable", 1
    ),
}


@dataclasses.dataclass
class Served:
    a: gym.Env[Any, Any]
    b: gym.Env[Any, Any]
    container: Any
    processes: set[str]  # pids of the container's processes after setup, as the engine lists them


def container_pids(container) -> set[str]:
    """The container's live processes, less the engine's health probe (a python3 that asks /health
    every two seconds and lives a moment: a snapshot may catch it)."""
    top = container.top(ps_args="-eo pid,stat,args")
    stat, args = top["Titles"].index("STAT"), top["Titles"].index("COMMAND")
    return {row[0] for row in top["Processes"] if not row[stat].startswith("Z") and "/health" not in row[args]}


@pytest.fixture(scope="module")
def served(docker) -> Iterator[Served]:
    a = gym.make("openenv/Coding-v0", provider="docker", env_kwargs={"limits": {"wall_time": WALL_TIME}})
    b = None
    try:
        url = a.unwrapped.base_url
        assert url.startswith("http+unix://")
        b = gym.make("openenv/Coding-v0", base_url=url)
        for env in (a, b):
            env.reset(options={"task_id": TASK})
        container = docker.containers.get(a.unwrapped.provider.container_id)
        yield Served(a, b, container, container_pids(container))
    finally:
        if b is not None:
            b.close()
        a.close()
    assert wait_until(lambda: not our_containers(docker), 10 * UNIT), "the container outlived the module"


def solve(env) -> None:
    obs, reward, terminated, truncated, _info = env.step(SOLUTION)
    assert (reward, terminated, truncated) == (1.0, True, False), obs["stderr"]
    env.reset(options={"task_id": TASK})


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_code_is_contained_in_the_container(served, name):
    """Each hostile case fails inside the sandbox, leaves no process behind, and both sessions still solve the task."""
    case = CASES[name]
    code = case.code.replace(SERVER_PORT, "8000").replace(SERVICE_PORT, "8001")
    obs, reward, terminated, _truncated, info = served.a.step(code)
    output = obs["stdout"] + obs["stderr"]
    assert case.expected in output, output[-2000:]
    assert obs["exit_code"] == case.exit_code, output[-2000:]
    assert info["timed_out"] is case.timed_out
    assert (obs["tests_passed"], reward, terminated) == (0, 0.0, False)
    assert wait_until(lambda: container_pids(served.container) == served.processes, 2 * UNIT), (
        container_pids(served.container) ^ served.processes
    )
    solve(served.a)
    solve(served.b)
    # A graded step's hidden calls ran in a worker of their own, ended off the step's path: gone soon after.
    assert wait_until(lambda: container_pids(served.container) == served.processes, 2 * UNIT), (
        container_pids(served.container) ^ served.processes
    )
