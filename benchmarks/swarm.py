"""Swarm provider benchmark: 16 CartPole-v1 servers started on Docker Swarm against the Docker provider.

Each round starts a fleet of 16 servers (``Fleet.start``: in parallel, every server answering
``/health``) with ``provider="swarm"`` and with ``provider="docker"``, in alternating order, and
times until the whole fleet is up; then the time to release it (``Fleet.close``, and until its
containers are gone: a removed service's stop after the call returns). It prints every
round's times and the swarm/docker ratio, and the median ratio. Then the recovery of one server
whose task was killed: until Swarm's replacement answers (swarm) against until a new container
answers (docker), both through ``Fleet.recover``. And one Coding-v0 server, whose Swarm task is a
launcher that starts the server in a container of the node's own, against the Docker provider's.

Needs a Docker Engine with the runtime image (``make images``). If the engine is in no swarm,
the benchmark makes it a single-node swarm manager (``docker swarm init --advertise-addr
127.0.0.1``) and leaves the swarm at the end. Run from the repository root on an idle machine::

    .venv/bin/python benchmarks/swarm.py
    .venv/bin/python benchmarks/swarm.py --rounds 1 --servers 4

``--host-loss`` times instead, on three simulated hosts (``tests/swarm_cluster.py``; root), the
loss of a whole host under one of three servers: from the kill until ``Fleet.recover`` has that
server serving again on another host, with Swarm's default 5 s dispatcher heartbeat and a 1 s one.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.swarm_cluster, for --host-loss

import openenv_gym
from openenv_gym.providers.docker.owners import OWNER_PID
from openenv_gym.providers.docker.provider import docker_client
from openenv_gym.providers.fleet import Fleet, Layout

CODING = "openenv_gym.envs.coding:CodingEnvironment"


def timed_fleet(provider: str, servers: int, target: str = "CartPole-v1") -> tuple[float, Fleet]:
    """Seconds until ``servers`` servers of ``target`` answer, and their fleet."""
    fleet = Fleet.of(target, provider=provider, layout=Layout(servers, 1))
    started = time.perf_counter()
    fleet.start()
    return time.perf_counter() - started, fleet


def timed_close(client, fleet: Fleet) -> float:
    """Seconds until the fleet's containers are gone (a removed service's go after the call returns)."""
    started = time.perf_counter()
    fleet.close()
    mine = {"label": f"{OWNER_PID}={os.getpid()}"}
    while client.api.containers(all=True, filters=mine):
        time.sleep(0.05)
    return time.perf_counter() - started


def kill_one(client, fleet: Fleet, provider: str) -> None:
    victim = fleet.providers[0]
    if provider == "swarm":
        label = f"com.docker.swarm.service.id={victim.service_id}"  # type: ignore[attr-defined]
        (container,) = client.containers.list(filters={"label": label})
    else:
        container = client.containers.get(victim.container_id)  # type: ignore[attr-defined]
    container.kill()


def timed_recovery(client, provider: str) -> float:
    """Seconds from killing one server's container until ``Fleet.recover`` has it serving again."""
    fleet = Fleet.of("CartPole-v1", provider=provider, layout=Layout(2, 1))
    fleet.start()
    try:
        kill_one(client, fleet, provider)
        started = time.perf_counter()
        fleet.recover(0)
        return time.perf_counter() - started
    finally:
        fleet.close()


