"""What the tests driving openenv/Harness-v0 through mini-swe-agent share: the scripted policy's replies
(its bash tool's calls), its way to finish, and an episode played from a list of replies."""

from __future__ import annotations

import json
import shlex
from typing import Any

import gymnasium as gym

from openenv_gym.envs.harness import SOLUTION_FILE, HarnessEnvironment, ReplyAction
from tests.utils import UNIT

__all__ = ["LIMITS", "SUBMIT", "bash", "finish", "play", "write"]

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's own way to finish
# Generous for a loaded machine: the agent starts in seconds, and each call waits on the test.
LIMITS: dict[str, Any] = {"time_limit_s": 600 * UNIT, "reply_timeout_s": 300 * UNIT}


def bash(command: str) -> dict[str, Any]:
    """mini-swe-agent's action: reasoning text and one call of its bash tool."""
    return {"content": "Next step.", "tool_calls": [{"function": {"name": "bash", "arguments": {"command": command}}}]}


def write(code: str, path: str = SOLUTION_FILE) -> dict[str, Any]:
    """Write ``code`` to ``path`` (in the agent's working directory) and show it."""
    return bash(f"printf %s {shlex.quote(code)} > {path} && cat {path}")


def play(
    env: gym.Env[Any, Any], replies: list[dict[str, Any]], task: str
) -> tuple[list[dict[str, Any]], float, dict[str, Any]]:
    """Reset on ``task`` and answer each call with the next reply until the episode ends: every call
    seen (as the observation's JSON), the reward and the last info."""
    text, info = env.reset(options={"task_id": task})
    calls = [json.loads(text)]
    assert info["dialect"] == "chat_completions" and info["task_id"] == task
    for reply in replies:
        text, reward, terminated, truncated, info = env.step(json.dumps(reply))
        if terminated or truncated:
            assert text == ""
            return calls, reward, info
        assert reward == 0.0
        calls.append(json.loads(text))
    raise AssertionError(f"the episode did not end after {len(replies)} replies")


def finish(env: HarnessEnvironment, task: str, commands: list[str]) -> tuple[list[str], Any]:
    """On the server's env itself: reset on ``task``, run each command through the agent's bash tool,
    then finish; what each command printed (the tool's result the agent sent back), and the last
    observation (the episode's end)."""
    env.reset(options={"task_id": task})
    outputs = []
    for command in commands:
        after = env.step(ReplyAction.model_validate(bash(command)))
        assert not (after.done or after.truncated), after.info
        outputs.append(json.loads(after.observation)["messages"][-1]["content"])
    return outputs, env.step(ReplyAction.model_validate(bash(SUBMIT)))
