"""Chaos benchmark: faults per minute and recovery time per fault kind, during long vector rollouts.

A ``gym.make_vec("openenv/CartPole-v1", num_envs=8, sessions_per_server=2)`` rollout with random
actions while tests/chaos.py injects faults at random steps: SIGKILL of a server (``docker kill``
of a container), SIGSTOP of a server (the client's ``call_timeout`` must fire) and a connection
cut under the client. Per configuration it prints the faults injected and reported (each must be
reported once), faults per minute, the median recovery of each kind (from the injection to the
return of the step that reports it), the steps done, and what was left afterwards (server
processes, zombies, containers, temp-dir entries). For scale, the median start of one server
(``ProcessProvider.start()``, ``DockerProvider.start()``) measured in the same run: a killed
server's recovery is about one start; a frozen one's, ``call_timeout`` plus one start.

Run from the repository root (the Docker configurations need an engine and the runtime image)::

    .venv/bin/python benchmarks/chaos.py
    .venv/bin/python benchmarks/chaos.py --faults 20 --no-docker
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import gymnasium as gym

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)  # the fault injector lives in the test suite
import openenv_gym  # noqa: E402, F401  (registers the openenv/... ids)
from openenv_gym.errors import DockerUnavailableError  # noqa: E402
from openenv_gym.providers import ProcessProvider  # noqa: E402
from tests.chaos import Chaos, census, rollout  # noqa: E402

PROCESS_CONFIGS: dict[str, dict[str, Any]] = {
    "batch, NextStep": {"vector_backend": "per_env"},
    "batch, SameStep": {"vector_backend": "per_env", "autoreset_mode": "SameStep"},
    "vector backend": {"vector_backend": "gymnasium"},
    "plain sessions": {"batched": False},
}
DOCKER_CONFIGS: dict[str, dict[str, Any]] = {
    "docker, bridge": {"provider": "docker", "network": "bridge", "vector_backend": "per_env"},
    "docker, no network": {"provider": "docker", "network": "none", "vector_backend": "per_env"},
}


def median_start(make: Any, count: int = 5) -> float:
    times = []
    for _ in range(count):
        provider = make()
        started = time.perf_counter()
        provider.start()
        times.append(time.perf_counter() - started)
        provider.stop()
    return statistics.median(times)


def run(name: str, options: dict[str, Any], faults: int, call_timeout: float, docker: Any) -> dict[str, Any]:
    temp_dir = tempfile.mkdtemp(prefix="chaos-benchmark-")
    os.environ["TMPDIR"], tempfile.tempdir = temp_dir, temp_dir  # what is left in it leaked
    try:
        envs = gym.make_vec(
            "openenv/CartPole-v1", num_envs=8, sessions_per_server=2, call_timeout=call_timeout, **options
        )
        chaos = Chaos(envs, faults=faults, steps=12 * faults + 60, seed=faults, docker=docker)
        try:
            done = rollout(envs, chaos)
        finally:
            chaos.stop()
            envs.close()
        figures = chaos.figures(done)
        figures["problems"] = chaos.check()
        time.sleep(1.0)  # removals the engine finishes on its own
        figures["left"] = {key: value for key, value in census(docker, temp_dir).items() if value}
        return figures
    finally:
        del os.environ["TMPDIR"]
        tempfile.tempdir = None
        try:
            os.rmdir(temp_dir)
        except OSError:
            pass  # not empty: reported as left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--faults", type=int, default=40, help="faults per configuration")
    parser.add_argument("--call-timeout", type=float, default=1.5, help="the vector env's call_timeout, s")
    parser.add_argument("--no-docker", action="store_true", help="the process provider only")
    args = parser.parse_args()
    docker = None
    if not args.no_docker:
        from openenv_gym.providers.docker.provider import DockerProvider, docker_client

        try:
            docker = docker_client()
        except DockerUnavailableError as exc:
            print(f"Docker configurations skipped: {exc}")
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} call_timeout={args.call_timeout:g} s")
    print(f"server start, median: process {median_start(lambda: ProcessProvider('CartPole-v1')):.2f} s", end="")
    if docker is not None:
        print(f", docker {median_start(lambda: DockerProvider('CartPole-v1')):.2f} s", end="")
    print()
    configs = dict(PROCESS_CONFIGS)
    if docker is not None:
        configs.update(DOCKER_CONFIGS)
    header = f"{'configuration':20} {'faults':>6} {'reported':>8} {'per min':>7} {'kill':>6} {'freeze':>6} {'cut':>6} {'steps':>6}  left"
    print(header)
    total_faults = total_reported = 0
    total_seconds = 0.0
    for name, options in configs.items():
        figures = run(name, options, args.faults, args.call_timeout, docker if "provider" in options else None)
        recovery = figures["median_recovery_s"]
        total_faults += figures["faults"]
        total_reported += figures["reported"]
        total_seconds += figures["seconds"]
        print(
            f"{name:20} {figures['faults']:6} {figures['reported']:8} {figures['faults_per_min']:7.1f} "
            + " ".join(f"{recovery.get(kind, float('nan')):5.2f}s" for kind in ("kill", "freeze", "cut"))
            + f" {figures['steps']:6}  {figures['left'] or 'nothing'}"
        )
        for problem in figures["problems"]:
            print(f"  problem: {problem}")
    print(
        f"all: {total_faults} faults, {total_reported} reported once each, "
        f"{60 * total_faults / total_seconds:.1f} faults/min"
    )
    if docker is not None:
        docker.close()


if __name__ == "__main__":
    main()
