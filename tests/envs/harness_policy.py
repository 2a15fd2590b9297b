"""What the tests driving openenv/Harness-v0 share: the scripted policy's replies to mini-swe-agent (its
bash tool's calls), its way to finish, and an episode played from a list of replies; a minimal
tool-calling agent, and a scripted model API (the operator's model of a ``/harness`` turn)."""

from __future__ import annotations

import json
import shlex
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium as gym

from openenv_gym.envs.harness import SOLUTION_FILE, AgentLaunch, HarnessEnvironment, ReplyAction
from tests.utils import UNIT

__all__ = [
    "LIMITS",
    "ONE_TOOL_TURN",
    "SUBMIT",
    "TOOL_AGENT",
    "ScriptedModelApi",
    "bash",
    "finish",
    "play",
    "tool_agent",
    "write",
]

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


# A minimal tool-calling agent (the standard library's HTTP client), quicker to start than a real one:
# it asks its model with a "bash" tool, runs each call in its working directory and sends the output
# back, and exits with the first reply that calls no tool.
TOOL_AGENT = """
import json, os, subprocess, sys, urllib.request
tools = [{"type": "function", "function": {"name": "bash", "description": "run a shell command",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
messages = [{"role": "user", "content": sys.argv[1]}]
while True:
    body = json.dumps({"model": "agent-default", "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                     {"content-type": "application/json"})
    message = json.load(urllib.request.urlopen(request))["choices"][0]["message"]
    messages.append({key: value for key, value in message.items() if key in ("role", "content", "tool_calls")})
    if not message.get("tool_calls"):
        print(message["content"])
        break
    for call in message["tool_calls"]:
        command = json.loads(call["function"]["arguments"])["command"]
        done = subprocess.run(command, shell=True, capture_output=True, text=True)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": done.stdout + done.stderr})
"""


#: The events of a /harness turn whose agent calls one tool, then answers.
ONE_TOOL_TURN = [
    "llm_request",
    "llm_response",
    "tool_call",
    "tool_result",
    "llm_request",
    "llm_response",
    "turn_complete",
]


def tool_agent() -> AgentLaunch:
    """:data:`TOOL_AGENT` as an agent (register it in ``AGENTS`` to name it)."""
    return AgentLaunch("tool-agent", lambda prompt, home, base_url: [sys.executable, "-c", TOOL_AGENT, prompt])


class ScriptedModelApi:
    """A chat completions API on loopback (``url``: its ``/v1`` base) that answers each request with
    the next of :attr:`replies` (assistant messages), or a 500 once they run out; every request's body
    is kept in :attr:`requests`, its ``Authorization`` header in :attr:`authorizations`."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []  # each request's Authorization header
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                api.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                api.authorizations.append(self.headers.get("Authorization"))
                if not api.replies:
                    self._send(500, {"error": {"message": "no reply scripted"}})
                    return
                message = {"role": "assistant", "content": None, **api.replies.pop(0)}
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                choice = {"index": 0, "message": message, "finish_reason": finish}
                usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "scripted",
                        "choices": [choice],
                        "usage": usage,
                    },
                )

            def _send(self, status: int, value: dict[str, Any]) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
