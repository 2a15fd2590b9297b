"""Our client over a stock OpenEnv 0.10 task env (tests/openenv010/task_server.py, written only against
``openenv``'s base classes and served by its own ``create_app``): ``tasks()`` reads its Task API,
``gym.make(..., split=)`` and ``reset(options=...)`` pick its tasks by split, index or id, and a
vector env, a sampler and a pool's task groups, ``openenv-gym eval`` and TRL's dataset of prompts
run on it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym import AsyncEnvPool, make_async
from openenv_gym.client.task_api import task_api_of
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.errors import ServerConnectError
from openenv_gym.task_groups import TaskGroup
from openenv_gym.task_sampling import PassRateCurriculum, SequentialSampler
from openenv_gym.trajectories import read_trajectories
from openenv_gym.wrappers import SampleTasks
from tests.openenv010 import peer_server
from tests.utils import REPO_ROOT, UNIT, run_async, running_server

#: The server's tasks (tests/openenv010/task_server.py), split by split in its order.
TRAIN = {
    "add-1": "What is 2 + 3?",
    "add-2": "What is 7 + 8?",
    "mul-1": "What is 6 * 7?",
    "mul-2": "What is 12 * 11?",
    "pow-1": "What is 2 ** 10?",
    "sub-1": "What is 100 - 58?",
}
TEST = {"add-9": "What is 19 + 23?", "mul-9": "What is 9 * 9?", "pow-9": "What is 3 ** 5?"}


@pytest.fixture(scope="module")
def task_url():
    with peer_server("task_server.py") as url:
        yield url


def solve(observation: Any, info: dict[str, Any]) -> dict[str, str]:
    """A policy for ``openenv-gym eval``: right on sums, differences and products, wrong on powers."""
    match = re.fullmatch(r"What is (\d+) (\*\*|\*|\+|-) (\d+)\?", observation["prompt"])
    assert match is not None, observation
    left, operator, right = int(match[1]), match[2], int(match[3])
    answer = {"+": left + right, "-": left - right, "*": left * right}.get(operator, 0)
    return {"answer": str(answer)}


def test_the_task_api_client_reads_every_route(task_url):
    api = task_api_of(task_url)
    assert api is not None and api.env_name == "arithmetic"
    assert api.splits() == ["train", "test"] and api.num_tasks("test") == 3
    assert [task["id"] for task in api.tasks("train")] == list(TRAIN)
    assert api.task("test", 2) == {"id": "pow-9", "question": TEST["pow-9"], "difficulty": "hard"}  # no answer
    assert [task["id"] for task in api.task_range("train", 1, 3)] == ["add-2", "mul-1"]
    with pytest.raises(ServerConnectError, match="HTTP 400"):
        api.task("test", 3)
    assert [entry.task_id for entry in api.entries()] == [*TRAIN, *TEST]


def test_the_tasks_of_an_env_without_task_ranges_are_listed_whole():
    with peer_server("task_server.py", "--no-task-range") as url:
        api = task_api_of(url)
        assert api is not None
        with pytest.raises(ServerConnectError, match="HTTP 501"):
            api.task_range("test", 0, 2)
        assert [entry.task_id for entry in api.entries()] == [*TRAIN, *TEST]  # from POST /tasks


def test_tasks_reads_the_task_api_of_an_openenv_server(task_url):
    env = gym.make("openenv/Remote-v0", base_url=task_url)
    try:
        catalog = openenv_gym.tasks(env)
    finally:
        env.close()
    assert catalog.splits == {"train": 6, "test": 3}
    assert catalog.ids(split="train") == list(TRAIN) and catalog.ids(split="test") == list(TEST)
    assert catalog.difficulties == {"easy": 4, "medium": 3, "hard": 2}
    assert catalog.difficulty_of()["pow-9"] == "hard"


def test_make_with_a_split_and_resets_by_split_index_and_task_id(task_url):
    env = gym.make("openenv/Remote-v0", base_url=task_url, split="test")
    try:
        drawn = {env.reset(seed=seed)[0]["prompt"] for seed in range(8)}  # the server draws from the split
        assert drawn <= set(TEST.values()) and len(drawn) > 1
        observation, info = env.reset(options={"split": "train", "index": 2})
        assert observation == {"prompt": TRAIN["mul-1"]} and info["task_id"] == "mul-1"
        observation, info = env.reset(seed=3, options={"task_id": "pow-9"})
        assert observation == {"prompt": TEST["pow-9"]} and info["task_id"] == "pow-9"
        _, reward, terminated, truncated, info = env.step({"answer": "243"})
        assert (reward, terminated, truncated) == (1.0, True, False) and "task_id" not in info
        env.reset(options={"task_id": "add-1"})
        assert env.step({"answer": "6"})[1:3] == (0.0, True)
        with pytest.raises(ValueError, match=r"unknown split 'tset'; the server has \['train', 'test'\]"):
            env.reset(options={"split": "tset"})
        with pytest.raises(ValueError, match="unknown task_id 'nope'"):
            env.reset(options={"task_id": "nope"})
        assert env.reset(options={"split": "test", "index": 0})[1]["task_id"] == "add-9"  # still usable
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"unknown split 'validation'; the server has \['train', 'test'\]"):
        gym.make("openenv/Remote-v0", base_url=task_url, split="validation")


def test_a_task_spec_reaches_the_env_as_its_reset_argument(task_url):
    env = gym.make("openenv/Remote-v0", base_url=task_url)
    try:
        spec = {"id": "own-1", "question": "What is 1 + 1?", "answer": "2"}  # this env plays any spec given
        observation, info = env.reset(options={"task_spec": spec})
        assert observation == {"prompt": "What is 1 + 1?"} and "task_id" not in info
        assert env.step({"answer": "2"})[1] == 1.0
        with pytest.raises(ValueError, match="pick a task once"):
            env.reset(options={"task_id": "add-1", "split": "train"})
    finally:
        env.close()


def test_servers_without_the_task_api_take_no_split():
    with peer_server("task_server.py", "--no-task-api") as url:
        assert task_api_of(url) is None  # its routes answer 501
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            assert env.reset(seed=0)[0]["prompt"] in TRAIN.values()  # it plays as before
            with pytest.raises(ValueError, match="publishes no task set"):
                openenv_gym.tasks(env)
        finally:
            env.close()
        with pytest.raises(ValueError, match="has no task set"):
            gym.make("openenv/Remote-v0", base_url=url, split="test")
    with running_server(EchoEnvironment) as server:  # ours: its env's split is set where it starts
        with pytest.raises(ValueError, match="is openenv-gym's"):
            gym.make("openenv/Remote-v0", base_url=server.url, split="test")


def test_the_default_vector_env_over_the_task_env(task_url):
    envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=task_url, split="test")
    try:
        observations, infos = envs.reset(seed=[0, 1])
        assert set(observations["prompt"]) <= set(TEST.values())
        observations, infos = envs.reset(options={"task_id": "mul-1"})
        assert list(observations["prompt"]) == [TRAIN["mul-1"]] * 2 and list(infos["task_id"]) == ["mul-1"] * 2
        _, rewards, terminated, _, _ = envs.step({"answer": ["42", "41"]})
        assert list(rewards) == [1.0, 0.0] and list(terminated) == [True, True]
        observations, *_ = envs.step({"answer": ["", ""]})  # NextStep: the autoresets draw from the default split
        assert set(observations["prompt"]) <= set(TEST.values())
        observations, infos = envs.reset(options={"split": "train", "index": 4})
        assert list(infos["task_id"]) == ["pow-1"] * 2
    finally:
        envs.close()


def test_make_vec_over_the_task_env(task_url):
    envs = gym.make_vec("openenv/Remote-v0", num_envs=2, vectorization_mode="sync", base_url=task_url, split="train")
    try:
        observations, infos = envs.reset(seed=[0, 1])
        assert set(observations["prompt"]) <= set(TRAIN.values())
        observations, infos = envs.reset(options={"task_id": "sub-1"})
        assert list(observations["prompt"]) == [TRAIN["sub-1"]] * 2 and list(infos["task_id"]) == ["sub-1"] * 2
        _, rewards, terminated, _, _ = envs.step({"answer": ["42", "41"]})
        assert list(rewards) == [1.0, 0.0] and list(terminated) == [True, True]
    finally:
        envs.close()


@pytest.mark.parametrize("vectorization", ["default", "sync"])
def test_sample_tasks_over_make_vec_of_the_task_env(task_url, vectorization):
    disabled = gym.vector.AutoresetMode.DISABLED
    if vectorization == "sync":  # Gymnasium's SyncVectorEnv of RemoteEnvs
        options: dict[str, Any] = {"vectorization_mode": "sync", "vector_kwargs": {"autoreset_mode": disabled}}
    else:  # our RemoteVectorEnv: a plain session per sub-env
        options = {"autoreset_mode": disabled}
    envs = SampleTasks(
        gym.make_vec("openenv/Remote-v0", 2, base_url=task_url, **options), SequentialSampler(list(TEST)), group_size=2
    )
    try:
        observations, infos = envs.reset(seed=0)
        played = [(list(infos["task_id"]), list(observations["prompt"]))]
        for _ in range(len(TEST) - 1):  # each step ends both episodes: the next group's task follows
            answers = [solve({"prompt": prompt}, {})["answer"] for prompt in observations["prompt"]]
            observations, _, terminated, _, infos = envs.step({"answer": answers})
            assert list(terminated) == [True, True]
            played.append((list(infos["task_id"]), list(observations["prompt"])))
    finally:
        envs.close()
    assert played == [([task_id] * 2, [prompt] * 2) for task_id, prompt in TEST.items()]


def test_a_curriculum_samples_the_servers_tasks(task_url):
    env = gym.make("openenv/Remote-v0", base_url=task_url)
    try:
        ids = openenv_gym.tasks(env).ids(split="train")
        sampler = PassRateCurriculum(ids, seed=0)
        sampled = []
        for _ in range(12):
            task_id = sampler.sample()
            sampled.append(task_id)
            rewards = []
            for _ in range(2):
                observation, info = env.reset(options={"task_id": task_id})
                assert observation["prompt"] == TRAIN[task_id] and info["task_id"] == task_id
                rewards.append(env.step(solve(observation, info))[1])
            sampler.update(task_id, rewards)
    finally:
        env.close()
    assert set(sampled) == set(TRAIN)  # it explores every task the server lists
    assert sampler.counts()["unseen"] == 0


def test_task_groups_of_a_pool_on_the_task_env(task_url):
    async def play() -> list[tuple[str, list[str], list[float]]]:
        played = []
        single = await make_async("openenv/Remote-v0", base_url=task_url, split="test")
        drawn = {(await single.reset(seed=seed))[0]["prompt"] for seed in range(6)}  # from the default split
        await single.aclose()
        async with AsyncEnvPool("openenv/Remote-v0", size=2, base_url=task_url, split="test") as pool:
            env = await pool.acquire()
            drawn |= {(await env.reset(seed=seed))[0]["prompt"] for seed in range(6)}
            await env.aclose()
            assert drawn <= set(TEST.values())
            sampler = SequentialSampler(list(TEST))
            for _ in TEST:
                group = await TaskGroup.start(pool, sampler, size=2)
                prompts = [observation["prompt"] for observation in group.observations]
                returns = [
                    (await env.step(solve(observation, {})))[1]
                    for env, observation in zip(group.envs, group.observations)
                ]
                await group.finish(returns)
                played.append((group.task_id, prompts, returns))
        return played

    played = run_async(play(), timeout=120 * UNIT)
    assert played == [
        ("add-9", [TEST["add-9"]] * 2, [1.0, 1.0]),
        ("mul-9", [TEST["mul-9"]] * 2, [1.0, 1.0]),
        ("pow-9", [TEST["pow-9"]] * 2, [0.0, 0.0]),
    ]


def test_eval_cli_on_the_task_env(task_url, tmp_path):
    out = tmp_path / "episodes.jsonl"
    # fmt: off
    result = subprocess.run(
        [
            sys.executable, "-m", "openenv_gym", "eval", "openenv/Remote-v0",
            "--policy", "tests.test_openenv010_task_env:solve", "--split", "test", "--k", "2",
            "--env-kwargs", json.dumps({"base_url": task_url}), "--out", str(out),
        ],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300 * UNIT,
    )
    # fmt: on
    assert result.returncode == 0, result.stderr
    episodes = list(read_trajectories(out))
    assert [episode.task_id for episode in episodes] == ["add-9", "add-9", "mul-9", "mul-9", "pow-9", "pow-9"]
    assert [episode.total_reward for episode in episodes] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines() if line.strip()}
    assert rows["easy"][1:3] == ["1", "2"] and rows["hard"][1:3] == ["1", "2"]  # tasks, episodes
    assert float(rows["all"][3]) == pytest.approx(2 / 3, abs=1e-3)  # pass@1 over the three tasks, as printed


def test_trl_dataset_of_prompts_from_the_task_env(task_url):
    pytest.importorskip("trl")
    from openenv_gym.integrations.trl import rollout_func

    rollout = rollout_func("openenv/Remote-v0", base_url=task_url, action=lambda text: {"answer": text.strip()})
    try:
        rows = rollout.dataset([{"options": {"task_id": task_id}} for task_id in TEST])
        assert [row["task_id"] for row in rows] == list(TEST)
        assert [row["prompt"][-1]["content"] for row in rows] == list(TEST.values())
        out = rollout.run([row["prompt"] for row in rows], ["42", "80", "243"])
        assert out["env_reward"] == [1.0, 0.0, 1.0] and out["env_terminated"] == [True, True, True]
    finally:
        rollout.close()
