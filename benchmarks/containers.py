"""Docker provider benchmark: container start, 64 sub-envs ready (cold and warm pool), env-steps/s.

All against the process provider in the same run, so the ratios hold on a noisy machine:

* start-to-healthy of one CartPole-v1 server: ``DockerProvider.start()`` (create, start, first
  ``/health``) against ``ProcessProvider.start()``; p50/p95 over ``--starts`` starts;
* time until ``make_vec("openenv/CartPole-v1", num_envs=64)`` has reset: docker cold, docker from
  the warm pool (the same call again, ``provider_kwargs={"pool": True}``), and process; for the
  default packing (one server per CPU) and for 8 sub-envs per server (8 containers);
* vector env-steps/s at 64 sub-envs, docker against process (the same packing).

Targets (printed, never asserted): start p50 <= 0.5 s; 64 envs ready <= 5 s cold. Needs a Docker
Engine and the runtime image (``make images``). Run from the repository root::

    .venv/bin/python benchmarks/containers.py
    .venv/bin/python benchmarks/containers.py --quick
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

from rollout import steps_per_second, time_ready

import openenv_gym  # registers the openenv/... ids
from openenv_gym.providers import ProcessProvider
from openenv_gym.providers.docker import pool as docker_pool
from openenv_gym.providers.docker.provider import DockerProvider, docker_client

NUM_ENVS = 64


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def time_starts(make: Callable[[], object], count: int) -> list[float]:
    times = []
    for _ in range(count):
        provider = make()
        started = time.perf_counter()
        provider.start()  # type: ignore[attr-defined]
        times.append(time.perf_counter() - started)
        provider.stop()  # type: ignore[attr-defined]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=20, help="starts timed per provider")
    parser.add_argument("--steps", type=int, default=500, help="vector steps timed per config")
    parser.add_argument("--quick", action="store_true", help="5 starts, 100 steps")
    args = parser.parse_args()
    if args.quick:
        args.starts, args.steps = 5, 100
    engine = docker_client().version()
    print(
        f"python {platform.python_version()}, openenv-gym {openenv_gym.__version__}, Docker Engine "
        f"{engine['Version']} (API {engine['ApiVersion']}); {os.cpu_count()} CPUs, load {os.getloadavg()}"
    )
    warm = DockerProvider("CartPole-v1")  # the image is checked (and built if missing) on the first start
    warm.start()
    warm.stop()

    print(f"\nstart-to-healthy of one CartPole-v1 server, s ({args.starts} starts each)")
    docker_times = time_starts(lambda: DockerProvider("CartPole-v1"), args.starts)
    process_times = time_starts(lambda: ProcessProvider("CartPole-v1"), args.starts)
    for name, times in (("docker", docker_times), ("process", process_times)):
        print(
            f"  {name:8s} p50 {percentile(times, 0.5):.3f}  p95 {percentile(times, 0.95):.3f}  mean {statistics.mean(times):.3f}"
        )
    p50 = percentile(docker_times, 0.5)
    print(f"  ratio docker/process p50: {p50 / percentile(process_times, 0.5):.2f}x")
    print(f"  target: docker start p50 <= 0.5 s -> {p50:.3f} s, {'met' if p50 <= 0.5 else 'NOT met'}")

    print(f"\ntime until {NUM_ENVS} CartPole sub-envs are ready (make_vec + reset), s")
    rates: dict[str, float] = {}
    for per_server in (None, 8):
        packing = "one server per CPU" if per_server is None else f"{per_server} sub-envs per server"
        common = {"sessions_per_server": per_server} if per_server else {}
        cold, envs = time_ready(NUM_ENVS, provider="docker", **common)
        if per_server is None:
            rates["docker"] = steps_per_second(envs, args.steps)
        envs.close()
        pool = {"provider_kwargs": {"pool": True}}
        first, envs = time_ready(NUM_ENVS, provider="docker", **common, **pool)
        envs.close()
        from_pool, envs = time_ready(NUM_ENVS, provider="docker", **common, **pool)
        envs.close()
        docker_pool.clear()
        process, envs = time_ready(NUM_ENVS, provider="process", **common)
        if per_server is None:
            rates["process"] = steps_per_second(envs, args.steps)
        envs.close()
        servers = os.cpu_count() if per_server is None else NUM_ENVS // per_server
        print(f"  {packing} ({servers} servers):")
        print(
            f"    docker cold {cold:.2f}  (again, filling the pool: {first:.2f})  docker from the warm pool {from_pool:.2f}  process {process:.2f}"
        )
        print(f"    ratios: cold/process {cold / process:.2f}x, warm/process {from_pool / process:.2f}x")
        print(f"    target: cold <= 5 s -> {cold:.2f} s, {'met' if cold <= 5 else 'NOT met'}")

    print(f"\nvector env-steps/s at {NUM_ENVS} sub-envs (one server per CPU, {args.steps} steps)")
    print(
        f"  docker {rates['docker']:,.0f}  process {rates['process']:,.0f}  ratio docker/process {rates['docker'] / rates['process']:.2f}x"
    )
    print(f"after the run: load {os.getloadavg()}")


if __name__ == "__main__":
    main()
