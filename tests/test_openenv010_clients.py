"""OpenEnv 0.10's own clients (run from its venv, see ``tests/openenv010``) on our task envs' servers:
``GenericEnvClient`` on Coding, CodingTools, Git and ReasoningGym, ``MCPToolClient`` in production
and simulation mode on the tool envs (the task's prompt at reset, the tools, a call that solves the
task paid once); MCP over the ``/mcp`` WebSocket against a stock 0.10 server's; and the stateless
``POST /step`` of an env that needs a reset, where 0.10 answers 500 and we the client's 409."""

from __future__ import annotations

import json

import pytest

from openenv_gym.providers import ProcessProvider
from tests.envs.coding_reference import SOLUTIONS
from tests.envs.git_cases import TAG, TASKS_BY_ID
from tests.envs.git_cases import TASKS as GIT_TASKS
from tests.openenv010 import peer_server, run_peer
from tests.server.test_http_api import request

CODING_TASK = "running-max"
REASONING_GENERATOR = "gcd"  # quick to make, and scored exactly
TAG_COMMAND = "git tag -a v1.0 -m 'Release 1.0'"


def coding_prompt(task_id: str) -> str:
    with open("envs/coding/tasks.jsonl", encoding="utf-8") as lines:
        return next(task["prompt"] for task in map(json.loads, lines) if task["task_id"] == task_id)


@pytest.fixture(scope="module")
def coding_url():
    with ProcessProvider("openenv/Coding-v0") as url:
        yield url


@pytest.fixture(scope="module")
def coding_tools_url():
    with ProcessProvider("openenv/CodingTools-v0") as url:
        yield url


@pytest.fixture(scope="module")
def git_url():
    with ProcessProvider("openenv_gym.envs.git:GitEnvironment", env_kwargs={"tasks": GIT_TASKS}) as url:
        yield url


@pytest.fixture(scope="module")
def reasoning():
    pytest.importorskip("reasoning_gym")  # the reasoning extra
    from openenv_gym.envs.reasoning import ReasoningGymEnvironment

    task = ReasoningGymEnvironment(generators=[REASONING_GENERATOR]).task_set.tasks[0]
    with ProcessProvider("openenv/ReasoningGym-v0", env_kwargs={"generators": [REASONING_GENERATOR]}) as url:
        yield url, task


def submit_code(code: str) -> dict:
    return {"type": "call_tool", "tool_name": "submit", "arguments": {"code": code}}


def test_generic_client_solves_a_coding_task_paid_once(coding_url):
    """Coding-v0: the task's prompt at reset, its reference solution paid 1 and the episode over; a
    second step is refused (the env's EPISODE_ENDED error, raised by 0.10's client)."""
    solution = {"code": SOLUTIONS[CODING_TASK]}
    seen = run_peer(
        "generic_episode.py", coding_url, json.dumps({"options": {"task_id": CODING_TASK}}), json.dumps([solution] * 2)
    )
    assert coding_prompt(CODING_TASK) in seen["reset"]["observation"]["prompt"]
    assert (seen["steps"][0]["reward"], seen["steps"][0]["done"]) == (1.0, True)
    assert seen["steps"][1]["raised"] == "RuntimeError" and "EPISODE_ENDED" in seen["steps"][1]["message"]
    assert seen["state"]["step_count"] == 1


def test_generic_client_answers_a_reasoning_gym_question_paid_once(reasoning):
    url, task = reasoning
    answer = {"answer": task.answer}
    seen = run_peer(
        "generic_episode.py", url, json.dumps({"options": {"task_id": task.task_id}}), json.dumps([answer] * 2)
    )
    assert task.question in json.dumps(seen["reset"]["observation"])
    assert (seen["steps"][0]["reward"], seen["steps"][0]["done"]) == (1.0, True)
    assert seen["steps"][1]["raised"] == "RuntimeError" and "EPISODE_ENDED" in seen["steps"][1]["message"]


