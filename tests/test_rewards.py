"""Rewards in parts: the composition's arithmetic, and on every shipped task env the reward each
step pays is its published composition of the components it returns."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.envs.git.tasks import ToolCall
from openenv_gym.envs.git.tasks import load_tasks as git_tasks
from openenv_gym.rewards import Composition, RewardFunction, RewardPart, load_reward_function, reward_functions
from tests.envs.coding_reference import SOLUTIONS


def test_gates_multiply_and_weights_add():
    composition = Composition((RewardPart("a", 2.0), RewardPart("b", -1.0), RewardPart("ok", gate=True)))
    assert composition.combine({"a": 0.5, "b": 0.25, "ok": 1.0}) == 0.75
    assert composition.combine({"a": 0.5, "b": 0.25, "ok": 0.0}) == 0.0
    assert composition.combine({"a": 1.0}) == 0.0  # a missing gate counts 0: fail closed
    with pytest.raises(ValueError, match=r"components \['c'\] are not parts"):
        composition.combine({"c": 1.0})
    assert Composition.from_schema(composition.describe()) == composition


def test_reward_functions_are_named_and_checked():
    def length(trajectory):
        return trajectory.length

    made = reward_functions([length, RewardFunction(lambda step: 1.0, name="alive", per="step")])
    assert [(f.name, f.per, f.weight) for f in made] == [("length", "episode", 1.0), ("alive", "step", 1.0)]
    with pytest.raises(ValueError, match="distinct names"):
        reward_functions([length, length])
    with pytest.raises(ValueError, match="per must be"):
        RewardFunction(length, per="turn")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="returned 'x', not a number"):
        RewardFunction(lambda t: "x", name="bad").on_episode(None)  # type: ignore[arg-type]
    loaded = load_reward_function("tests.test_trajectories:upright", weight=0.5, per="step")
    assert (loaded.name, loaded.weight, loaded.per) == ("upright", 0.5, "step")
    with pytest.raises(ValueError, match="module:attr"):
        load_reward_function("upright")


def composition_of(env) -> Composition:
    schema = openenv_gym.client.http_get_json(env.unwrapped.base_url, "/schema")
    return Composition.from_schema(schema["reward"])


def test_coding_pays_its_composition_of_its_components():
    env = gym.make("openenv/Coding-v0", reward="fraction")
    try:
        composition = composition_of(env)
        assert [part.name for part in composition.parts] == ["tests"]
        env.reset(options={"task_id": "digit-square-sum"})
        for code in ("def digit_square_sum(n):\n    return 0\n", SOLUTIONS["digit-square-sum"]):
            _, reward, *_, info = env.step(code)
            assert reward == composition.combine(info["reward_components"])
        assert reward > 0
    finally:
        env.close()


def test_coding_tools_and_git_pay_their_compositions_through_the_tool_face():
    coding = gym.make("openenv/CodingTools-v0", reward="binary")
    try:
        composition = composition_of(coding)
        coding.reset(options={"task_id": "digit-square-sum"})
        submit = {"name": "submit", "arguments": {"code": SOLUTIONS["digit-square-sum"]}}
        _, reward, terminated, _, info = coding.step(json.dumps(submit))
        assert (reward, terminated) == (1.0, True) and reward == composition.combine(info["reward_components"])
    finally:
        coding.close()
    task = next(task for task in git_tasks() if task.difficulty == "easy")
    git = gym.make("openenv/Git-v0")
    try:
        composition = composition_of(git)
        assert [part.name for part in composition.parts] == ["checks"]
        git.reset(options={"task_id": task.task_id})
        for call in [*(c for c in task.solution if c.tool != "submit"), ToolCall(tool="submit")]:
            _, reward, terminated, _, info = git.step(json.dumps({"name": call.tool, "arguments": call.arguments}))
        assert terminated and reward == 1.0 == composition.combine(info["reward_components"])
    finally:
        git.close()


def test_reasoning_gym_pays_its_composition():
    env = gym.make("openenv/ReasoningGym-v0", generators=["gcd"])
    try:
        composition = composition_of(env)
        for answer in ("", "1", "no"):
            env.reset(seed=0)
            _, reward, *_, info = env.step(answer)
            assert reward == composition.combine(info["reward_components"])
    finally:
        env.close()
