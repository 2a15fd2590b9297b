"""The task set of openenv/Git-v0 (envs/git/tasks.jsonl): well-formed, deterministic, and scored right.

Every task runs through the local runner of :mod:`tests.envs.git_task_runner`: its reference solution
scores 1, submitting at once scores 0 with every check failing, and its near miss scores below 1.
tasks.jsonl is generated from envs/git/task_source.py (``python envs/git/task_source.py``); a test
keeps the two in step.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.envs.git_task_runner import git_env, repository_fingerprint, run_setup, run_task

TASK_DIR = Path(__file__).resolve().parents[2] / "envs" / "git"
TASKS_FILE = TASK_DIR / "tasks.jsonl"
DIFFICULTIES = ("easy", "medium", "hard")
TOOLS = {"run": {"command"}, "read_file": {"path"}, "write_file": {"path", "content"}, "submit": set()}
FIELDS = {"task_id", "difficulty", "prompt", "setup", "checks", "solution", "near_miss", "max_turns"}


def _load_tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS_FILE.read_text().splitlines()]


def _task_source() -> ModuleType:
    spec = importlib.util.spec_from_file_location("git_task_source", TASK_DIR / "task_source.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TASKS = _load_tasks()
by_id = pytest.mark.parametrize("task", TASKS, ids=[task["task_id"] for task in TASKS])


def test_tasks_jsonl_is_what_the_source_generates():
    assert TASKS_FILE.read_text() == _task_source().render_jsonl(), "run: python envs/git/task_source.py"


def test_the_set_has_32_or_more_tasks_with_unique_ids_in_order_of_difficulty():
    ids = [task["task_id"] for task in TASKS]
    assert len(ids) == len(set(ids)) >= 32
    counts = Counter(task["difficulty"] for task in TASKS)
    assert set(counts) == set(DIFFICULTIES)
    assert counts["easy"] >= 10 and counts["medium"] >= 12 and counts["hard"] >= 10, counts
    levels = [DIFFICULTIES.index(task["difficulty"]) for task in TASKS]
    assert levels == sorted(levels)


def _well_formed_calls(calls: Any) -> None:
    assert isinstance(calls, list) and calls
    for call in calls:
        assert set(call) == {"tool", "arguments"}
        assert set(call["arguments"]) == TOOLS[call["tool"]], call
        assert all(isinstance(value, str) and value for value in call["arguments"].values()), call


@by_id
def test_task_is_well_formed(task):
    assert set(task) == FIELDS
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", task["task_id"])
    assert task["difficulty"] in DIFFICULTIES
    assert isinstance(task["prompt"], str) and len(task["prompt"]) >= 100
    assert task["setup"].startswith("git init -q -b main\n")
    # Deterministic by construction: no clock, no randomness, no process ids or temporary names.
    assert not re.search(r"\$RANDOM|\$\$|\bdate\b|mktemp|/tmp/", task["setup"])
    checks = task["checks"]
    assert isinstance(checks, list) and len(checks) >= 2
    assert len({check["name"] for check in checks}) == len(checks)
    for check in checks:
        assert set(check) == {"name", "run"} and check["name"] and check["run"].strip()
        for line in check["run"].splitlines():
            # Under `bash -e` a failing `! cmd` or `a && b` that is not the last command goes unnoticed.
            stripped = line.strip()
            assert not stripped.startswith("! "), f"{check['name']}: {line!r}"
            assert "&&" not in re.sub(r"\[\[.*?\]\]", "", stripped), f"{check['name']}: {line!r}"
    _well_formed_calls(task["solution"])
    _well_formed_calls(task["near_miss"])
    assert isinstance(task["max_turns"], int) and task["max_turns"] > len(task["solution"])


@by_id
def test_setup_builds_the_same_repository_every_time(task):
    fingerprints = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="git-task-") as tmp:
            home, work = Path(tmp, "home"), Path(tmp, "work")
            home.mkdir()
            work.mkdir()
            env = git_env(home)
            run_setup(task, work, env)
            fingerprints.append(repository_fingerprint(work, env))
    assert fingerprints[0]["commits"].strip(), "the setup made no commit"
    assert fingerprints[0] == fingerprints[1]


@by_id
def test_solution_scores_1(task):
    result = run_task(task, task["solution"])
    assert result.score == 1.0, (result.failed(), result.outputs)


@by_id
def test_submitting_at_once_scores_0(task):
    result = run_task(task, [])
    assert [check.name for check in result.checks if check.passed] == []
    assert result.score == 0.0


@by_id
def test_near_miss_scores_below_1(task):
    result = run_task(task, task["near_miss"])
    assert result.score < 1.0, result.outputs


def test_the_runner_confines_files_to_the_work_tree_and_stops_at_submit():
    task = {"setup": "git init -q -b main\n", "checks": [{"name": "a.txt", "run": '[ "$(cat a.txt)" = a ]'}]}
    calls = [
        {"tool": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}},
        {"tool": "read_file", "arguments": {"path": "a.txt"}},
        {"tool": "submit", "arguments": {}},
        {"tool": "write_file", "arguments": {"path": "a.txt", "content": "b\n"}},
    ]
    result = run_task(task, calls)
    assert result.score == 1.0 and result.outputs == ["wrote a.txt", "a\n"]
    with pytest.raises(ValueError, match="outside the work tree"):
        run_task(task, [{"tool": "write_file", "arguments": {"path": "../escape.txt", "content": ""}}])