@pytest.mark.parametrize("env", ["CodingTools", "Git"])
def test_generic_client_drives_a_tool_env_by_call_tool_actions(env, coding_tools_url, git_url):
    if env == "CodingTools":
        url, task_id, prompt = coding_tools_url, CODING_TASK, coding_prompt(CODING_TASK)
        actions = [submit_code(SOLUTIONS[CODING_TASK])] * 2
    else:
        url, task_id, prompt = git_url, TAG, TASKS_BY_ID[TAG]["prompt"]
        run = {"type": "call_tool", "tool_name": "run", "arguments": {"command": TAG_COMMAND}}
        submit = {"type": "call_tool", "tool_name": "submit", "arguments": {}}
        actions = [run, submit, submit]
    seen = run_peer("generic_episode.py", url, json.dumps({"options": {"task_id": task_id}}), json.dumps(actions))
    assert prompt in seen["reset"]["observation"]["prompt"]
    paid, refused = seen["steps"][-2], seen["steps"][-1]
    assert (paid["reward"], paid["done"]) == (1.0, True)
    assert all(not step["reward"] and step["done"] is False for step in seen["steps"][:-2])  # nothing paid before
    assert refused["raised"] == "RuntimeError" and "EPISODE_ENDED" in refused["message"]


TOOL_ENVS = {
    # env: (tools, the task, a call that tells whether the tools reach that task, the solving call)
    "CodingTools": (
        ["run_python", "run_tests", "submit"],
        CODING_TASK,
        ("run_tests", {"code": SOLUTIONS[CODING_TASK]}),
        ("submit", {"code": SOLUTIONS[CODING_TASK]}),
    ),
    "Git": (
        ["read_file", "run", "submit", "write_file"],
        TAG,
        ("run", {"command": TAG_COMMAND}),
        ("submit", {}),
    ),
}


@pytest.mark.parametrize("mode", ["production", "simulation"])
@pytest.mark.parametrize("env", ["CodingTools", "Git"])
def test_mcp_tool_client_solves_a_task_once_in_either_mode(env, mode, coding_tools_url, git_url):
    """Production mode resets over /ws?session_id= and calls tools over POST /mcp in that session:
    the tools work on the task the reset showed; simulation mode does it all over /ws, a tool call
    being a step with its reward. Either way the solving call is paid once: the next is refused."""
    tools, task_id, work, solve = TOOL_ENVS[env]
    url = coding_tools_url if env == "CodingTools" else git_url
    prompt = coding_prompt(CODING_TASK) if env == "CodingTools" else TASKS_BY_ID[TAG]["prompt"]
    how = "call_tool" if mode == "production" else "step"
    calls = [["call_tool", *work], [how, *solve], [how, *solve]]
    seen = run_peer("tool_session.py", url, mode, json.dumps({"options": {"task_id": task_id}}), json.dumps(calls))
    assert prompt in seen["reset"]["prompt"] and prompt in seen["reset"]["metadata"]["prompt"]
    assert seen["tools"] == tools
    worked, solved, again = seen["calls"]
    if env == "CodingTools":
        assert worked["result"]["passed"] == worked["result"]["total"] > 0  # the examples of the reset's task
    else:
        assert worked["result"]["exit_code"] == 0
    if mode == "simulation":
        assert (solved["reward"], solved["done"], solved["error"]) == (1.0, True, None)
        solved = solved["result"]["data"]
    else:  # production mode's calls carry no reward: the result says it, and the refusal after
        solved = solved["result"]
    assert solved["solved"] is True if env == "CodingTools" else solved["checks_passed"] == 3
    assert again["raised"] == "RuntimeError" and "ended" in again["message"]
    assert seen["state"]["step_count"] == 2  # the WebSocket's state counts the calls: one env


