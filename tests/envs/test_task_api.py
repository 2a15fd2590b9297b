"""The task API, the same on every served task env: /schema lists the set, openenv_gym.tasks()
reads it, and reset takes a task by id or by split and index; a seed fixes the splits on any server."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.envs.coding.tasks import BUILTIN_TASKS as CODING_TASKS

TASK_ENVS = ["openenv/Coding-v0", "openenv/CodingTools-v0", "openenv/Git-v0"]


@pytest.mark.parametrize("env_id", TASK_ENVS)
def test_a_task_env_lists_its_tasks_and_resets_to_each_by_id_or_by_split_and_index(env_id):
    env = gym.make(env_id, split_seed=11)
    try:
        catalog = openenv_gym.tasks(env)
        assert len(catalog) == sum(catalog.splits.values()) == sum(catalog.difficulties.values())
        assert set(catalog.splits) == {"train", "test"} and catalog.split_seed == 11
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


@pytest.mark.parametrize("env_id", TASK_ENVS)
def test_two_servers_with_one_split_seed_publish_the_same_task_set(env_id):
    """Each id starts its own server: the same seed gives the same catalog; another seed another cut."""
    first, again, other = (openenv_gym.tasks(env_id, split_seed=seed) for seed in (4, 4, 5))
    assert first == again
    assert first.ids() == other.ids() and first.ids(split="test") != other.ids(split="test")


def test_a_server_serves_a_jsonl_set_and_a_local_dataset_folder(tmp_path):
    """Coding-v0 given a JSONL file, and a folder as a Hub dataset lays it out (its splits named by
    its files), lists those tasks; the env's split= makes resets draw from one split."""
    datasets = pytest.importorskip("datasets")
    rows = [json.loads(line) for line in CODING_TASKS.read_text().splitlines()]
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows[:10]))
    assert openenv_gym.tasks("openenv/Coding-v0", tasks=str(jsonl)).ids() == [row["task_id"] for row in rows[:10]]

    def dataset(part):  # the tests (lists of mixed types) as JSON text, as a dataset holds them
        return datasets.Dataset.from_list([{**row, "tests": json.dumps(row["tests"])} for row in part])

    folder = tmp_path / "coding-dataset"
    datasets.DatasetDict({"train": dataset(rows[:8]), "test": dataset(rows[8:12])}).save_to_disk(str(folder))
    env = gym.make("openenv/Coding-v0", tasks=str(folder), split="test")
    try:
        catalog = openenv_gym.tasks(env)
        assert catalog.split_source == "tasks" and catalog.splits == {"train": 8, "test": 4}
        assert catalog.default_split == "test"
        drawn = {env.reset(seed=seed)[1]["task_id"] for seed in range(12)}
        assert drawn <= set(catalog.ids(split="test")) and len(drawn) > 1
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
