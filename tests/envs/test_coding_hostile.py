"""Hostile code through ``openenv/Coding-v0`` end to end: each case is contained, and the server keeps serving.

One server (a short wall-clock limit) holds two sessions on the same task: A and B. Each case
steps A with hostile code and checks that the observation carries a clear error (or at least a
failed-tests result), that no process of the run is left, and that the sandboxes are the same
processes as before (no worker had to be replaced). Then a normal step in A and in B solves the
task with its reference solution, and both sessions are reset for the next case.

Invalid UTF-8 cannot reach the sandbox through the env: a Python ``str`` with a lone surrogate
is refused by the client before sending (it cannot be encoded for the WebSocket), escaped JSON is refused by the action's validation, and
raw invalid bytes in a text frame end the connection. Each of those three paths has its own test.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

import openenv_gym  # noqa: F401 - registers openenv/Coding-v0
from openenv_gym.client import http_get_json
from openenv_gym.urls import ws_url
from tests.envs.hostile_cases import (
    HOSTILE,
    PROCESSES_PER_SESSION,
    SOLUTION,
    TASK,
    WALL_TIME,
    assert_contained,
    assert_runs_cleaned_up,
    run_case,
    run_processes,
)
from tests.utils import UNIT, pid_alive, sandbox_pids, server_pids, wait_until

ENV_ID = "openenv/Coding-v0"
# Its checks count every sandbox process and every run's process on the machine.
pytestmark = pytest.mark.serial


@dataclasses.dataclass
class Served:
    """The server, its two sessions, and the processes to compare against."""

    a: gym.Env[Any, Any]
    b: gym.Env[Any, Any]
    url: str
    port: int
    server_pid: int
    sandboxes: set[int]  # the sessions' sandbox processes after setup (updated when A reconnects)
    before_sandboxes: set[int]  # sandbox processes already there before this module
    before_servers: set[int]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    before_sandboxes, before_servers = sandbox_pids(), server_pids()
    a = gym.make(ENV_ID, env_kwargs={"limits": {"wall_time": WALL_TIME}})
    b = None
    try:
        url = a.unwrapped.base_url
        b = gym.make(ENV_ID, base_url=url)
        for env in (a, b):
            obs, info = env.reset(options={"task_id": TASK})
            assert info["task_id"] == TASK and obs["tests_total"] == 7
        sandboxes = sandbox_pids() - before_sandboxes
        assert len(sandboxes) == 2 * PROCESSES_PER_SESSION, sandboxes
        port = urllib.parse.urlsplit(url).port
        assert port is not None
        yield Served(a, b, url, port, a.unwrapped.provider.pid, sandboxes, before_sandboxes, before_servers)
    finally:
        if b is not None:
            b.close()  # before A: closing A stops the server
        a.close()


def ours(served: Served) -> set[int]:
    return sandbox_pids() - served.before_sandboxes


def assert_nothing_left(served: Served) -> None:
    """No process of a run is left, and the sandboxes are the very processes of setup."""
    assert_runs_cleaned_up(lambda: ours(served), served.sandboxes)


def solve(env: gym.Env[Any, Any]) -> None:
    """A normal step: the reference solution solves the task; then a fresh episode of the same task."""
    obs, reward, terminated, truncated, info = env.step(SOLUTION)
    assert (reward, terminated, truncated) == (1.0, True, False), obs["stderr"]
    assert obs["tests_passed"] == obs["tests_total"] == 7
    assert obs["exit_code"] == 0 and not info["timed_out"]
    env.reset(options={"task_id": TASK})


def assert_still_serving(served: Served) -> None:
    """The same server answers /health, and both sessions solve the task, leaving nothing behind."""
    assert pid_alive(served.server_pid)
    assert http_get_json(served.url, "/health", timeout=5 * UNIT) == {"status": "healthy"}
    solve(served.a)
    solve(served.b)
    assert_nothing_left(served)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_code_is_contained_and_the_server_keeps_serving(served, name):
    case = HOSTILE[name]
    obs, reward, terminated, truncated, info = run_case(case, served.port, served.a.step)
    assert_contained(case, obs["stdout"], obs["stderr"], obs["exit_code"], info["timed_out"])
    assert obs["tests_passed"] == 0 < obs["tests_total"] == 7
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert_nothing_left(served)  # right after the step returns: the worker cleaned up before replying
    assert_still_serving(served)


def test_invalid_utf8_as_a_lone_surrogate_fails_in_the_client(served):
    """``'\\udcff'`` (invalid UTF-8 as Python decodes it with surrogateescape) cannot be sent as WebSocket text.

    The client says so before anything is sent, and the session stays usable.
    """
    with pytest.raises(ValueError, match="lone surrogate: not valid Unicode"):
        served.a.step("print('\udcff')")
    assert_nothing_left(served)
    assert_still_serving(served)


def _call(ws: Any, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps({"type": kind, "data": data}))  # ensure_ascii: a lone surrogate travels as \udcff
    return json.loads(ws.recv(timeout=10 * UNIT))


def test_invalid_utf8_as_escaped_json_is_a_validation_error(served):
    """A client that escapes non-ASCII (``json.dumps``'s default) gets the action refused; its session goes on."""
    with connect(ws_url(served.url), open_timeout=5 * UNIT, close_timeout=5 * UNIT) as ws:
        reply = _call(ws, "reset", {"options": {"task_id": TASK}})
        assert reply["type"] == "observation"
        reply = _call(ws, "step", {"action": "print('\udcff')"})
        assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR", reply
        assert "unable to parse raw data as a unicode string" in json.dumps(reply["data"]["errors"])
        reply = _call(ws, "step", {"action": SOLUTION})  # a normal step in the same session
        assert reply["type"] == "observation", reply
        assert (reply["data"]["reward"], reply["data"]["done"]) == (1.0, True)
    assert wait_until(lambda: ours(served) == served.sandboxes, 10 * UNIT), "the raw session's sandbox outlived it"
    assert_nothing_left(served)
    assert_still_serving(served)


def test_invalid_utf8_bytes_in_a_text_frame_close_that_connection_only(served):
    """Raw 0xff in a WebSocket text frame is a protocol error: that connection is closed with 1007."""
    with connect(ws_url(served.url), open_timeout=5 * UNIT, close_timeout=5 * UNIT) as ws:
        assert _call(ws, "reset", {"options": {"task_id": TASK}})["type"] == "observation"
        ws.send(b'{"type":"step","data":{"action":"print(\'\xff\')"}}', text=True)
        with pytest.raises(ConnectionClosedError) as closed:
            ws.recv(timeout=10 * UNIT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007, closed.value
    assert "invalid start byte" in closed.value.rcvd.reason
    assert wait_until(lambda: ours(served) == served.sandboxes, 10 * UNIT), "the raw session's sandbox outlived it"
    assert_nothing_left(served)
    assert_still_serving(served)


def test_closing_both_envs_leaves_no_sandbox_and_no_server(served):
    served.b.close()
    served.a.close()
    assert wait_until(lambda: not ours(served), 10 * UNIT), f"sandbox processes left: {ours(served)}"
    assert wait_until(lambda: not (server_pids() - served.before_servers), 10 * UNIT), "a server process was left"
    assert not pid_alive(served.server_pid)
    assert not run_processes()