def test_mcp_over_the_websocket_answers_as_openenv_010s_server_does(coding_tools_url):
    """The same frames to a stock 0.10 MCPEnvironment's /mcp WebSocket and to our Echo's: the same
    tools, results, error codes and ids, each answer read by 0.10's JsonRpcResponse."""
    frames = [
        {"jsonrpc": "2.0", "method": "tools/list", "id": 1},
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "echo_with_length", "arguments": {"message": "Test"}},
            "id": 2,
        },
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "echo_message", "arguments": {"message": "héllo"}},
            "id": "three",
        },
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope", "arguments": {}}, "id": 4},
        {"jsonrpc": "2.0", "method": "foo/bar", "id": 5},
        {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 6},
    ]
    texts = json.dumps([json.dumps(frame) for frame in frames] + ["not json", "{}"])
    with peer_server("echo_mcp_server.py") as stock, ProcessProvider("openenv/Echo-v0") as echo:
        theirs, ours = run_peer("mcp_socket_session.py", stock, texts), run_peer("mcp_socket_session.py", echo, texts)
    assert (
        [answer["id"] for answer in ours] == [answer["id"] for answer in theirs] == [1, 2, "three", 4, 5, 6, None, None]
    )
    assert [answer.get("error", {}).get("code") for answer in ours] == [
        answer.get("error", {}).get("code") for answer in theirs
    ]
    for mine, stock_tool in zip(ours[0]["result"]["tools"], theirs[0]["result"]["tools"], strict=True):
        assert (mine["name"], mine["description"]) == (stock_tool["name"], stock_tool["description"])
        assert mine["inputSchema"]["properties"] == stock_tool["inputSchema"]["properties"]
    for index in (1, 2):
        for key in ("content", "structured_content", "data", "is_error"):
            assert ours[index]["result"][key] == theirs[index]["result"][key], (index, key)
    assert ours[5]["result"]["session_id"] and theirs[5]["result"]["session_id"]
    # A task env's socket is reset when it opens: create shows the task, and its tools run.
    task_frames = [
        {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 1},
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "run_python", "arguments": {"code": "print(6 * 7)"}},
            "id": 2,
        },
    ]
    created, ran = run_peer("mcp_socket_session.py", coding_tools_url, json.dumps([json.dumps(f) for f in task_frames]))
    assert "Write this function" in created["result"]["observation"]["prompt"]
    assert ran["result"]["data"]["stdout"] == "42\n"


def test_a_stateless_step_an_env_refuses_before_reset_is_the_clients_409(coding_url, coding_tools_url):
    """0.10's server answers such a step 500 (text/plain, nothing said); ours 409 with what to do."""
    headers = {"Content-Type": "application/json"}
    with peer_server("reset_first_server.py") as stock:
        status, found, body = request(stock, "POST", "/step", json.dumps({"action": {"amount": 1}}), headers)
    assert (status, found["content-type"], body) == (500, "text/plain; charset=utf-8", "Internal Server Error")
    for url, action in [
        (coding_url, {"code": "print(1)"}),
        (coding_tools_url, submit_code("print(1)")),
    ]:
        status, _, body = request(url, "POST", "/step", json.dumps({"action": action}), headers)
        assert (status, body["detail"]) == (409, "Conflict"), body
        assert "play an episode on a WebSocket session (/ws)" in body["message"]


def test_a_stateless_reset_whose_arguments_the_env_refuses_is_the_clients_400(coding_url):
    """An unknown task_id, options that are no object: 0.10's server answers 500 (its env raised);
    ours 400 with the env's reason."""
    headers = {"Content-Type": "application/json"}
    unknown = json.dumps({"options": {"task_id": "nope"}})
    with peer_server("reset_first_server.py") as stock:
        assert request(stock, "POST", "/reset", unknown, headers)[0] == 500
    for body, reason in [(unknown, "ValueError: unknown task_id 'nope'"), (json.dumps({"options": 5}), "TypeError")]:
        status, _, answer = request(coding_url, "POST", "/reset", body, headers)
        assert (status, answer["detail"]) == (400, "Bad Request"), answer
        assert answer["message"].startswith(f"reset refused: {reason}")
