"""Task samplers: uniform, sequential, and the pass-rate curriculum against a synthetic policy."""

from __future__ import annotations

import collections

import pytest

from benchmarks.curriculum import compare
from openenv_gym.task_sampling import PassRateCurriculum, SequentialSampler, UniformSampler, pass_rate

TASKS = [f"t{index}" for index in range(10)]


def test_uniform_sampling_is_seeded_and_covers_the_tasks() -> None:
    first = [UniformSampler(TASKS, seed=3).sample() for _ in range(1)]
    sampler, again = UniformSampler(TASKS, seed=3), UniformSampler(TASKS, seed=3)
    drawn = [sampler.sample() for _ in range(500)]
    assert drawn == [again.sample() for _ in range(500)] and drawn[:1] == first
    assert set(drawn) == set(TASKS)


def test_sequential_sampling_hands_out_each_task_once() -> None:
    sampler = SequentialSampler(TASKS, seed=1)
    drawn = [sampler.sample() for _ in range(len(TASKS))]
    assert sorted(drawn) == sorted(TASKS) and drawn != TASKS  # shuffled by the seed
    assert sampler.sample() is None and sampler.remaining == 0
    assert [SequentialSampler(TASKS).sample() for _ in range(1)] == ["t0"]


def test_pass_rate_counts_rewards_from_the_threshold_up() -> None:
    assert pass_rate([1.0, 0.5, 1.0, 0.0]) == 0.5
    assert pass_rate([0.6, 0.4], success_at=0.5) == 0.5
    with pytest.raises(ValueError):
        pass_rate([])


def test_the_curriculum_drops_solved_and_failed_tasks_and_keeps_the_informative_ones() -> None:
    sampler = PassRateCurriculum(TASKS, explore=0.0, recheck=0.0, seed=0)
    assert sampler.counts() == {"informative": 0, "dropped": 0, "unseen": 10}
    sampler.update("t0", [1.0] * 8)  # always solved
    sampler.update("t1", [0.0] * 8)  # never solved
    sampler.update("t2", [1.0, 0.0] * 4)  # half the time
    assert sampler.counts() == {"informative": 1, "dropped": 2, "unseen": 7}
    assert {sampler.sample() for _ in range(50)} == {"t2"}  # no exploring, no re-checking asked for
    sampler.update("t2", [1.0] * 8)
    sampler.update("t2", [1.0] * 8)  # solved in both groups of the window: dropped
    assert sampler.counts()["informative"] == 0
    assert {sampler.sample() for _ in range(200)} <= set(TASKS[3:])  # unseen first when none is informative


def test_the_curriculum_explores_unseen_and_rechecks_dropped_tasks() -> None:
    sampler = PassRateCurriculum(TASKS, explore=0.2, recheck=0.2, seed=0)
    sampler.update("t0", [1.0] * 8)
    sampler.update("t1", [1.0, 0.0] * 4)
    counts = collections.Counter(sampler.sample() for _ in range(2000))
    assert 0.12 < counts["t0"] / 2000 < 0.28  # re-checked about a fifth of the time
    assert 0.52 < counts["t1"] / 2000 < 0.68  # the informative one the rest
    assert 0.12 < sum(counts[task] for task in TASKS[2:]) / 2000 < 0.28


def test_the_curriculum_refuses_bad_settings_and_unknown_tasks() -> None:
    with pytest.raises(ValueError, match="window"):
        PassRateCurriculum(TASKS, window=0)
    with pytest.raises(ValueError, match="add up to at most 1"):
        PassRateCurriculum(TASKS, explore=0.7, recheck=0.5)
    with pytest.raises(ValueError, match="at least one task"):
        UniformSampler([])
    with pytest.raises(KeyError, match="not one of"):
        PassRateCurriculum(TASKS).update("t99", [1.0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_curriculum_cuts_zero_variance_groups_to_under_40_percent_of_uniforms(seed: int) -> None:
    """200 tasks with U-shaped success rates, groups of 8 (benchmarks/curriculum.py prints the figures)."""
    uniform, curriculum = compare(tasks=200, groups=3000, group_size=8, seed=seed)
    assert uniform > 0.5  # most uniform groups are wasted on this task set
    assert curriculum <= 0.4 * uniform
