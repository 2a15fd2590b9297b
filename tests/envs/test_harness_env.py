"""openenv/Harness-v0 driven end to end with mini-swe-agent, the real agent, as the harness: a scripted
policy answers each of its model calls with the shell commands it runs (through its own bash tool),
and the episode is paid by Coding's grader on the file the agent left.

A policy that writes the reference solution and submits earns 1.0; a wrong solution, no file, or a
process left running earns 0. The agent runs in its sandbox (no network but its model, the task file
hidden) unless told otherwise. The call limit truncates the episode; the agent and everything it
started are killed and its workspace removed at the end, at reset and at close.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the envs)
from openenv_gym.envs.coding.tasks import BUILTIN_TASKS
from openenv_gym.envs.harness import AGENTS, SOLUTION_FILE, AgentLaunch, HarnessEnvironment, ReplyAction
from tests.envs.coding_reference import SOLUTIONS
from tests.envs.harness_policy import LIMITS, SUBMIT, bash, write
from tests.envs.harness_policy import play as play_task
from tests.utils import UNIT, running_server

pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")

pytestmark = pytest.mark.slow

TASK = "clamp-values"
WRONG = "def clamp_values(values, low, high):\n    return list(values)\n"


def play(env: gym.Env[Any, Any], replies: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float, dict[str, Any]]:
    return play_task(env, replies, TASK)


@pytest.fixture(scope="module")
def env():
    with running_server(lambda: HarnessEnvironment(**LIMITS), max_sessions=2) as server:
        made = gym.make("openenv/Harness-v0", base_url=server.url)
        yield made
        made.close()


def test_a_scripted_policy_solves_a_task_through_mini_swe_agent_and_earns_1(env):
    """The agent's calls are the observations (its prompt naming the file, its bash tool, then each
    command's output as the tool's result); the agent runs the policy's commands, and the file it
    leaves passes every hidden test."""
    calls, reward, info = play(env, [write(SOLUTIONS[TASK]), bash(SUBMIT)])
    first, second = calls
    prompt = first["messages"][-1]["content"]
    assert first["messages"][-1]["role"] == "user" and "clamp_values" in prompt and SOLUTION_FILE in prompt
    assert [tool["function"]["name"] for tool in first["tools"]] == ["bash"]
    assert first["params"]["stream"] is False
    # The second call holds the first reply and the command's output, as the agent sent them.
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "bash"
    result = second["messages"][-1]
    assert result["role"] == "tool" and "def clamp_values" in result["content"]
    assert reward == 1.0
    assert info["end"] == "agent_exited" and info["agent_exit_code"] == 0
    assert info["tests_passed"] == info["tests_total"] > 0


@pytest.mark.parametrize(
    "replies", [[write(WRONG), bash(SUBMIT)], [bash("ls"), bash(SUBMIT)]], ids=["wrong solution", "no file"]
)
def test_a_policy_that_fails_earns_0(env, replies):
    _, reward, info = play(env, replies)
    assert reward == 0.0
    assert info["end"] == "agent_exited"
    assert info["tests_passed"] < info["tests_total"]


def test_make_vec_runs_four_agents_at_once():
    """Four sessions of one server, each its own agent waiting on its call: the vector env steps them
    together, and each solves its task."""
    with running_server(lambda: HarnessEnvironment(**LIMITS), max_sessions=4) as server:
        envs = gym.make_vec("openenv/Harness-v0", num_envs=4, base_url=server.url)
        try:
            calls, _ = envs.reset(options={"task_id": TASK})
            assert [json.loads(call)["tools"][0]["function"]["name"] for call in calls] == ["bash"] * 4
            _, rewards, terminated, _, _ = envs.step([json.dumps(write(SOLUTIONS[TASK]))] * 4)
            assert rewards.tolist() == [0.0] * 4 and not terminated.any()
            _, rewards, terminated, truncated, _ = envs.step([json.dumps(bash(SUBMIT))] * 4)
            assert rewards.tolist() == [1.0] * 4 and terminated.all() and not truncated.any()
        finally:
            envs.close()


def test_the_confined_agent_reaches_its_model_and_nothing_else():
    """In its sandbox (the default), the agent's commands can neither read the task file (the hidden
    tests' expected values), reach the host's loopback nor write outside its workspace (its /tmp is
    its own); its model calls still reach the env."""
    with socket.create_server(("127.0.0.1", 0)) as host_service:
        port = host_service.getsockname()[1]
        reach = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"
        outside = Path(sys.prefix) / f"harness-escape-{os.getpid()}"
        host_tmp = Path("/tmp") / f"harness-escape-{os.getpid()}"
        probe = (
            f"cat {BUILTIN_TASKS} > /dev/null 2>&1 && echo READ-TASKS; "
            f'{sys.executable} -c "{reach}" > /dev/null 2>&1 && echo REACHED-HOST; '
            f"touch {outside} 2> /dev/null && echo WROTE-OUTSIDE; touch {host_tmp}; echo PROBED"
        )
        env = HarnessEnvironment(**LIMITS)
        try:
            env.reset(options={"task_id": TASK})
            after = json.loads(env.step(ReplyAction.model_validate(bash(probe))).observation)
            output = after["messages"][-1]["content"]
            assert "PROBED" in output
            assert [word for word in ("READ-TASKS", "REACHED-HOST", "WROTE-OUTSIDE") if word in output] == []
            assert not host_tmp.exists()  # its /tmp is its own
            env.step(ReplyAction.model_validate(write(SOLUTIONS[TASK])))
            assert env.step(ReplyAction.model_validate(bash(SUBMIT))).reward == 1.0
        finally:
            env.close()


@pytest.mark.parametrize("agent_sandbox", ["bubblewrap", "none"])
def test_the_call_limit_truncates_the_episode_and_stops_the_agent(agent_sandbox):
    """max_calls=1: the agent's second call is not answered; the episode is truncated, unpaid, the
    agent killed; close removes the workspace."""
    env = HarnessEnvironment(max_calls=1, agent_sandbox=agent_sandbox, **LIMITS)
    try:
        env.reset(options={"task_id": TASK})
        run = env.agent_run
        assert run is not None
        end = env.step(ReplyAction.model_validate(write(SOLUTIONS[TASK])))
        assert (end.truncated, end.done, end.reward, end.info["end"]) == (True, False, 0.0, "call_limit")
        assert run.process.poll() is not None and run.leftover_pids() == []
        with pytest.raises(RuntimeError, match="ended"):
            env.step(ReplyAction(content="more"))
    finally:
        env.close()
    assert not run.root.exists()


@pytest.mark.parametrize("agent_sandbox", ["bubblewrap", "none"])
def test_a_process_left_running_earns_nothing_and_is_killed(agent_sandbox):
    """A right solution, but a process started in a session of its own and left running: reward 0,
    and the process is killed with the episode."""
    env = HarnessEnvironment(agent_sandbox=agent_sandbox, **LIMITS)
    try:
        env.reset(options={"task_id": TASK})
        run = env.agent_run
        assert run is not None
        env.step(ReplyAction.model_validate(write(SOLUTIONS[TASK])))
        env.step(ReplyAction.model_validate(bash("setsid nohup sleep 600 > /dev/null 2>&1 &")))
        end = env.step(ReplyAction.model_validate(bash(SUBMIT)))
        assert end.done and end.info["left_processes_running"] is True
        assert end.info["tests_passed"] == end.info["tests_total"]
        assert end.reward == 0.0
        assert run.leftover_pids() == []
    finally:
        env.close()


def test_reset_stops_the_running_agent_and_removes_its_workspace():
    env = HarnessEnvironment(**LIMITS)
    try:
        env.reset(options={"task_id": TASK})
        first = env.agent_run
        assert first is not None and first.process.poll() is None
        env.reset(options={"task_id": TASK})
        assert first.process.poll() is not None and first.leftover_pids() == []
        assert not first.root.exists()
        second = env.agent_run
        assert second is not None and second.workspace.is_dir()
    finally:
        env.close()
    assert not second.root.exists() and second.process.poll() is not None


# A minimal agent (the standard library's HTTP client): it asks its model until the reply is "bye".
CHATTY_AGENT = """
import json, os, urllib.request
while True:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "next?"}]}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"content-type": "application/json"})
    if json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"] == "bye":
        break