def timed_host_loss(heartbeat: float) -> tuple[float, str]:
    """On three simulated hosts (tests/swarm_cluster.py, root): kill the host of one of three
    servers; seconds until ``Fleet.recover`` has that server serving on another host, and the
    manager's view of the lost node by then."""
    import contextlib

    from openenv_gym.providers.docker.images import RUNTIME_IMAGE, ensure_image
    from tests.swarm_cluster import SimulatedSwarm

    root = docker_client()
    try:
        ensure_image(root, RUNTIME_IMAGE)  # current with this code, to be copied to every host
    finally:
        root.close()
    with SimulatedSwarm(hosts=3, images=(RUNTIME_IMAGE,), heartbeat=heartbeat) as swarm:
        saved = os.environ.get("DOCKER_HOST")
        os.environ["DOCKER_HOST"] = swarm.docker_host
        try:
            fleet = Fleet.of("CartPole-v1", provider="swarm", layout=Layout(3, 1))
            fleet.start()
            try:
                hosts = [swarm.host_of(url.split("//")[1].rsplit(":", 1)[0]) for url in fleet.urls]
                lost = next(server for server, host in enumerate(hosts) if host != 0)
                started = time.perf_counter()
                swarm.kill_host(hosts[lost])
                fleet.recover(lost)
                elapsed = time.perf_counter() - started
                return elapsed, swarm.node_states()[swarm.namespaces[hosts[lost]]]
            finally:
                with contextlib.suppress(Exception):
                    fleet.close()
        finally:
            if saved is None:
                os.environ.pop("DOCKER_HOST", None)
            else:
                os.environ["DOCKER_HOST"] = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=16, help="servers per fleet")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (each starts a fleet of both providers)")
    parser.add_argument(
        "--host-loss", action="store_true", help="only the host-loss part, on three simulated hosts (needs root)"
    )
    args = parser.parse_args()
    if args.host_loss:
        print(f"{os.cpu_count()} CPUs, load {os.getloadavg()}")
        print("a host of one of 3 servers killed, until Fleet.recover has it serving on another host, s")
        for heartbeat in (5.0, 1.0):  # Swarm's default dispatcher heartbeat, and a short one
            for round_ in range(args.rounds):
                elapsed, state = timed_host_loss(heartbeat)
                print(f"  heartbeat {heartbeat:g} s, round {round_ + 1}: {elapsed:.2f} (the lost node: {state})")
        print(f"after the run: load {os.getloadavg()}")
        return
    client = docker_client()
    engine = client.version()
    joined = client.info()["Swarm"]["LocalNodeState"] == "inactive"
    if joined:
        client.swarm.init(advertise_addr="127.0.0.1", listen_addr="127.0.0.1:2377")
    try:
        print(
            f"python {platform.python_version()}, openenv-gym {openenv_gym.__version__}, Docker Engine "
            f"{engine['Version']} (API {engine['ApiVersion']}); {os.cpu_count()} CPUs, load {os.getloadavg()}"
        )
        for provider in ("docker", "swarm"):  # images checked (and built if missing) before timing
            for target in ("CartPole-v1", CODING):
                with Fleet.of(target, provider=provider):
                    pass
        print(f"\n{args.servers} CartPole-v1 servers: until all answer /health, and until their containers are gone, s")
        ratios = []
        for round_ in range(args.rounds):
            order = ("swarm", "docker") if round_ % 2 == 0 else ("docker", "swarm")
            up: dict[str, float] = {}
            down: dict[str, float] = {}
            for provider in order:
                up[provider], fleet = timed_fleet(provider, args.servers)
                down[provider] = timed_close(client, fleet)
            ratios.append(up["swarm"] / up["docker"])
            print(
                f"  round {round_ + 1}: swarm up {up['swarm']:.2f} (removed {down['swarm']:.2f}), docker up "
                f"{up['docker']:.2f} (removed {down['docker']:.2f}); swarm/docker {ratios[-1]:.2f}x"
            )
        print(f"  median ratio swarm/docker (start-up): {statistics.median(ratios):.2f}x")
        print("\none Coding-v0 server (swarm: a launcher task starts it in a container of the node's own), s")
        for round_ in range(args.rounds):
            times = {provider: timed_fleet(provider, 1, CODING) for provider in ("swarm", "docker")}
            for _, fleet in times.values():
                fleet.close()
            swarm, docker = times["swarm"][0], times["docker"][0]
            print(f"  round {round_ + 1}: swarm {swarm:.2f}, docker {docker:.2f}; swarm/docker {swarm / docker:.2f}x")
        print("\none server killed, until Fleet.recover has it serving again, s")
        swarm, docker = timed_recovery(client, "swarm"), timed_recovery(client, "docker")
        print(f"  swarm (Swarm's replacement task) {swarm:.2f}, docker (a new container) {docker:.2f}")
        print(f"after the run: load {os.getloadavg()}")
    finally:
        if joined:
            client.swarm.leave(force=True)
        client.close()


if __name__ == "__main__":
    main()
