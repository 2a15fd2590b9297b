"""A player in a game on a PettingZoo server, run as its own process by tests/test_games.py.

    python tests/game_player.py URL ENV_ID AGENT GAME [--episodes N] [--seed S] [--stall-after K]

Plays random legal moves as AGENT in game GAME and prints one JSON line per episode (its
return, steps, flags, and the info of its last step). With ``--stall-after K`` it stops acting
after K steps (sleeping, still connected), as a player that hangs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  registers the openenv/ ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("env_id")
    parser.add_argument("agent")
    parser.add_argument("game")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stall-after", type=int, default=None)
    parser.add_argument("--turn-timeout", type=float, default=None)
    arguments = parser.parse_args()
    env = gym.make(
        arguments.env_id,
        base_url=arguments.url,
        agent=arguments.agent,
        game=arguments.game,
        turn_timeout=arguments.turn_timeout,
        call_timeout=120,
    )
    rng = np.random.default_rng(arguments.seed)
    print(json.dumps({"joined": arguments.agent}), flush=True)
    for episode in range(arguments.episodes):
        observation, info = env.reset(seed=arguments.seed + episode)
        total, steps, terminated, truncated = 0.0, 0, False, False
        while not (terminated or truncated):
            if arguments.stall_after is not None and steps >= arguments.stall_after:
                print(json.dumps({"stalled": steps}), flush=True)
                time.sleep(3600)
            legal = np.flatnonzero(observation["action_mask"])
            observation, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
            total += reward
            steps += 1
        print(
            json.dumps(
                {"return": total, "steps": steps, "terminated": terminated, "truncated": truncated, "info": info}
            ),
            flush=True,
        )
    env.close()


if __name__ == "__main__":
    sys.exit(main())