"""


@pytest.fixture
def chatty_agent(monkeypatch):
    monkeypatch.setitem(
        AGENTS, "chatty", AgentLaunch("chatty", lambda prompt, home, base_url: [sys.executable, "-c", CHATTY_AGENT])
    )
    return "chatty"


def test_the_time_limit_truncates_the_episode_the_policy_ran_out(chatty_agent):
    """The policy's time counts: a call answered after the time limit ends the episode, truncated and
    unpaid, and the agent is killed."""
    limit = 5 * UNIT
    env = HarnessEnvironment(agent=chatty_agent, agent_sandbox="none", time_limit_s=limit)
    try:
        first = env.reset(options={"task_id": TASK})  # the clock started inside
        reset_returned = time.monotonic()
        assert json.loads(first.observation)["messages"] == [{"role": "user", "content": "next?"}]
        assert env.step(ReplyAction(content="go on")).info["dialect"] == "chat_completions"
        time.sleep(max(0.0, reset_returned + limit - time.monotonic()) + 0.1)
        end = env.step(ReplyAction(content="go on"))
        assert (end.truncated, end.done, end.reward, end.info["end"]) == (True, False, 0.0, "time_limit")
        run = env.agent_run
        assert run is not None and run.process.poll() is not None
    finally:
        env.close()


def test_an_agent_that_exits_on_its_own_ends_the_episode(chatty_agent):
    """The agent's exit is the episode's end, graded (here: no file, so 0)."""
    env = HarnessEnvironment(agent=chatty_agent, agent_sandbox="none", **LIMITS)
    try:
        env.reset(options={"task_id": TASK})
        end = env.step(ReplyAction(content="bye"))
        assert (end.done, end.truncated, end.reward) == (True, False, 0.0)
        assert end.info["agent_exit_code"] == 0 and end.info["solution"] == "missing"
    finally:
        env.close()


# The agents from the npm registry, each installed once per machine into the cache, its version
# pinned (the endpoint's answers are checked against what that version reads): the package, its tool
# that runs a command and that tool's argument, and the dialect it calls its model in.
NPM_AGENTS = {
    "codex": ("@openai/codex@0.171.0", "exec_command", "cmd", "responses"),
    "claude-code": ("@anthropic-ai/claude-code@2.1.197", "Bash", "command", "anthropic_messages"),
}


@pytest.fixture(scope="module", params=sorted(NPM_AGENTS))
def npm_agent(request):
    """The agent's name, its package installed and its command on PATH."""
    package = NPM_AGENTS[request.param][0]
    prefix = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "openenv-gym" / "npm" / package
    if not (prefix / "node_modules" / ".bin").is_dir():
        npm = shutil.which("npm")
        result = (
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if npm
            else None
        )
        if result is None or result.returncode != 0:
            why = "no npm" if result is None else result.stderr[-500:]
            if os.environ.get("CI"):
                pytest.fail(f"could not install {package} from the npm registry: {why}")
            pytest.skip(f"the npm registry cannot be reached here: {why}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{prefix / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}")
        yield request.param


