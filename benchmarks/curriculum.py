"""Task sampling against a synthetic policy: the share of GRPO groups with zero reward variance.

No model is needed: a synthetic policy solves task ``i`` with a fixed probability ``p[i]``,
drawn from a U-shaped Beta(0.25, 0.25) (most tasks nearly always or nearly never solved, as in
a real task set against a small model). Each step samples a task and plays a group of ``G``
episodes on it; a group whose episodes all succeed or all fail has zero variance (no gradient
in GRPO). It prints that share for uniform sampling and for ``PassRateCurriculum`` over the same
number of groups, per seed, and their ratio; the target, printed and never asserted here: the
curriculum's share at most 0.4x uniform's. Run from the repository root::

    .venv/bin/python benchmarks/curriculum.py
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from openenv_gym.task_sampling import PassRateCurriculum, TaskSampler, UniformSampler


def success_rates(tasks: int, seed: int) -> np.ndarray:
    """Each task's chance of being solved, U-shaped."""
    return np.random.default_rng(seed).beta(0.25, 0.25, tasks)


def zero_variance_share(sampler: TaskSampler, rates: np.ndarray, groups: int, group_size: int, seed: int) -> float:
    """Play ``groups`` groups of ``group_size`` episodes on the tasks ``sampler`` picks (ids are
    the tasks' indices as text); the share of groups with zero reward variance."""
    rng = np.random.default_rng(seed)
    zero = 0
    for _ in range(groups):
        task = sampler.sample()
        assert task is not None
        rewards = (rng.random(group_size) < rates[int(task)]).astype(float)
        zero += bool(rewards.min() == rewards.max())
        sampler.update(task, rewards.tolist())
    return zero / groups


def compare(tasks: int = 200, groups: int = 3000, group_size: int = 8, seed: int = 0) -> tuple[float, float]:
    """Uniform's and the curriculum's zero-variance shares on one synthetic task set."""
    rates = success_rates(tasks, seed)
    ids = [str(index) for index in range(tasks)]
    uniform = zero_variance_share(UniformSampler(ids, seed=seed), rates, groups, group_size, seed + 1)
    curriculum = zero_variance_share(PassRateCurriculum(ids, seed=seed), rates, groups, group_size, seed + 1)
    return uniform, curriculum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    ratios = []
    for seed in range(args.seeds):
        uniform, curriculum = compare(args.tasks, args.groups, args.group_size, seed)
        ratios.append(curriculum / uniform)
        print(
            f"seed {seed}: zero-variance groups, uniform {uniform:.1%}, curriculum {curriculum:.1%} "
            f"-> {curriculum / uniform:.2f}x"
        )
    median = statistics.median(ratios)
    print(f"target curriculum <= 0.4x uniform: median {median:.2f}x -> {'met' if median <= 0.4 else 'NOT met'}")


if __name__ == "__main__":
    main()
