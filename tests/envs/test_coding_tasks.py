"""The shipped task set is solvable and its hidden tests are right; task files load or fail clearly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from openenv_gym.envs.coding.scoring import passed_tests, same_value
from openenv_gym.envs.coding.tasks import BUILTIN_TASKS, load_tasks
from openenv_gym.sandbox import Limits, Sandbox
from tests.envs.coding_reference import SOLUTIONS
from tests.hf_cache import seed_hf_cache
from tests.utils import REPO_ROOT

TASKS = load_tasks()


def test_the_shipped_set_has_at_least_50_tasks_of_graded_difficulty():
    counts = Counter(task.difficulty for task in TASKS)
    assert len(TASKS) >= 50 and min(counts.values()) >= 10 and set(counts) == {"easy", "medium", "hard"}
    order = {"easy": 0, "medium": 1, "hard": 2}
    assert [order[task.difficulty] for task in TASKS] == sorted(order[task.difficulty] for task in TASKS)
    assert {task.task_id for task in TASKS} == set(SOLUTIONS)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(Limits(wall_time=10)) as box:
        yield box


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.task_id)
def test_every_task_is_solved_by_its_reference_and_not_by_a_stub(sandbox, task):
    """Through the real sandbox: the reference passes every hidden test; a stub fails one."""
    cases = [test.args for test in task.tests]
    result = sandbox.run(SOLUTIONS[task.task_id], entry_point=task.entry_point, cases=cases)
    assert all(passed_tests(task.tests, result.results)), (result.stderr, result.results)
    stub = sandbox.run(f"{task.signature}\n    return None\n", entry_point=task.entry_point, cases=cases)
    assert not all(passed_tests(task.tests, stub.results))


def test_visible_tests_are_the_calls_the_prompt_writes_out():
    """A test is visible when the prompt writes its call with the same arguments; a longer name or other args do not count."""
    prompt = 'For example, f("a)b", [1, (2, 3)]) returns 1, but my_f(1, [2]) is another function; f({1}) is a set.'
    tests = [
        {"args": ["a)b", [1, [2, 3]]], "expected": 1},
        {"args": [1, [2]], "expected": 0},
        {"args": [[1]], "expected": 0},
    ]
    task = load_tasks([_task(prompt=prompt, signature="def f(x, y):", tests=tests)])[0]
    assert task.visible_tests == (0,)
    by_id = {task.task_id: task for task in TASKS}
    assert by_id["digit-square-sum"].visible_tests == (2,)
    assert sum(bool(task.visible_tests) for task in TASKS) >= 50


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.task_id)
def test_every_task_shows_an_example_that_is_one_of_its_tests(task):
    """CodingTools' run_tests runs the prompt's examples: every shipped task must show one, as a literal call."""
    assert task.visible_tests, f"the prompt of {task.task_id} writes out no call of one of its tests"


def test_task_ids_lists_the_ids_of_a_task_set_by_difficulty():
    """task_ids() lists every shipped id in file order; difficulties filter; an unknown difficulty lists the valid ones."""
    from openenv_gym.envs.coding import task_ids

    assert task_ids() == [task.task_id for task in TASKS]
    assert task_ids(difficulties=["hard"]) == [task.task_id for task in TASKS if task.difficulty == "hard"]
    assert task_ids([_task(task_id="mine")]) == ["mine"]
    with pytest.raises(
        ValueError,
        match=re.escape("unknown difficulty 'hrad'. Did you mean: 'hard'? Expected one of: easy, medium, hard"),
    ):
        task_ids(difficulties=["hrad"])


def test_values_compare_as_json_with_float_tolerance_and_strict_booleans():
    assert same_value([1, 2.0000000001, {"a": "x"}], [1, 2, {"a": "x"}])
    assert not same_value(1.1, 1)
    assert not same_value(True, 1) and not same_value(0, False) and same_value(False, False)
    assert not same_value([1, 2], [1, 2, 3]) and not same_value({"a": 1}, {"a": 1, "b": 2})
    assert not same_value("1", 1) and not same_value(None, 0) and same_value(None, None)


def test_missing_and_raised_results_are_scored():
    tasks = load_tasks(
        [
            {
                "task_id": "t",
                "difficulty": "easy",
                "prompt": "p",
                "signature": "def f(x):",
                "entry_point": "f",
                "tests": [
                    {"args": [1], "expected": 2},
                    {"args": [0], "raises": "ValueError"},
                    {"args": [3], "expected": 6},
                ],
            }
        ]
    )
    results = [{"value": 2}, {"error": "ValueError: no", "exception": ["ValueError", "Exception"]}]
    assert passed_tests(tasks[0].tests, results) == [True, True, False]
    assert passed_tests(tasks[0].tests, [{"value": 2}, {"value": None}]) == [True, False, False]


def _task(**changes):
    row = {
        "task_id": "t",
        "difficulty": "easy",
        "prompt": "p",
        "signature": "def f(x):",
        "entry_point": "f",
        "tests": [{"args": [1], "expected": 2}],
    }
    row.update(changes)
    return row


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_task(difficulty="trivial"), "task 0: difficulty: Input should be 'easy', 'medium' or 'hard'"),
        (_task(entry_point="g"), "entry_point 'g' is not the function of the signature"),
        (_task(tests=[]), "task 0: tests: List should have at least 1 item"),
        (_task(tests=[{"args": [1]}]), "exactly one of 'expected' and 'raises'"),
        (_task(tests=[{"args": [1], "raises": None}]), "exactly one of 'expected' and 'raises'"),
        (_task(prompt="caf\u00e9"), "printable ASCII"),
        (_task(extra=1), "task 0: extra: Extra inputs are not permitted"),
    ],
)
def test_bad_tasks_are_named_with_their_field(row, message):
    with pytest.raises(ValueError, match=message):
        load_tasks([row])


def test_a_task_file_error_names_the_line(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(_task()) + "\n\n" + json.dumps(_task(task_id="u", signature="oops")) + "\n")
    with pytest.raises(ValueError, match=r"mine.jsonl line 3: signature: String should match pattern"):
        load_tasks(path)
    path.write_text(json.dumps(_task()) + "\n{not json\n")
    with pytest.raises(ValueError, match=re.escape("mine.jsonl line 2: not JSON")):
        load_tasks(path)
    path.write_text(json.dumps(_task()) + "\n" + json.dumps(_task()) + "\n")
    with pytest.raises(ValueError, match="task_id 't' appears twice"):
        load_tasks(path)
    with pytest.raises(FileNotFoundError):
        load_tasks(tmp_path / "absent.jsonl")


def test_the_shipped_file_is_installed_with_the_package():
    assert BUILTIN_TASKS.is_file() and BUILTIN_TASKS.parent.name == "coding"


_COMMIT = "0123456789abcdef0123456789abcdef01234567"
_PINNED = "fedcba9876543210fedcba9876543210fedcba98"


def _seed_hf_cache(home, rows_by_commit):
    """A Hugging Face cache holding dataset org/tasks, as hf_hub_download leaves it."""
    files = {
        commit: {"data/train.jsonl": "".join(json.dumps(row) + "\n" for row in rows)}
        for commit, rows in rows_by_commit.items()
    }
    seed_hf_cache(home, "dataset", "org/tasks", files, main=_COMMIT)


def _load_offline(home, url):
    """load_tasks(url) in a fresh interpreter with HF_HUB_OFFLINE=1 (huggingface_hub reads it at import)."""
    script = (
        "import sys\nfrom openenv_gym.envs.coding.tasks import load_tasks\n"
        "try:\n    print([t.task_id for t in load_tasks(sys.argv[1])])\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-c", script, url], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip()


def test_tasks_from_a_hugging_face_dataset_load_offline_from_the_cache(tmp_path):
    _seed_hf_cache(tmp_path, {_COMMIT: [_task(task_id="from-hub")], _PINNED: [_task(task_id="pinned")]})
    assert _load_offline(tmp_path, "hf://datasets/org/tasks/data/train.jsonl") == "['from-hub']"
    assert _load_offline(tmp_path, f"hf://datasets/org/tasks@{_PINNED}/data/train.jsonl") == "['pinned']"
    missing = _load_offline(tmp_path, "hf://datasets/org/absent/data/train.jsonl")
    assert missing.startswith(("LocalEntryNotFoundError", "OfflineModeIsEnabled")), missing
    assert _load_offline(tmp_path, "hf://datasets/org").startswith("ValueError expected hf://datasets/ORG/NAME")


def test_a_missing_entry_point_passes_no_test_not_even_one_expecting_name_error():
    """A test that expects NameError fails when the program defines no function at all."""
    from openenv_gym.envs.coding.tasks import TestCase

    tests = [TestCase(args=[1], raises="NameError"), TestCase(args=[2], raises="NameError")]
    results = [
        {
            "error": "NameError: the code defines no function named 'f'",
            "exception": ["NameError"],
            "missing_entry_point": True,
        },
        {"error": "NameError: name 'x' is not defined", "exception": ["NameError", "Exception"]},
    ]
    assert passed_tests(tests, results) == [False, True]
