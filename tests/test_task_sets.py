"""TaskSet: splits fixed by seed (or named by the tasks), what /schema publishes, how a reset picks a
task, and the sources a set loads from (JSONL, an iterable, a local Hugging Face dataset folder)."""

from __future__ import annotations

import collections
import json
import random

import pytest

from openenv_gym.envs.coding.tasks import BUILTIN_TASKS, Task, load_tasks
from openenv_gym.envs.git.tasks import GitTask
from openenv_gym.envs.git.tasks import load_tasks as load_git_tasks
from openenv_gym.server import TaskSet
from openenv_gym.server.task_sets import load_task_set
from openenv_gym.task_catalog import TaskCatalog

CODING = load_tasks()


def test_a_seeded_split_is_the_same_every_time_and_cuts_every_difficulty():
    """Same seed, same splits (a fresh load too); each difficulty is cut 80/20 by largest remainder."""
    first, again = TaskSet(CODING, split_seed=7), TaskSet(load_tasks(), split_seed=7)
    assert first.split_of == again.split_of
    assert TaskSet(CODING, split_seed=8).split_of != first.split_of
    counts = collections.Counter((task.difficulty, first.split_of[task.task_id]) for task in CODING)
    # 20 easy, 22 medium, 14 hard: 16/4, 17.6/4.4 -> 18/4, 11.2/2.8 -> 11/3
    assert counts == {
        ("easy", "train"): 16,
        ("easy", "test"): 4,
        ("medium", "train"): 18,
        ("medium", "test"): 4,
        ("hard", "train"): 11,
        ("hard", "test"): 3,
    }
    # Within a split the set's order is kept: that is the order `index` counts in.
    order = [task.task_id for task in CODING]
    test_ids = [task.task_id for task in first.splits["test"]]
    assert test_ids == sorted(test_ids, key=order.index)


def test_a_difficulty_filter_keeps_the_other_tasks_splits():
    """Filtering a set by difficulty leaves each remaining task in the split it had."""
    whole = TaskSet(CODING, split_seed=3)
    hard = TaskSet([task for task in CODING if task.difficulty == "hard"], split_seed=3)
    assert hard.split_of == {task_id: split for task_id, split in whole.split_of.items() if task_id in hard.by_id}


def test_custom_fractions_and_bad_ones():
    three = TaskSet(CODING, splits={"train": 0.5, "validation": 0.25, "test": 0.25})
    # easy 20: 10/5/5; medium 22: 11/5.5/5.5 and hard 14: 7/3.5/3.5, the tied leftover to the earlier split
    assert {name: len(tasks) for name, tasks in three.splits.items()} == {"train": 28, "validation": 15, "test": 13}
    with pytest.raises(ValueError, match="sum to 1"):
        TaskSet(CODING, splits={"train": 0.5, "test": 0.4})
    with pytest.raises(ValueError, match="positive fractions"):
        TaskSet(CODING, splits={"train": 1.0, "test": 0.0})
    with pytest.raises(ValueError, match=r"unknown split 'tset'\. Did you mean: 'test'"):
        TaskSet(CODING, split="tset")


def test_tasks_that_name_their_split_keep_it():
    rows = [json.loads(line) for line in BUILTIN_TASKS.read_text().splitlines()[:6]]
    named = [Task.model_validate({**row, "split": "dev" if index % 2 else "eval"}) for index, row in enumerate(rows)]
    task_set = TaskSet(named)
    assert {name: [task.task_id for task in tasks] for name, tasks in task_set.splits.items()} == {
        "eval": [rows[0]["task_id"], rows[2]["task_id"], rows[4]["task_id"]],
        "dev": [rows[1]["task_id"], rows[3]["task_id"], rows[5]["task_id"]],
    }
    assert task_set.describe()["split_source"] == "tasks" and task_set.describe()["split_seed"] is None
    with pytest.raises(ValueError, match="the tasks name their own splits"):
        TaskSet(named, splits={"train": 1.0})
    with pytest.raises(ValueError, match=f"task {rows[0]['task_id']!r} does not"):
        TaskSet([Task.model_validate(rows[0]), *named[1:]])


def test_describe_lists_every_task_and_no_hidden_value():
    """/schema["tasks"]: counts per split and difficulty, the fields (hidden ones named), each task's id."""
    task_set = TaskSet(CODING, split_seed=1)
    described = task_set.describe()
    assert described["count"] == 56 and described["difficulties"] == {"easy": 20, "medium": 22, "hard": 14}
    assert {name: split["count"] for name, split in described["splits"].items()} == {"train": 45, "test": 11}
    assert described["fields"] == ["task_id", "difficulty", "prompt", "signature", "entry_point", "tests"]
    assert described["hidden_fields"] == ["tests"]
    assert [entry["task_id"] for entry in described["entries"]] == [task.task_id for task in CODING]
    # Nothing but names and counts: no prompt, no test.
    assert all(set(entry) == {"task_id", "difficulty", "split"} for entry in described["entries"])
    assert "args" not in json.dumps(described) and CODING[0].prompt[:40] not in json.dumps(described)
    catalog = TaskCatalog.from_schema({"tasks": described})
    assert catalog.ids(split="test") == [task.task_id for task in task_set.splits["test"]]
    assert catalog.ids(split="test", difficulty="hard") == [
        task.task_id for task in task_set.splits["test"] if task.difficulty == "hard"
    ]
    assert len(catalog) == 56 and catalog.splits == {"train": 45, "test": 11}
    with pytest.raises(ValueError, match="publishes no task set"):
        TaskCatalog.from_schema({"action": {}})
    assert GitTask.hidden_fields == ("setup", "checks", "solution", "near_miss")


