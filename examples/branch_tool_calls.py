"""A branching rollout of an LLM tool env: G branches from one mid-episode state, each its own next call.

GRPO scores a group of G completions against each other. For a multi-turn agent, a group that
shares a prefix (the prompt and the calls so far) need not replay it G times: the prefix is run
once, the env is forked G ways at that state, and each branch takes its own next call. Here the
agent has run the examples once on ``openenv/CodingTools-v0``; the G next calls are fixed
programs standing in for G samples of a policy, and the group's rewards become GRPO's
advantages (reward minus the group's mean, over its standard deviation)::

    .venv/bin/python examples/branch_tool_calls.py
"""

from __future__ import annotations

import json
import statistics

import gymnasium as gym

import openenv_gym  # noqa: F401 - registers openenv/...
from openenv_gym.snapshot import fork

TASK = "digit-square-sum"
FIRST_TRY = "def digit_square_sum(n):\n    return n\n"

#: The group's next calls: what G samples of a policy might submit from the same state.
CANDIDATES = {
    "returns n": FIRST_TRY,
    "fails on negatives": "def digit_square_sum(n):\n    return sum(int(d) ** 2 for d in str(n))\n",
    "squares the number": "def digit_square_sum(n):\n    return n * n\n",
    "solves it": "def digit_square_sum(n):\n    return sum(int(d) ** 2 for d in str(abs(n)))\n",
}


def call(env: gym.Env, name: str, code: str) -> tuple:
    return env.step(json.dumps({"name": name, "arguments": {"code": code}}))


def branch_rewards(env: gym.Env, candidates: dict[str, str]) -> dict[str, float]:
    """Run the shared prefix once, fork the env once per candidate, and submit each in its branch."""
    env.reset(options={"task_id": TASK})
    call(env, "run_tests", FIRST_TRY)  # the prefix every branch shares: one turn, run once
    branches = fork(env, len(candidates))
    try:
        return {
            name: call(branch, "submit", code)[1]
            for branch, (name, code) in zip(branches, candidates.items(), strict=True)
        }
    finally:
        for branch in branches:
            branch.close()


def advantages(rewards: dict[str, float]) -> dict[str, float]:
    """GRPO's group-relative advantage of each branch."""
    mean = statistics.fmean(rewards.values())
    spread = statistics.pstdev(rewards.values()) or 1.0
    return {name: (reward - mean) / spread for name, reward in rewards.items()}


def main() -> None:
    env = gym.make("openenv/CodingTools-v0")
    try:
        rewards = branch_rewards(env, CANDIDATES)
    finally:
        env.close()
    for name, advantage in advantages(rewards).items():
        print(f"{name:>20}: reward {rewards[name]:.3f}, advantage {advantage:+.2f}")


if __name__ == "__main__":
    main()
