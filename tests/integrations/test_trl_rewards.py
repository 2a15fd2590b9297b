"""Reward parts in TRL: the env's components and a reward function of the user's reach GRPOTrainer's
logged rewards, each under its own name, on ReasoningGym-v0 with a tiny model made here."""

from __future__ import annotations

import math
from statistics import mean
from typing import Any

import gymnasium as gym
import pytest
from trl import GRPOTrainer

import openenv_gym
from openenv_gym.integrations.trl import component_reward, env_reward, rollout_func
from openenv_gym.rewards import RewardFunction
from openenv_gym.task_sampling import PassRateCurriculum
from openenv_gym.trajectories import Trajectory
from tests.integrations.test_trl import TRL_DEPRECATION, chat_tokenizer, grpo_config
from tests.integrations.tiny_lm import overfit, tiny_model
from tests.utils import UNIT, own_server_pids, wait_until

pytest.importorskip("reasoning_gym")


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def brevity(trajectory: Trajectory) -> float:
    """A part of the user's: 1 for an answer of at most 4 characters, less as it grows."""
    return min(1.0, 4 / max(1, len(trajectory.actions[0])))


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_env_components_and_a_user_reward_reach_trls_logged_rewards(tmp_path):
    before = own_server_pids()
    rollout = rollout_func("openenv/ReasoningGym-v0", generators=["gcd"], rewards=[RewardFunction(brevity, weight=0.0)])
    try:
        rows = rollout.dataset([{"options": {"split": "test", "index": index}} for index in range(2)])
        answers = {}
        for row in rows:
            question = row["prompt"][-1]["content"]
            numbers = [int(word) for word in question.replace(",", " ").replace(".", " ").split() if word.isdigit()]
            answers[question] = str(math.gcd(*numbers))
        completion = f"{answers[rows[0]['prompt'][-1]['content']]}<|im_end|>"
        tokenizer = chat_tokenizer([row["prompt"] for row in rows], completion)
        seen: list[list[tuple[Any, dict[str, float]]]] = []

        def record(completions: list[Any], env_reward: list[Any], env_reward_components: list[Any], **_: Any):
            seen.append(list(zip(env_reward, env_reward_components, strict=True)))
            return [None] * len(completions)

        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=[env_reward, component_reward("verifier"), component_reward("brevity"), record],
            args=grpo_config(tmp_path, per_device_train_batch_size=4, max_completion_length=32),
            train_dataset=rows,
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        rendered = tokenizer.apply_chat_template(
            rows[0]["prompt"], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        assert overfit(trainer.model, rendered, tokenizer.encode(completion, add_special_tokens=False)) <= 0.01
        trainer.train()

        logged = [entry for entry in trainer.state.log_history if "rewards/verifier/mean" in entry]
        assert len(logged) == len(seen) == 2
        for entry, step in zip(logged, seen):
            assert entry["rewards/env_reward/mean"] == pytest.approx(mean(reward for reward, _ in step))
            assert entry["rewards/verifier/mean"] == pytest.approx(mean(parts["verifier"] for _, parts in step))
            assert entry["rewards/brevity/mean"] == pytest.approx(mean(parts["brevity"] for _, parts in step))
            # The env's component is its whole reward (ReasoningGym-v0's composition: verifier x 1).
            assert [reward for reward, _ in step] == [parts["verifier"] for _, parts in step]
        assert 1.0 in [parts["verifier"] for step in seen for _, parts in step]  # the taught answer scored
        assert all(0 < parts["brevity"] <= 1 for step in seen for _, parts in step)
    finally:
        rollout.close()
    assert wait_until(lambda: not (own_server_pids() - before), 15 * UNIT)


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_a_task_sampler_picks_each_groups_task_and_hears_its_rewards(tmp_path):
    """With a curriculum, each group of num_generations completions plays the task the sampler picked
    (the rows only size the batch): a twin sampler fed the same group rewards picks the same tasks,
    and each completion re-played on its task on a fresh env gets the reward the trainer saw."""
    before = own_server_pids()
    catalog = openenv_gym.tasks("openenv/ReasoningGym-v0", generators=["gcd"])
    test_ids = catalog.ids(split="test")
    rollout = rollout_func(
        "openenv/ReasoningGym-v0", generators=["gcd"], sampler=PassRateCurriculum(test_ids, explore=0.5, seed=3)
    )
    try:
        rows = rollout.dataset([{"options": {"task_id": task_id}} for task_id in test_ids[:2]])
        tokenizer = chat_tokenizer([row["prompt"] for row in rows], "12<|im_end|>")
        seen: list[list[tuple[str, str, float]]] = []

        def record(completions: list[Any], env_task_id: list[str], env_reward: list[Any], **_: Any):
            texts = [completion[0]["content"] for completion in completions]
            seen.append(list(zip(env_task_id, texts, env_reward, strict=True)))
            return [None] * len(completions)

        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            reward_funcs=[env_reward, record],
            args=grpo_config(tmp_path, per_device_train_batch_size=4, max_completion_length=16),
            train_dataset=rows,
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        trainer.train()
    finally:
        rollout.close()
    assert len(seen) == 2 and all(len(step) == 4 for step in seen)
    twin = PassRateCurriculum(test_ids, explore=0.5, seed=3)
    for step in seen:  # a batch's groups are sampled first, then the sampler hears each
        groups = [step[0:2], step[2:4]]
        assert [twin.sample() for _ in groups] == [group[0][0] for group in groups] == [group[1][0] for group in groups]
        for group in groups:
            twin.update(group[0][0], [reward for *_, reward in group])
    assert twin.counts() == rollout.sampler.counts()
    env = gym.make("openenv/ReasoningGym-v0", generators=["gcd"])
    try:
        for task_id, text, reward in (item for step in seen for item in step):
            env.reset(options={"task_id": task_id})
            assert env.step(text)[1] == reward
    finally:
        env.close()
    assert wait_until(lambda: not (own_server_pids() - before), 15 * UNIT)
