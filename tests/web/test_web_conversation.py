"""The web page shows a model-call env's episode (openenv/Harness-v0) as the conversation: each call's
new messages, the policy's reply with its tool calls and their arguments, the tool output, and the
episode's end with its reward.

The agent is a small one on the standard library (a system and a user message, a ``shell`` tool it
runs in its workspace), so the test waits on no real harness's start-up.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import pytest

from openenv_gym.client import EnvClient
from openenv_gym.envs.harness import AGENTS, SOLUTION_FILE, AgentLaunch, HarnessEnvironment
from tests.envs.coding_reference import SOLUTIONS
from tests.tool_envs import ToolboxEnvironment
from tests.utils import UNIT, running_server

TASK = "clamp-values"

# A minimal agent: it asks its model with a shell tool, runs each tool call in its workspace and sends
# the output back as the tool's message, until a reply holds no tool call.
SHELL_AGENT = """
import json, os, subprocess, sys, urllib.request
tool = {"type": "function", "function": {"name": "shell", "description": "run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}
messages = [{"role": "system", "content": "You solve tasks with the shell tool."}, {"role": "user", "content": sys.argv[1]}]
while True:
    body = json.dumps({"model": "m", "messages": messages, "tools": [tool]}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"content-type": "application/json"})
    message = json.load(urllib.request.urlopen(request))["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        break
    for call in message["tool_calls"]:
        command = json.loads(call["function"]["arguments"])["command"]
        ran = subprocess.run(command, shell=True, capture_output=True, text=True)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": ran.stdout + ran.stderr})
"""


@pytest.fixture
def shell_agent(monkeypatch: pytest.MonkeyPatch) -> str:
    launch = AgentLaunch("web-shell", lambda prompt, home, base_url: [sys.executable, "-c", SHELL_AGENT, prompt])
    monkeypatch.setitem(AGENTS, "web-shell", launch)
    return "web-shell"


LIMITS: dict[str, Any] = {"time_limit_s": 300 * UNIT, "reply_timeout_s": 300 * UNIT}
COMMAND = f"printf %s {shlex.quote(SOLUTIONS[TASK])} > {SOLUTION_FILE} && echo wrote {SOLUTION_FILE}"
# The scripted policy: write the solution through the agent's shell tool, then stop.
REPLIES = [
    {
        "content": "I write the solution.",
        "tool_calls": [{"function": {"name": "shell", "arguments": {"command": COMMAND}}}],
    },
    {"content": "Done: the file is written."},
]


def turns(page: Any) -> list[dict[str, str]]:
    return page.script(
        "return [...document.querySelectorAll('#conversation li.turn')].map(li => ({role: li.dataset.role, text: li.innerText}))"
    )


def test_a_harness_episode_shows_as_the_conversation_with_its_reward(page, shell_agent):
    """A scripted policy, typed into the page's Text action, writes the solution through the agent's
    shell tool and then stops: the page shows the system and user messages, the reply's tool call with
    its arguments, the tool's output, the last reply, and the episode's end paid 1."""
    with running_server(lambda: HarnessEnvironment(agent=shell_agent, agent_sandbox="none", **LIMITS)) as server:
        page.open(server)
        assert not page.find("#conversation-panel").get_attribute("hidden")
        page.find("#reset-options").send_keys(json.dumps({"task_id": TASK}))
        page.click("reset")
        page.wait(lambda: len(turns(page)) == 2, "the first call's messages", timeout=60)
        system, user = turns(page)
        assert system == {"role": "system", "text": "SYSTEM\nYou solve tasks with the shell tool."}
        assert user["role"] == "user" and SOLUTION_FILE in user["text"]
        assert page.find("#conversation li.hint").text == "tools: shell"
        for count, reply in zip((4, 6), REPLIES):
            page.find("#text-action").send_keys(json.dumps(reply))
            page.click("step")
            page.wait(lambda count=count: len(turns(page)) == count, f"{count} turns", timeout=60)
            page.find("#text-action").clear()
        assert_conversation(page)
    page.assert_clean()


def assert_conversation(page: Any) -> None:
    roles = [turn["role"] for turn in turns(page)]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "end"]
    call = page.find("#conversation li[data-role='assistant'] .tool-call[data-tool='shell'] pre").text
    assert json.loads(call) == {"command": COMMAND}
    assert turns(page)[3]["text"].strip().endswith(f"wrote {SOLUTION_FILE}")
    assert "Done: the file is written." in turns(page)[4]["text"]
    end = turns(page)[5]["text"]
    assert "episode terminated (agent_exited)" in end.lower() and end.endswith("reward 1")


def test_watch_mode_shows_a_client_s_harness_episode_as_the_conversation(page, shell_agent):
    """The page watches a client's Harness-v0 session: the same conversation, each reply as the client sent it."""
    with running_server(lambda: HarnessEnvironment(agent=shell_agent, agent_sandbox="none", **LIMITS)) as server:
        client = EnvClient(server.url)
        client.connect()
        try:
            page.open(server)
            page.find("#sessions-panel > summary").click()
            rows = page.wait(
                lambda: [row for row in page.find_all("#sessions-list tr") if "(web)" not in row.text],
                "the client's session in the list",
            )
            page.click(f"watch-{rows[0].get_attribute('data-session')}")
            page.wait(lambda: "watch=" in page.driver.current_url, "the watch page")
            page.wait(lambda: page.state() == "connected", "the watch socket")
            assert not page.find("#conversation-panel").get_attribute("hidden")
            client.reset(options={"task_id": TASK})
            page.wait(lambda: len(turns(page)) == 2, "the first call's messages", timeout=60)
            for count, reply in zip((4, 6), REPLIES):
                client.step({"action": json.dumps(reply)})
                page.wait(lambda count=count: len(turns(page)) == count, f"{count} turns", timeout=60)
            assert_conversation(page)
        finally:
            client.close()
    page.assert_clean()


def test_an_env_without_model_calls_shows_no_conversation(page):
    """A tool env's observation is no model call: the panel stays hidden."""
    with running_server(ToolboxEnvironment) as server:
        page.open(server)
        assert page.find("#conversation-panel").get_attribute("hidden") is not None
    page.assert_clean()
