"""Ray provider benchmark: vector env-steps/s with servers placed by Ray against the process provider.

Both run the same servers (one per CPU, the default packing) on this machine in the same run; the
rounds alternate ray, process, ray, process... so a noisy neighbour hits both alike. Also the time
until ``make_vec(..., num_envs=N)`` has reset, for each. Ray only places the servers: a step goes
straight from the client to the server, so the target is steps/s ray/process >= 0.8 (printed,
never asserted). The local Ray instance is started here (its start-up time is printed too). Run
from the repository root::

    .venv/bin/python benchmarks/ray_vector.py
    .venv/bin/python benchmarks/ray_vector.py --quick
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import ray
from rollout import steps_per_second, time_ready

import openenv_gym

TARGET = 0.8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="vector steps timed per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per provider")
    parser.add_argument("--quick", action="store_true", help="200 steps, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds = 200, 2
    cpus = os.cpu_count() or 1
    started = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - started
    print(
        f"python {platform.python_version()}, openenv-gym {openenv_gym.__version__}, ray {ray.__version__}; "
        f"{cpus} CPUs, load {os.getloadavg()}; local Ray instance started in {ray_start:.2f} s"
    )
    try:
        run(args, cpus)
    finally:
        ray.shutdown()
    print(f"\nafter the run: load {os.getloadavg()}")


def run(args: argparse.Namespace, cpus: int) -> None:
    providers = {
        # Loopback, as the process provider: only placement differs. One CPU per server (the default).
        "ray": {"provider": "ray", "host": "127.0.0.1"},
        "process": {"provider": "process"},
    }
    for num_envs in (8, 64):
        rates: dict[str, list[float]] = {name: [] for name in providers}
        ready: dict[str, list[float]] = {name: [] for name in providers}
        for _ in range(args.rounds):
            for name, options in providers.items():
                seconds, envs = time_ready(num_envs, servers=cpus, **options)
                try:
                    rates[name].append(steps_per_second(envs, args.steps))
                finally:
                    envs.close()
                ready[name].append(seconds)
        rate = {name: statistics.median(values) for name, values in rates.items()}
        ratio = rate["ray"] / rate["process"]
        print(f"\nCartPole-v1, num_envs={num_envs} on {cpus} servers, {args.steps} steps x {args.rounds} rounds")
        for name in providers:
            print(
                f"  {name:8s} {rate[name]:9,.0f} env-steps/s (rounds: {', '.join(f'{r:,.0f}' for r in rates[name])})"
                f"   ready in {statistics.median(ready[name]):.2f} s"
            )
        print(f"  ratio ray/process {ratio:.2f}x; target >= {TARGET}x: {'met' if ratio >= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
