"""openenv/ReasoningGym-v0: reasoning-gym's generators served, each scoring a right answer 1 and a
wrong one less; the plain text face, the tool face, Gymnasium's checker, and equal sets everywhere."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym
from openenv_gym.envs.reasoning import DEFAULT_GENERATORS, AnswerAction, ReasoningGymEnvironment, make_tasks
from tests.utils import REPO_ROOT

pytest.importorskip("reasoning_gym")


@pytest.fixture(scope="module")
def reasoning() -> ReasoningGymEnvironment:
    return ReasoningGymEnvironment()


def answered(env: ReasoningGymEnvironment, task_id: str, answer: str) -> float:
    env.reset(options={"task_id": task_id})
    reward = env.step(AnswerAction(answer=answer)).reward
    assert isinstance(reward, float)
    return reward


def test_at_least_fifty_generators_are_served(reasoning):
    catalog = reasoning.task_catalog()
    served = {entry["task_id"].split("/")[0] for entry in catalog["entries"]}
    assert served == set(DEFAULT_GENERATORS) and len(served) >= 50
    assert catalog["split_source"] == "tasks" and set(catalog["splits"]) == {"train", "test"}


@pytest.mark.parametrize("generator", DEFAULT_GENERATORS)
def test_each_generator_scores_a_right_answer_1_and_a_wrong_one_less(reasoning, generator):
    """Over the first three test items of each generator: the item's answer scores 1; another
    item's (different) answer and a made-up one score less."""
    tasks = [task for task in reasoning.task_set.splits["test"] if task.generator == generator][:3]
    others = [task.answer for task in reasoning.task_set.tasks if task.generator == generator]
    assert len(tasks) == 3
    for task in tasks:
        assert task.answer is not None
        assert answered(reasoning, task.task_id, task.answer) == 1.0
        wrong = next(answer for answer in others if answer is not None and answer.strip() != task.answer.strip())
        assert answered(reasoning, task.task_id, wrong) < 1.0, f"{task.task_id}: {wrong!r} for {task.answer!r}"
        assert answered(reasoning, task.task_id, "no idea") < 1.0


def test_the_plain_text_face_passes_gymnasiums_checker_and_answers_in_one_step():
    env = gym.make("openenv/ReasoningGym-v0", generators=["gcd", "maze", "emoji_mystery"])
    try:
        check_env(env.unwrapped, skip_render_check=True)
        question, info = env.reset(options={"split": "test", "index": 0})
        assert isinstance(question, str) and question in env.observation_space
        assert info == {"task_id": "gcd/test/0", "difficulty": "easy", "generator": "gcd"}
        text, reward, terminated, truncated, info = env.step("7")
        assert (terminated, truncated) == (True, False) and reward in (0.0, 1.0)
        assert text == f"Your answer scored {reward:.4g}." and info["score"] == reward
    finally:
        env.close()


def test_the_tool_face_offers_answer():
    env = gym.make("openenv/ReasoningGym-v0", generators=["gcd"], tool_calls=True)
    try:
        catalog = openenv_gym.tasks(env)
        question, info = env.reset(options={"task_id": catalog.ids(split="test")[0]})
        assert "greatest common divisor" in question.lower() or "gcd" in question.lower()
        assert [tool["function"]["name"] for tool in info["tools"]] == ["answer"]
        numbers = [int(word) for word in question.replace(".", " ").replace(",", " ").split() if word.isdigit()]
        right = math.gcd(*numbers)
        text, reward, terminated, _, _ = env.step(json.dumps({"name": "answer", "arguments": {"text": str(right)}}))
        assert (text, reward, terminated) == ("Your answer scored 1.", 1.0, True)
    finally:
        env.close()


@pytest.mark.slow
def test_two_servers_make_the_same_questions_and_another_seed_others():
    """Each server is a process with its own hash salt: the items still come out equal for one
    data_seed (a subprocess with another PYTHONHASHSEED makes them too)."""
    generators = ["maze", "family_relationships", "cryptarithm"]

    def questions(**kwargs):
        """Every fifth task's question, by id (which items a split takes depends on the seed)."""
        env = gym.make("openenv/ReasoningGym-v0", generators=generators, **kwargs)
        try:
            ids = openenv_gym.tasks(env).ids()[::5]
            return {task_id: env.reset(options={"task_id": task_id})[0] for task_id in ids}
        finally:
            env.close()

    first = questions(data_seed=3)
    assert questions(data_seed=3) == first
    assert questions(data_seed=4) != first
    script = (
        "import json, sys\nfrom openenv_gym.envs.reasoning import make_tasks\n"
        "print(json.dumps({t.task_id: t.question for t in make_tasks(sys.argv[1:], data_seed=3)}))"
    )
    outputs = []
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", script, *DEFAULT_GENERATORS],
            env={"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
    assert {task_id: outputs[0][task_id] for task_id in first} == first


def test_no_test_question_is_also_a_train_question():
    tasks = make_tasks()
    train = {(task.generator, task.question) for task in tasks if task.split == "train"}
    assert not [task.task_id for task in tasks if task.split == "test" and (task.generator, task.question) in train]
