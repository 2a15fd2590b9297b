"""Batch-session codecs compared in one run: JSON vs binary, on CartPole and on 84x84x3 uint8 frames.

Run from the repository root: ``.venv/bin/python benchmarks/codec.py`` (``--quick`` for a smoke
run). Prints env-steps/s of ``RemoteVectorEnv`` with ``codec="json"`` and ``codec="binary"`` and
their ratio. The frames come from ``tests.testing_env:make_pixels``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from servers import REPO_ROOT

import openenv_gym  # noqa: F401
from openenv_gym.vector import RemoteVectorEnv

CASES = {  # name: (server target, actions per sub-env, timed steps for json, for binary)
    "CartPole-v1 (4 floats)": ("CartPole-v1", 2, 500, 500),
    "pixels 84x84x3 uint8": ("tests.testing_env:make_pixels", 4, 40, 400),
}


def rate(target: str, actions: int, codec: str, num_envs: int, steps: int) -> float:
    """env-steps/s of one RemoteVectorEnv over ``steps`` random steps, after a short warm-up."""
    rng = np.random.default_rng(0)
    envs = RemoteVectorEnv(target, num_envs=num_envs, codec=codec)
    try:
        envs.reset(seed=0)
        for _ in range(10):
            envs.step(rng.integers(0, actions, num_envs))
        started = time.perf_counter()
        for _ in range(steps):
            envs.step(rng.integers(0, actions, num_envs))
        return num_envs * steps / (time.perf_counter() - started)
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = REPO_ROOT  # the servers import tests.testing_env
    print(f"2 codecs, num_envs={args.envs}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'observations':<26}{'json':>10}{'binary':>10}{'binary/json':>13}")
    for name, (target, actions, json_steps, binary_steps) in CASES.items():
        scale = 10 if args.quick else 1
        json_rate = rate(target, actions, "json", args.envs, max(json_steps // scale, 5))
        binary_rate = rate(target, actions, "binary", args.envs, max(binary_steps // scale, 5))
        print(f"{name:<26}{json_rate:>10,.0f}{binary_rate:>10,.0f}{binary_rate / json_rate:>12.1f}x")


if __name__ == "__main__":
    main()
