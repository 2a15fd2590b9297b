"""A Parallel PettingZoo env stepped remotely (every agent batched in one frame) against the same env in-process.

Each round steps PettingZoo's Pistonball (20 pistons, each observing a 457x120x3 uint8 frame:
about 3.3 MB of observations per step) with the same pre-drawn random actions:

* locally, ``pettingzoo.make("parallel", "butterfly/pistonball-v6")``;
* remotely, ``openenv_gym.pettingzoo.make_parallel`` of the same id (one server started on
  loopback; the observations travel as raw bytes, the binary codec);
* remotely with the JSON codec, for scale (``--json``).

It prints agent-steps per second (env steps x live agents) for each and the ratio remote /
local per round; the target, printed and never asserted: remote >= 0.5x local. Run from the
repository root on an otherwise idle machine::

    .venv/bin/python benchmarks/multi_agent.py             # 5 rounds of 200 steps
    .venv/bin/python benchmarks/multi_agent.py --quick     # a smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
import pettingzoo

from openenv_gym.pettingzoo import make_parallel

ENV_ID = "butterfly/pistonball-v6"


def agent_steps_per_second(env: Any, actions: list[dict[str, Any]]) -> float:
    """Step ``env`` through ``actions`` (resetting when every agent is done); agent-steps per second."""
    env.reset(seed=0)
    agent_steps = 0
    start = time.perf_counter()
    for step_actions in actions:
        if not env.agents:
            env.reset()
        live = {agent: step_actions[agent] for agent in env.agents}
        env.step(live)
        agent_steps += len(live)
    return agent_steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="also time the JSON codec")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps = 1, 20
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    local = pettingzoo.make("parallel", ENV_ID)
    remote = make_parallel(ENV_ID)
    remote_json = make_parallel(base_url=remote.base_url, binary=False) if args.json else None
    rng = np.random.default_rng(0)
    actions = [
        {agent: rng.uniform(-1, 1, (1,)).astype(np.float32) for agent in local.possible_agents}
        for _ in range(args.steps)
    ]
    ratios = []
    try:
        agent_steps_per_second(remote, actions[:5])  # warm: the first frames set up the codec's caches
        for round_index in range(args.rounds):
            local_rate = agent_steps_per_second(local, actions)
            remote_rate = agent_steps_per_second(remote, actions)
            ratios.append(remote_rate / local_rate)
            line = (
                f"round {round_index + 1}: local {local_rate:,.0f} agent-steps/s, remote (binary) "
                f"{remote_rate:,.0f} -> {remote_rate / local_rate:.2f}x"
            )
            if remote_json is not None:
                json_rate = agent_steps_per_second(remote_json, actions[: max(10, args.steps // 10)])
                line += f"; remote (JSON) {json_rate:,.0f} -> {json_rate / local_rate:.2f}x"
            print(line, flush=True)
    finally:
        if remote_json is not None:
            remote_json.close()
        remote.close()
        local.close()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    median = statistics.median(ratios)
    print(
        f"target remote >= 0.5x local (Pistonball, 20 agents): median {median:.2f}x -> {'met' if median >= 0.5 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
