"""Train Stable-Baselines3 PPO on remote CartPole: 16 sub-envs as one vector env on an env server, stepped through shared memory.

Run with ``make demo`` (or ``.venv/bin/python examples/train_ppo.py``). The environment servers
start behind ``gym.make_vec``; PPO trains with a progress bar, then the script evaluates the
policy and prints its mean return and the env-steps/s seen during training. With the default
budget (100,000 steps, RL Zoo's CartPole hyperparameters) the mean return reaches 500, the
maximum; a random policy gets about 22.
"""

from __future__ import annotations

import argparse
import time

from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy

import openenv_gym


def linear(start: float):
    """A schedule falling linearly from ``start`` to 0 over training, as RL Zoo uses."""
    return lambda progress_remaining: progress_remaining * start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=20)
    args = parser.parse_args()

    started = time.perf_counter()
    venv = openenv_gym.make_sb3_vec_env("openenv/CartPole-v1", n_envs=args.envs)
    print(f"{args.envs} remote CartPole sub-envs ready in {time.perf_counter() - started:.2f} s")
    metadata = venv.unwrapped.venv.metadata  # the RemoteVectorEnv under SB3's VecMonitor and our adapter
    print(f"stepped by: {metadata['vector_backend']} ({metadata['vector_backend_reason']})")
    try:
        venv.seed(args.seed)
        # RL Zoo's tuned PPO hyperparameters for CartPole-v1.
        model = PPO(
            "MlpPolicy",
            venv,
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(0.001),
            clip_range=linear(0.2),
            seed=args.seed,
            verbose=0,
        )
        started = time.perf_counter()
        model.learn(args.timesteps, progress_bar=True)
        elapsed = time.perf_counter() - started
        mean, std = evaluate_policy(model, venv, n_eval_episodes=args.eval_episodes, deterministic=True)
    finally:
        venv.close()
    print(
        f"trained {args.timesteps:,} steps in {elapsed:.1f} s: {args.timesteps / elapsed:,.0f} env-steps/s "
        f"(including PPO's own updates)"
    )
    print(f"mean return over {args.eval_episodes} episodes: {mean:.1f} +/- {std:.1f} (solved at 475, max 500)")


if __name__ == "__main__":
    main()
