"""openenv/CodingTools-v0 over a real server: a scripted agent's tool calls, the example tests, the
hostile programs of Coding-v0 through ``run_python``, the per-call time limits and the turn limit.

Every call goes through an in-process :class:`~openenv_gym.server.EnvServer` and a real client,
with real sandboxes; the tool results are read as the client receives them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.envs.coding import CodingToolsEnvironment, load_tasks
from openenv_gym.envs.coding.environment import MAX_CODE_LENGTH
from openenv_gym.protocol import ObservationFrame
from openenv_gym.providers import ProcessProvider
from openenv_gym.server import EnvServer
from tests.envs.coding_reference import SOLUTIONS
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
from tests.utils import UNIT, running_server, sandbox_pids, wait_until

WRONG = "def digit_square_sum(n):\n    return n\n"  # passes 1 of the 7 hidden tests (n = 0)
LEAP = "is-leap-year"  # its prompt shows two examples: 2000 (a leap year) and 1900 (not one)
TOOLS = ["run_python", "run_tests", "submit"]


def make_env(**kwargs: Any) -> CodingToolsEnvironment:
    return CodingToolsEnvironment(limits={"wall_time": WALL_TIME}, **kwargs)


@pytest.fixture(scope="module")
def server() -> Iterator[EnvServer]:
    with running_server(make_env, max_sessions=4) as server:
        yield server


@pytest.fixture
def client(server: EnvServer) -> Iterator[EnvClient]:
    client = EnvClient(server.url).connect()
    yield client
    client.close()


def call(client: EnvClient, name: str, timeout_s: float | None = None, **arguments: Any) -> ObservationFrame:
    """One tool call as a step action (OpenEnv's ``call_tool``)."""
    action: dict[str, Any] = {"type": "call_tool", "tool_name": name, "arguments": arguments}
    if timeout_s is not None:
        action["timeout_s"] = timeout_s
    return client.step(action)


def result(frame: ObservationFrame) -> dict[str, Any]:
    """The structured result of a call that succeeded; its text is the same data as JSON."""
    observation = frame.observation
    assert observation["error"] is None, observation["error"]
    content = observation["result"]
    assert content["is_error"] is False
    assert json.loads(content["content"][0]["text"]) == content["structured_content"] == content["data"]
    return content["structured_content"]


# --- the tools, listed and called --------------------------------------------------------------


def test_list_tools_shows_the_three_tools_with_descriptions_and_schemas(client):
    client.reset(options={"task_id": TASK})
    tools = client.step({"type": "list_tools"}).observation["tools"]
    assert [tool["name"] for tool in tools] == TOOLS
    descriptions = {tool["name"]: " ".join(tool["description"].split()) for tool in tools}
    assert descriptions["run_python"].startswith("Run a Python program in a sandbox and return its stdout")
    assert descriptions["run_tests"].startswith("Run the program, then call its function on the task's examples")
    assert descriptions["submit"].startswith("Submit the program: its function is scored on the task's hidden tests")
    assert "does not end the episode" in descriptions["submit"]
    for tool in tools:
        schema = tool["input_schema"]
        code = schema["properties"]["code"]
        assert code.pop("description").startswith("the whole program")
        assert schema == {
            "type": "object",
            "additionalProperties": False,
            "properties": {"code": {"type": "string", "maxLength": MAX_CODE_LENGTH}},
            "required": ["code"],
        }


def test_the_reset_observation_carries_the_prompt(client):
    """The prompt: the task, the function to write, the three tools and the turn limit; a seed picks the same task."""
    first = client.reset(options={"task_id": TASK})
    prompt = first.observation["prompt"]
    assert prompt.startswith("Write a function that returns the sum of the squares of the decimal digits")
    assert "Write this function:\ndef digit_square_sum(n: int) -> int:\n\nUse the tools." in prompt
    assert all(f"{name}(code)" in prompt for name in TOOLS) and prompt.endswith("You have 16 tool calls.")
    assert first.info == {"task_id": TASK, "difficulty": "easy"}
    assert (first.reward, first.done, first.truncated) == (0.0, False, False)
    seeded = [client.reset(seed=5).observation["prompt"] for _ in range(2)]
    assert seeded[0] == seeded[1]
    assert len({client.reset(seed=seed).info["task_id"] for seed in range(8)}) > 2


def test_a_scripted_agent_runs_code_then_the_examples_then_submits_a_solution(client):
    client.reset(options={"task_id": TASK})
    ran = call(client, "run_python", code=SOLUTION + "print(digit_square_sum(123))\nimport sys\nsys.exit(3)\n")
    assert result(ran) == {"stdout": "14\n", "stderr": "", "exit_code": 3, "timed_out": False}
    assert (ran.reward, ran.done, ran.truncated) == (None, False, False)
    tested = call(client, "run_tests", code=SOLUTION)
    assert result(tested)["examples"] == [
        {"call": "digit_square_sum(123)", "expected": "14", "got": "14", "passed": True}
    ]
    assert (result(tested)["passed"], result(tested)["total"]) == (1, 1)
    assert (tested.reward, tested.done) == (None, False)
    submitted = call(client, "submit", code=SOLUTION)
    report = result(submitted)
    assert (report["tests_passed"], report["tests_total"], report["solved"]) == (7, 7, True)
    assert report["feedback"] == "All 7 tests passed."
    assert (submitted.reward, submitted.done, submitted.truncated) == (1.0, True, False)
    # how many passed, never which; the reward part also where OpenEnv clients read it
    assert submitted.metadata == {"task_id": TASK, "reward_components": {"tests": 1.0}}
    assert client.state()["step_count"] == 3 and client.state()["best_fraction"] == 1.0


def test_a_wrong_submission_is_told_its_count_and_the_episode_goes_on(client):
    """By default only a solution pays: the wrong submission earns 0 and learns how many tests it passed."""
    client.reset(options={"task_id": TASK})
    wrong = call(client, "submit", code=WRONG)
    report = result(wrong)
    assert (report["tests_passed"], report["tests_total"], report["solved"]) == (1, 7, False)
    assert wrong.reward == 0.0 and (wrong.done, wrong.truncated) == (False, False)
    assert report["feedback"] == "1 of 7 tests passed.\nExample digit_square_sum(123) failed: expected 14, got 123."
    right = call(client, "submit", code=SOLUTION)
    assert (right.reward, right.done) == (1.0, True)


def test_run_tests_reports_each_example_and_keeps_the_hidden_tests_hidden(client):
    client.reset(options={"task_id": LEAP})
    half = call(client, "run_tests", code="def is_leap_year(year):\n    return year % 4 == 0\n")
    report = result(half)
    assert report["examples"] == [
        {"call": "is_leap_year(2000)", "expected": "True", "got": "True", "passed": True},
        {"call": "is_leap_year(1900)", "expected": "False", "got": "True", "passed": False},
    ]
    assert (report["passed"], report["total"]) == (1, 2) and half.reward is None
    assert report["feedback"] == "1 of 2 tests passed.\nExample is_leap_year(1900) failed: expected False, got True."
    raising = result(call(client, "run_tests", code="def is_leap_year(year):\n    return 1 / 0\n"))
    assert [example["got"] for example in raising["examples"]] == ["raised ZeroDivisionError: division by zero"] * 2
    assert raising["feedback"].endswith("ZeroDivisionError: division by zero")
    assert 'File "<solution>", line 2, in is_leap_year' in raising["feedback"]
    missing = result(call(client, "run_tests", code="def leap(year):\n    return True\n"))
    assert missing["passed"] == 0 and missing["feedback"].startswith("The program defines no function `is_leap_year`")
    # The other tests of the task (years the prompt does not name) never appear.
    task = next(task for task in load_tasks() if task.task_id == LEAP)
    hidden = [test.args[0] for index, test in enumerate(task.tests) if index not in task.visible_tests]
    text = json.dumps([half.observation, raising, missing])
    assert hidden and not any(f"is_leap_year({year})" in text for year in hidden)
    assert not any(re.search(rf"\b{year}\b", text) for year in hidden if year >= 100)  # 0 and 4 are everywhere


def test_a_plain_step_is_refused_with_the_tools_to_call(client):
    client.reset(options={"task_id": TASK})
    with pytest.raises(openenv_gym.RemoteError, match="driven by its tools") as refused:
        client.step({"code": SOLUTION})
    assert refused.value.code == "VALIDATION_ERROR"
    assert (call(client, "submit", code=SOLUTION).reward, client.state()["step_count"]) == (1.0, 1)


def test_a_call_with_bad_arguments_is_an_invalid_args_error(client):
    client.reset(options={"task_id": TASK})
    frame = call(client, "run_python", source="print(1)")
    assert frame.observation["error"]["error_type"] == "invalid_args"
    too_long = call(client, "submit", code="#" * (MAX_CODE_LENGTH + 1))
    assert too_long.observation["error"]["error_type"] == "invalid_args" and too_long.reward is None


def test_reference_solutions_pass_their_examples(client):
    """For a few tasks of each difficulty, the reference passes run_tests: the examples are the tasks' own tests."""
    for task_id in ("is-leap-year", "weekday-after", "glob-match", "cheapest-route", "sudoku-valid"):
        client.reset(options={"task_id": task_id})
        report = result(call(client, "run_tests", code=SOLUTIONS[task_id]))
        assert report["passed"] == report["total"] >= 1, (task_id, report)


# --- the episode: turn limit, reward modes, options ------------------------------------------


def test_every_tool_call_is_a_turn_and_the_last_one_truncates():
    with running_server(functools.partial(make_env, max_episode_steps=3)) as server:
        with EnvClient(server.url) as client:
            prompt = client.reset(options={"task_id": TASK}).observation["prompt"]
            assert prompt.endswith("You have 3 tool calls.")
            flags = [
                (frame.done, frame.truncated)
                for frame in (
                    call(client, "run_python", code="print(1)"),
                    call(client, "submit", code=WRONG),
                    call(client, "run_tests", code=WRONG),
                )
            ]
            assert flags == [(False, False), (False, False), (False, True)]
            client.reset(options={"task_id": TASK})
            call(client, "run_python", code="print(1)")
            call(client, "run_tests", code=WRONG)
            solved = call(client, "submit", code=SOLUTION)
            assert (solved.reward, solved.done, solved.truncated) == (1.0, True, False)  # solved, not cut short


@pytest.mark.parametrize(
    ("mode", "rewards"), [("fraction", [1 / 7, 6 / 7]), ("binary", [0.0, 1.0]), ("improvement", [1 / 7, 6 / 7])]
)
def test_the_reward_option_is_coding_v0s(mode, rewards):
    with running_server(functools.partial(make_env, reward=mode)) as server:
        with EnvClient(server.url) as client:
            client.reset(options={"task_id": TASK})
            got = [call(client, "submit", code=code).reward for code in (WRONG, SOLUTION)]
    assert got == pytest.approx(rewards)


def test_unknown_options_are_refused_as_coding_v0_refuses_them(client):
    with pytest.raises(openenv_gym.RemoteError, match=re.escape("unknown task_id 'digit-square-sums': ")) as unknown:
        client.reset(options={"task_id": "digit-square-sums"})
    assert "'digit-square-sum'" not in str(unknown.value)
    with pytest.raises(openenv_gym.RemoteError, match=re.escape("unknown reset options ['level']")):
        client.reset(options={"level": 1})


def test_a_task_whose_prompt_shows_no_example_says_so_in_run_tests():
    hidden_only = {
        "task_id": "hidden",
        "difficulty": "easy",
        "prompt": "Return the number of digits of n.",
        "signature": "def digits(n: int) -> int:",
        "entry_point": "digits",
        "tests": [{"args": [7], "expected": 1}],
    }
    with running_server(functools.partial(make_env, tasks=[hidden_only])) as server:
        with EnvClient(server.url) as client:
            client.reset()
            frame = call(client, "run_tests", code="def digits(n):\n    return 1\n")
            assert frame.observation["result"]["is_error"] is True
            assert "shows no example call" in frame.observation["result"]["content"][0]["text"]
            assert call(client, "submit", code="def digits(n):\n    return 1\n").reward == 1.0


def test_the_constructor_refuses_a_call_limit_within_the_sandboxs():
    with pytest.raises(
        ValueError, match=re.escape("tool_timeout_s (5 s) must be more than the sandbox's wall_time (10 s)")
    ):
        CodingToolsEnvironment(tool_timeout_s=5)
    with pytest.raises(ValueError, match=re.escape("unknown reward 'binry'. Did you mean: 'binary'?")):
        CodingToolsEnvironment(reward="binry")  # type: ignore[arg-type]


def test_the_catalog_entry_serves_the_env_in_a_server_process_of_its_own():
    """The registered id: its turn limit, no Gymnasium spaces (the tool face makes its own), and a server
    process started from its server string that answers tool calls."""
    spec = gym.spec("openenv/CodingTools-v0")
    assert (spec.max_episode_steps, spec.reward_threshold) == (16, 1.0)
    assert spec.kwargs["server"] == "openenv_gym.envs.coding_tools:CodingToolsEnvironment"
    assert CodingToolsEnvironment.space_descriptions is None and CodingToolsEnvironment.action_space is None
    with ProcessProvider(spec.kwargs["server"], env_kwargs={"limits": {"wall_time": WALL_TIME}}) as url:
        assert "spaces" not in http_get_json(url, "/schema", timeout=10 * UNIT)
        with EnvClient(url) as client:
            client.reset(options={"task_id": TASK})
            assert call(client, "submit", code=SOLUTION).reward == 1.0


# --- time limits -------------------------------------------------------------------------------

LOOP = "while True:\n    pass\n"


@pytest.mark.slow
@pytest.mark.serial  # counts every sandbox process on the machine
def test_a_call_past_its_time_limit_is_a_timeout_error_and_the_session_lives_on():
    """A call's own limit, then the env's (tool_timeout_s): each overrun is a ``timeout`` error.

    The overrun run goes on until the sandbox's wall-clock limit kills it, and the next call
    waits for it: so the second loop, queued behind the first, overruns the env's limit too.
    """
    before = sandbox_pids()
    factory = functools.partial(make_env, tool_timeout_s=WALL_TIME + 0.5 * UNIT)
    with running_server(factory) as server, EnvClient(server.url) as client:
        client.reset(options={"task_id": TASK})
        sandboxes = sandbox_pids() - before
        first = call(client, "run_python", timeout_s=0.2 * UNIT, code=LOOP)
        assert first.observation["result"] is None and (first.reward, first.done) == (None, False)
        assert first.observation["error"] == {
            "error_type": "timeout",
            "message": f"tool 'run_python' did not return within {0.2 * UNIT:g} s",
        }
        second = call(client, "submit", code=LOOP)  # the env's limit
        assert second.observation["error"]["error_type"] == "timeout", second.observation
        assert second.observation["error"]["message"].endswith(f"within {WALL_TIME + 0.5 * UNIT:g} s")
        assert second.reward is None
        alive = call(client, "run_python", timeout_s=4 * WALL_TIME, code="print('alive')")
        assert result(alive)["stdout"] == "alive\n", result(alive)
        assert (call(client, "submit", code=SOLUTION).reward, client.state()["step_count"]) == (1.0, 4)
        assert_runs_cleaned_up(lambda: sandbox_pids() - before, sandboxes)


@pytest.mark.slow
def test_a_run_killed_by_the_sandbox_within_the_call_limit_is_a_result(client):
    """The default call limit is above the sandbox's: a run that loops is killed there, and says so."""
    client.reset(options={"task_id": TASK})
    killed = result(call(client, "run_python", code="print('started', flush=True)\n" + LOOP))
    assert killed["timed_out"] is True and killed["exit_code"] == -9 and killed["stdout"] == "started\n"
    assert killed["stderr"].endswith(f"wall-clock limit of {WALL_TIME:g} s")


# --- hostile code through run_python -----------------------------------------------------------


@dataclasses.dataclass
class Hostile:
    """A server of its own, one session on the hostile-case task, and its sandbox's processes."""

    client: EnvClient
    port: int
    sandboxes: set[int]
    before: set[int]


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    before = sandbox_pids()
    with running_server(make_env) as server, EnvClient(server.url) as client:
        client.reset(options={"task_id": TASK})
        sandboxes = sandbox_pids() - before
        assert len(sandboxes) == PROCESSES_PER_SESSION, sandboxes
        port = urllib.parse.urlsplit(server.url).port
        assert port is not None
        yield Hostile(client, port, sandboxes, before)
    assert wait_until(lambda: not (sandbox_pids() - before), 10 * UNIT), "the session's sandbox outlived the server"


@pytest.mark.serial  # counts every sandbox process on the machine
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_code_through_run_python_is_contained_and_the_session_lives_on(hostile, name):
    case = HOSTILE[name]
    frame = run_case(case, hostile.port, lambda code: call(hostile.client, "run_python", code=code))
    output = result(frame)
    assert_contained(case, output["stdout"], output["stderr"], output["exit_code"], output["timed_out"])
    assert (frame.reward, frame.done, frame.truncated) == (None, False, False)
    assert_runs_cleaned_up(lambda: sandbox_pids() - hostile.before, hostile.sandboxes)
    # The same session goes on: the task is solved in the same sandbox, and a fresh episode begins.
    solved = call(hostile.client, "submit", code=SOLUTION)
    assert (solved.reward, solved.done) == (1.0, True), solved.observation
    hostile.client.reset(options={"task_id": TASK})
    assert not run_processes()
    assert_runs_cleaned_up(lambda: sandbox_pids() - hostile.before, hostile.sandboxes)


# Through gym.make: the tool face --------------------------------------------------------------


@pytest.fixture(scope="module")
def gym_env() -> Iterator[gym.Env]:
    env = gym.make("openenv/CodingTools-v0")
    yield env
    env.close()


def test_a_scripted_agent_solves_a_task_through_gym_make(gym_env):
    """run_python, then run_tests, then submit: text calls in, result text out, reward and terminated."""
    prompt, info = gym_env.reset(options={"task_id": TASK})
    assert "def digit_square_sum(n: int) -> int:" in prompt and "You have 16 tool calls." in prompt
    assert [tool["function"]["name"] for tool in info["tools"]] == TOOLS
    ran = gym_env.step(json.dumps({"name": "run_python", "arguments": {"code": "print(6 * 7)"}}))
    assert json.loads(ran[0])["stdout"] == "42\n" and ran[1:4] == (0.0, False, False)
    tested, reward, terminated, _, _ = gym_env.step({"name": "run_tests", "arguments": {"code": SOLUTION}})
    report = json.loads(tested)
    assert report["examples"] == [{"call": "digit_square_sum(123)", "expected": "14", "got": "14", "passed": True}]
    assert (reward, terminated) == (0.0, False)
    wrong, reward, terminated, truncated, _ = gym_env.step({"name": "submit", "arguments": {"code": WRONG}})
    assert json.loads(wrong)["tests_passed"] == 1 and reward == 0.0  # only a solution pays, by default
    assert (terminated, truncated) == (False, False)
    solved, reward, terminated, truncated, info = gym_env.step({"name": "submit", "arguments": {"code": SOLUTION}})
    assert json.loads(solved)["solved"] is True and (terminated, truncated) == (True, False)
    assert reward == 1.0
    assert info["tool_name"] == "submit" and "error" not in info


def test_the_model_sees_its_mistakes_through_gym_make(gym_env):
    gym_env.reset(options={"task_id": TASK})
    text, reward, terminated, _, info = gym_env.step('{"name": "run_python", "arguments": {"program": "1"}}')
    assert info["error"]["error_type"] == "invalid_args" and "code: Field required" in text
    assert (reward, terminated) == (0.0, False)
    text, *_, info = gym_env.step("```python\nprint(1)\n```")
    assert info["error"]["error_type"] == "invalid_tool_call" and text.startswith("Error: ")


def test_check_env_passes_on_coding_tools(gym_env):
    from gymnasium.utils.env_checker import check_env

    check_env(gym_env.unwrapped)