@pytest.mark.parametrize("solves", [True, False], ids=["scripted policy", "wrong policy"])
def test_an_npm_agent_is_driven_through_its_own_tools(npm_agent, solves):
    """The Codex CLI (Responses, streamed) and Claude Code (Anthropic Messages, streamed), each in its
    sandbox: the policy's call of the agent's own shell tool writes the solution and a final text ends
    the agent's turn, so it exits: 1.0; a policy that only says it is done: 0."""
    _, tool, argument, dialect = NPM_AGENTS[npm_agent]
    env = HarnessEnvironment(agent=npm_agent, **LIMITS)
    try:
        first = env.reset(options={"task_id": TASK})
        call = json.loads(first.observation)
        assert first.info["dialect"] == dialect and call["params"]["stream"] is True
        assert tool in [each["function"]["name"] for each in call["tools"]]
        assert "clamp_values" in json.dumps(call["messages"])
        if solves:
            command = f"printf %s {shlex.quote(SOLUTIONS[TASK])} > {SOLUTION_FILE} && ls"
            shell = {"function": {"name": tool, "arguments": {argument: command}}}
            after = env.step(ReplyAction.model_validate({"content": "Writing it.", "tool_calls": [shell]}))
            result = json.loads(after.observation)["messages"][-1]
            assert result["role"] == "tool" and SOLUTION_FILE in result["content"]
        end = env.step(ReplyAction(content="Done."))
        assert (end.done, end.info["end"], end.info["agent_exit_code"]) == (True, "agent_exited", 0)
        assert end.reward == (1.0 if solves else 0.0)
    finally:
        env.close()
