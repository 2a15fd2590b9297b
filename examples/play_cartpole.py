"""Play CartPole on a remote env server through plain Gymnasium code, and report what happened.

Run with ``.venv/bin/python examples/play_cartpole.py`` (``make demo`` trains PPO instead). A local server
process starts behind ``gym.make``; a random policy and a simple balancing policy each play a few
episodes; the script prints their returns and the steps per second of the remote env, next to
the same loop on Gymnasium's local CartPole.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the openenv/... ids)


def balance(obs: np.ndarray) -> int:
    """Push the cart toward the side the pole is falling to."""
    _, _, angle, angular_velocity = obs
    return int(angle + 0.5 * angular_velocity > 0)


def play(env: gym.Env, policy: str, episodes: int, seed: int) -> tuple[list[float], int, float]:
    """Returns per episode, the number of steps, and the seconds spent in reset/step."""
    returns, steps, elapsed = [], 0, 0.0
    env.action_space.seed(seed)
    for episode in range(episodes):
        started = time.perf_counter()
        obs, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            action = env.action_space.sample() if policy == "random" else balance(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            steps += 1
            done = terminated or truncated
        elapsed += time.perf_counter() - started
        returns.append(total)
    return returns, steps, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    env = gym.make("openenv/CartPole-v1")
    print(f"made {env} in {time.perf_counter() - started:.2f} s, server at {env.unwrapped.base_url}")
    try:
        for policy in ("random", "balance"):
            returns, steps, elapsed = play(env, policy, args.episodes, args.seed)
            print(
                f"{policy:>8} policy: returns {[round(r) for r in returns]}, mean {np.mean(returns):.1f}; "
                f"{steps} remote steps at {steps / elapsed:,.0f} steps/s"
            )
    finally:
        env.close()
    local = gym.make("CartPole-v1")
    _, steps, elapsed = play(local, "balance", args.episodes, args.seed)
    print(f"   local CartPole-v1 (same loop, in process): {steps / elapsed:,.0f} steps/s")
    print("server stopped" if not env.unwrapped.provider.is_alive() else "server still running!")


if __name__ == "__main__":
    main()