def test_pick_by_id_split_and_index_or_draw():
    task_set = TaskSet(CODING, split_seed=0)
    rng = random.Random(0)
    test = task_set.splits["test"]
    assert task_set.pick({"task_id": test[2].task_id}, rng) is test[2]
    assert task_set.pick({"split": "test", "index": 2}, rng) is test[2]
    assert task_set.pick({"index": 5}, rng) is CODING[5]
    drawn = {task_set.pick({"split": "test"}, rng).task_id for _ in range(200)}
    assert drawn == {task.task_id for task in test}
    # The same seed draws the same task; no options draw from the whole set, as before splits.
    assert task_set.pick(None, random.Random(4)) is random.Random(4).choice(CODING)
    train_only = TaskSet(CODING, split_seed=0, split="train")
    drawn_splits = {train_only.split_of[train_only.pick({}, rng).task_id] for _ in range(100)}
    assert drawn_splits == {"train"}
    # An index counts in the split named beside it, else in the whole set, never in the default split.
    assert train_only.pick({"index": 0}, rng) is CODING[0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"task": "x"}, r"unknown reset options \['task'\]; a task env takes task_id, split, index"),
        # An unknown id is refused without the nearest or any other: tests/reward_hacking/test_task_choice.py.
        ({"task_id": "digit-square-su"}, r"unknown task_id 'digit-square-su': this env serves no task of that id \("),
        ({"task_id": "dedupe", "split": "test"}, "by task_id, or by split and index: not both"),
        ({"split": "valid"}, "unknown split 'valid'"),
        ({"split": "test", "index": 11}, r"index 11 is not a task of split 'test': expected an int in \[0, 11\)"),
        ({"split": "test", "index": -1}, "index -1 is not a task"),
        ({"split": "test", "index": True}, "index True is not a task"),
        ({"index": "3"}, r"index '3' is not a task of the task set: expected an int in \[0, 56\)"),
    ],
)
def test_bad_reset_options_say_what_is_wrong(options, message):
    with pytest.raises(ValueError, match=message):
        TaskSet(CODING).pick(options, random.Random(0))


def test_a_set_loads_from_a_python_iterable():
    rows = (json.loads(line) for line in BUILTIN_TASKS.read_text().splitlines()[:3])  # a generator
    assert [task.task_id for task in load_task_set(rows, Task, BUILTIN_TASKS)] == [task.task_id for task in CODING[:3]]
    with pytest.raises(ValueError, match="task 1: difficulty"):
        load_task_set(
            [{**CODING[0].model_dump()}, {**CODING[1].model_dump(), "difficulty": "trivial"}], Task, BUILTIN_TASKS
        )


def _dataset_rows(tasks: list[Task]) -> list[dict]:
    """Rows as a dataset holds them: the tests (lists of mixed types) as JSON text."""
    return [
        {
            **task.model_dump(exclude={"split"}),
            "tests": json.dumps([t.model_dump(exclude_unset=True) for t in task.tests]),
        }
        for task in tasks
    ]


def test_a_set_loads_from_a_saved_dataset_folder_with_its_splits(tmp_path):
    """What ``DatasetDict.save_to_disk`` wrote loads with its splits as the tasks' splits, the JSON
    column decoded: the same tasks as the JSONL file."""
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "coding-tasks"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(_dataset_rows(CODING[:40])),
            "test": datasets.Dataset.from_list(_dataset_rows(CODING[40:])),
        }
    ).save_to_disk(str(folder))
    loaded = load_tasks(folder)
    assert [task.model_dump(exclude={"split"}) for task in loaded] == [
        task.model_dump(exclude={"split"}) for task in CODING
    ]
    task_set = TaskSet(loaded)
    assert [task.task_id for task in task_set.splits["test"]] == [task.task_id for task in CODING[40:]]


def test_a_set_loads_from_a_folder_of_data_files_as_the_hub_lays_them_out(tmp_path):
    """A folder laid out as a Hub dataset repository (data/train.jsonl, data/test.jsonl) is read by
    the same code as ``hf://datasets/ORG/NAME``: ``datasets.load_dataset``, splits from the file names."""
    pytest.importorskip("datasets")
    git = load_git_tasks()
    data = tmp_path / "git-tasks" / "data"
    data.mkdir(parents=True)
    for split, tasks in (("train", git[:30]), ("test", git[30:])):
        rows = [
            {
                **task.model_dump(exclude={"split"}),
                "solution": json.dumps([c.model_dump() for c in task.solution]),
                "near_miss": json.dumps([c.model_dump() for c in task.near_miss]),
            }
            for task in tasks
        ]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    loaded = load_git_tasks(tmp_path / "git-tasks")
    assert sorted(task.model_dump_json(exclude={"split"}) for task in loaded) == sorted(
        task.model_dump_json(exclude={"split"}) for task in git
    )
    assert {task.task_id: task.split for task in loaded} == {
        **{task.task_id: "train" for task in git[:30]},
        **{task.task_id: "test" for task in git[30:]},
    }
