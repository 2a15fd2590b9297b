"""Every shipped Git task proves itself through the real env and sandbox: its solution scores 1, nothing scores 0,
its near miss scores below 1.

One env serves every task (a reset by ``task_id`` builds each episode's repository in a fresh
sandbox); tool calls go through each tool's own argument validation, as a server's would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_gym.envs.git import GitEnvironment, load_tasks
from openenv_gym.envs.git.tasks import GitTask, ToolCall
from openenv_gym.server.tools import ToolResult
from tests.envs.git_cases import TASKS_BY_ID
from tests.envs.git_task_runner import run_task
from tests.envs.test_git_task_data import CORNERS_CUT
from tests.hf_cache import seed_hf_cache
from tests.utils import REPO_ROOT

TASKS = load_tasks()


@pytest.fixture(scope="module")
def env() -> Iterator[GitEnvironment]:
    env = GitEnvironment()
    yield env
    env.close()


def call(env: GitEnvironment, tool_call: ToolCall) -> ToolResult:
    """A tool call as the server makes it: its arguments validated by the tool's schema, then the method."""
    chosen = type(env).tools[tool_call.tool]
    returned = chosen.method(env, **chosen.validate(tool_call.arguments))
    return returned if isinstance(returned, ToolResult) else ToolResult(returned)


def episode(env: GitEnvironment, task: GitTask, calls: list[ToolCall]) -> tuple[ToolResult, list[ToolResult]]:
    """Reset to ``task``, make ``calls`` up to a submit, then submit: the submit's result, and the calls'."""
    env.reset(options={"task_id": task.task_id})
    results = []
    for tool_call in calls:
        if tool_call.tool == "submit":
            break
        results.append(call(env, tool_call))
        assert not results[-1].truncated, f"{task.task_id}: the calls run out of turns before the submit"
    submitted = call(env, ToolCall(tool="submit"))
    assert submitted.done and submitted.reward is not None
    return submitted, results


def failed_checks(env: GitEnvironment) -> dict[str, Any]:
    """Each failing check's name and the end of its output (which the server keeps), for the assertion message."""
    verdict = env.last_verdict
    assert verdict is not None
    return {
        name: output[-300:]
        for name, passed, output in zip(verdict.names, verdict.passed, verdict.outputs)
        if not passed
    }


def test_the_shipped_task_set_loads():
    """The file validates (one task per line, ids unique) and has a task of each difficulty."""
    assert TASKS and {task.difficulty for task in TASKS} == {"easy", "medium", "hard"}


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.task_id)
def test_every_task_is_solved_by_its_solution_failed_when_untouched_and_not_solved_by_its_near_miss(env, task):
    """Three episodes: the solution (its file calls without an error) scores 1, no call 0, the near miss below 1."""
    solved, results = episode(env, task, task.solution)
    assert solved.reward == 1.0, failed_checks(env)
    file_calls = [result for tool_call, result in zip(task.solution, results) if tool_call.tool != "run"]
    assert not any(result.is_error for result in file_calls), [result.value for result in file_calls]
    untouched, _ = episode(env, task, [])
    assert env.last_verdict is not None
    passing = [name for name, passed in zip(env.last_verdict.names, env.last_verdict.passed) if passed]
    assert untouched.reward == 0.0, f"checks that pass on the repository as the setup leaves it: {passing}"
    near, _ = episode(env, task, task.near_miss)
    assert near.reward is not None and near.reward < 1.0, "the near miss passes every check"


def test_git_tasks_load_from_a_file_and_from_a_hugging_face_dataset_offline(tmp_path):
    """A JSONL path and ``hf://datasets/...`` (read from the Hugging Face cache, offline) give the same tasks."""
    row = {**TASKS_BY_ID["tag-the-release"], "task_id": "from-hub"}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert [task.task_id for task in load_tasks(path)] == ["from-hub"]
    commit = "0123456789abcdef0123456789abcdef01234567"
    seed_hf_cache(
        tmp_path / "hf", "dataset", "org/git-tasks", {commit: {"data/tasks.jsonl": path.read_text()}}, main=commit
    )
    script = (
        "from openenv_gym.envs.git import GitEnvironment\n"
        "print([task.task_id for task in GitEnvironment(tasks='hf://datasets/org/git-tasks/data/tasks.jsonl').task_set])\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "['from-hub']", done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checks": []}, "tasks.jsonl line 1: checks: List should have at least 1 item"),
        ({"solution": [{"tool": "shell", "arguments": {}}]}, "tasks.jsonl line 1: solution.0.tool: Input should be"),
        ({"max_turns": 0}, "tasks.jsonl line 1: max_turns: Input should be greater than or equal to 1"),
        ({"near_miss": None}, "tasks.jsonl line 1: near_miss: Input should be a valid list"),
        ({"setup": ""}, "tasks.jsonl line 1: setup: String should have at least 1 character"),
        ({"hint": "x"}, "tasks.jsonl line 1: hint: Extra inputs are not permitted"),
    ],
)
def test_a_bad_task_file_names_the_line_and_the_field(tmp_path, change, message):
    """A task that breaks the format is refused with its line and the field at fault."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({**TASKS_BY_ID["tag-the-release"], **change}) + "\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_tasks(path)


@pytest.mark.parametrize(
    "case",
    ["solution", "near_miss", *sorted(key for key in CORNERS_CUT if key.startswith("gitignore-build-artifacts"))],
)
def test_the_gitignore_task_scores_the_same_in_the_env_as_in_the_local_runner(env, case):
    """The committed .gitignore is judged alone: info/exclude, core.excludesFile, hidden untracked files count for nothing."""
    task = next(task for task in TASKS if task.task_id == "gitignore-build-artifacts")
    calls = getattr(task, case) if case in ("solution", "near_miss") else CORNERS_CUT[case]
    local = run_task(task.model_dump(), [ToolCall.model_validate(item).model_dump() for item in calls]).score
    submitted, _ = episode(env, task, [ToolCall.model_validate(item) for item in calls])
    assert submitted.reward == local, failed_checks(task, submitted)
    assert local == 1.0 if case == "solution" else local < 1.0
