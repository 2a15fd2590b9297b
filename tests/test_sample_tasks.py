"""SampleTasks: a vector env's episodes play the sampler's tasks, in groups, and the sampler hears
each group's returns; the episodes' ends autoreset in the same step."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.envs.reasoning import ReasoningGymEnvironment
from openenv_gym.task_sampling import PassRateCurriculum
from openenv_gym.wrappers import RecordVectorEpisodes, SampleTasks

pytest.importorskip("reasoning_gym")


class Listening:
    """A curriculum that keeps what it handed out and what it heard."""

    def __init__(self, tasks):
        self.curriculum = PassRateCurriculum(tasks, explore=0.3, seed=1)
        self.sampled, self.heard = [], []

    def sample(self):
        self.sampled.append(self.curriculum.sample())
        return self.sampled[-1]

    def update(self, task_id, rewards):
        self.heard.append((task_id, list(rewards)))
        self.curriculum.update(task_id, rewards)


def test_groups_of_episodes_play_the_sampled_tasks_and_report_their_returns():
    local = ReasoningGymEnvironment(generators=["gcd"])
    answers = {task.task_id: task.answer for task in local.task_set.tasks}
    envs = gym.make_vec("openenv/ReasoningGym-v0", num_envs=3, generators=["gcd"], autoreset_mode="Disabled")
    ids = openenv_gym.tasks("openenv/ReasoningGym-v0", generators=["gcd"]).ids(split="train")[:6]
    sampler = Listening(ids)
    envs = RecordVectorEpisodes(SampleTasks(envs, sampler, group_size=2))
    rng = np.random.default_rng(0)
    try:
        _, infos = envs.reset(seed=5)
        current = list(infos["task_id"])
        played = []
        while len(sampler.heard) < 8:
            # Right half the time: every task's pass rate is somewhere in between.
            actions = [answers[task] if rng.random() < 0.5 else "0" for task in current]
            _, rewards, terminated, _, infos = envs.step(actions)
            assert terminated.all() and infos["_final_obs"].all()  # one answer per episode, reset in the step
            played += [(task, float(reward)) for task, reward in zip(current, rewards)]
            current = list(infos["task_id"])
    finally:
        envs.close()
    # Each sampled task made groups of two episodes; the sampler heard exactly their returns.
    assert {task_id for task_id, _ in sampler.heard} <= set(sampler.sampled)
    by_task: dict[str, list[float]] = {}
    for task, reward in played:
        by_task.setdefault(task, []).append(reward)
    heard: dict[str, list[float]] = {}
    for task_id, returns in sampler.heard:
        assert len(returns) == 2
        heard.setdefault(task_id, []).extend(returns)
    for task_id, returns in heard.items():
        assert sorted(returns) == sorted(by_task[task_id][: len(returns)])
    assert all(task in ids for task in by_task)
    # The recorder above it saw SAME_STEP autoresets: one record per episode, each on its task.
    assert len(envs.episodes) == len(played)
    assert [episode.task_id for episode in envs.episodes] == [task for task, _ in played]


def test_the_env_must_not_autoreset_itself():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2)
    try:
        with pytest.raises(ValueError, match="autoreset_mode='Disabled'"):
            SampleTasks(envs, PassRateCurriculum(["a"]))
    finally:
        envs.close()


def test_task_groups_on_the_pool_play_the_sampled_task_and_report_their_returns():
    """TaskGroup.start resets a group of pool sessions to the sampler's task; finish tells the
    sampler the returns and gives the sessions back."""
    from openenv_gym.task_groups import TaskGroup

    local = ReasoningGymEnvironment(generators=["gcd"])
    answers = {task.task_id: task.answer for task in local.task_set.tasks}
    ids = sorted(answers)[:5]
    sampler = Listening(ids)

    async def run() -> None:
        async with openenv_gym.AsyncEnvPool("openenv/ReasoningGym-v0", size=4, generators=["gcd"]) as pool:
            for round_ in range(4):
                group = await TaskGroup.start(pool, sampler, size=4, seed=round_)
                assert {info["task_id"] for info in group.infos} == {group.task_id} == {sampler.sampled[-1]}
                assert pool.in_use == 4
                answers_given = [answers[group.task_id] if i % 2 else "0" for i in range(4)]
                results = await asyncio.gather(*(env.step(a) for env, a in zip(group.envs, answers_given)))
                await group.finish([reward for _, reward, *_ in results])
                assert pool.in_use == 0
                assert sampler.heard[-1] == (group.task_id, [reward for _, reward, *_ in results])

    asyncio.run(run())
    assert len(sampler.heard) == 4
