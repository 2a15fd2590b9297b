"""The task API, the same on every served task env: /schema lists the set, openenv_gym.tasks()
reads it, and reset takes a task by id or by split and index; a seed fixes the splits on any server."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.envs.coding.tasks import BUILTIN_TASKS as CODING_TASKS
from openenv_gym.envs.git.tasks import BUILTIN_TASKS as GIT_TASKS
from openenv_gym.envs.reasoning import make_tasks

SPLIT_BY_SEED = ["openenv/Coding-v0", "openenv/CodingTools-v0", "openenv/Git-v0"]
# ReasoningGym-v0's tasks name their splits: each split of a generator is made from its own seed.
REASONING = {"generators": ["gcd", "maze", "word_sorting", "knights_knaves", "dice"]}
TASK_ENVS = [(env_id, {"split_seed": 11}) for env_id in SPLIT_BY_SEED] + [
    ("openenv/ReasoningGym-v0", {**REASONING, "data_seed": 11})
]


@pytest.mark.parametrize(("env_id", "kwargs"), TASK_ENVS)
def test_a_task_env_lists_its_tasks_and_resets_to_each_by_id_or_by_split_and_index(env_id, kwargs):
    env = gym.make(env_id, **kwargs)
    try:
        catalog = openenv_gym.tasks(env)
        assert len(catalog) == sum(catalog.splits.values()) == sum(catalog.difficulties.values())
        assert set(catalog.splits) == {"train", "test"}
        assert catalog.split_seed == kwargs.get("split_seed")  # None where the tasks name their splits
        test_ids = catalog.ids(split="test")
        assert 0 < len(test_ids) < len(catalog)
        _, info = env.reset(options={"split": "test", "index": len(test_ids) - 1})
        assert info["task_id"] == test_ids[-1]
        chosen = catalog.ids(split="train", difficulty="hard")[0]
        _, info = env.reset(options={"task_id": chosen})
        assert (info["task_id"], info["difficulty"]) == (chosen, "hard")
        _, info = env.reset(seed=2, options={"split": "test"})
        assert info["task_id"] in test_ids
        with pytest.raises(openenv_gym.RemoteError, match="index 999 is not a task of split 'test'"):
            env.reset(options={"split": "test", "index": 999})
    finally:
        env.close()


@pytest.mark.parametrize("env_id", SPLIT_BY_SEED)
def test_two_servers_with_one_split_seed_publish_the_same_task_set(env_id):
    """Each id starts its own server: the same seed gives the same catalog; another seed another cut.
    (ReasoningGym-v0's equal questions for equal seeds: tests/envs/test_reasoning_gym.py.)"""
    first, again, other = (openenv_gym.tasks(env_id, split_seed=seed) for seed in (4, 4, 5))
    assert first == again
    assert first.ids() == other.ids() and first.ids(split="test") != other.ids(split="test")


def task_rows(env_id: str) -> list[dict[str, Any]]:
    """Twelve tasks of the env's own kind, as rows of a task file."""
    if env_id == "openenv/ReasoningGym-v0":
        return [task.model_dump(exclude={"split"}) for task in make_tasks(["gcd", "maze"])][:12]
    builtin = GIT_TASKS if env_id == "openenv/Git-v0" else CODING_TASKS
    return [json.loads(line) for line in builtin.read_text().splitlines()[:12]]


@pytest.mark.parametrize(("env_id", "kwargs"), TASK_ENVS)
def test_a_server_serves_a_jsonl_set_and_a_local_dataset_folder(tmp_path, env_id, kwargs):
    """Given a JSONL file, and a folder as ``datasets`` saves one (its splits named by the dataset,
    list and object columns as JSON text, as Arrow needs for lists of mixed types), the server lists
    those tasks and resets to them; the env's split= makes resets draw from one split."""
    datasets = pytest.importorskip("datasets")
    rows = task_rows(env_id)
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows[:10]))
    assert openenv_gym.tasks(env_id, tasks=str(jsonl)).ids() == [row["task_id"] for row in rows[:10]]

    def dataset(part):
        return datasets.Dataset.from_list(
            [
                {key: json.dumps(value) if isinstance(value, (list, dict)) else value for key, value in row.items()}
                for row in part
            ]
        )

    folder = tmp_path / "task-dataset"
    datasets.DatasetDict({"train": dataset(rows[:8]), "test": dataset(rows[8:12])}).save_to_disk(str(folder))
    env = gym.make(env_id, tasks=str(folder), split="test")
    try:
        catalog = openenv_gym.tasks(env)
        assert catalog.split_source == "tasks" and catalog.splits == {"train": 8, "test": 4}
        assert catalog.ids(split="test") == [row["task_id"] for row in rows[8:12]]
        assert catalog.default_split == "test"
        assert env.reset(seed=0)[1]["task_id"] in catalog.ids(split="test")
        assert env.reset(options={"split": "train", "index": 7})[1]["task_id"] == rows[7]["task_id"]
    finally:
        env.close()


def test_tasks_refuses_an_env_that_is_not_a_task_env():
    env = gym.make("openenv/CartPole-v1")
    try:
        with pytest.raises(ValueError, match="publishes no task set"):
            openenv_gym.tasks(env)
    finally:
        env.close()
    local = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match="takes an env id or a remote env"):
        openenv_gym.tasks(local)
    local.close()
