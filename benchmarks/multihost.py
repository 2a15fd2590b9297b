"""Multi-host benchmark: env-steps/s of CartPole-v1 across simulated hosts, lockstep against pipelined.

Each host count (default 1, 2, 3, 4) gets a simulated cluster (``tests/cluster.py``: network
namespaces on a private bridge, a Ray head and worker nodes, a delaying proxy on every host's
link to the trainer; needs root). On it, for each one-way link delay (default 0, 1 and 5 ms,
each direction, so a round trip costs twice that), taking turns ``--rounds`` times:

* lockstep: ``gym.make_vec("openenv/CartPole-v1", num_envs=B, provider="ray",
  placement="spread")``, one server per host, each stepping its block as one server-side vector
  env (``CartPoleVectorEnv``); ``step()`` sends every block, then waits for every reply;
* pipelined: EnvPool's asynchronous mode, ``num_envs=D*B, batch_size=B, servers=D``: ``recv()``
  returns the first block of B whose results are in and ``send()`` steps it again, so D-1 blocks
  are in flight while the trainer handles one.

Both hand the trainer batches of B sub-envs (``--batch``, default 64; random actions, no policy):
env-steps/s counts the sub-env steps the trainer receives. The round trip measured through the
link (a one-byte TCP echo in host 0) is printed beside each delay. Targets, printed and never
asserted: at 5 ms, pipelined >= 3x lockstep and >= 0.5x pipelined at 0 ms, at every host count.
Last, one host of three is killed mid-rollout, and the step that reports it is timed.
Run from the repository root, as root::

    .venv/bin/python benchmarks/multihost.py            # full run (~10 min)
    .venv/bin/python benchmarks/multihost.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openenv_gym  # noqa: F401
from tests.cluster import Link, SimulatedCluster, namespaces_supported

ECHO_PORT = 7  # inside host 0's namespace
ECHO = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    f"s.bind(('0.0.0.0', {ECHO_PORT})); s.listen(); s.settimeout(120)\n"
    "c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n"
    "while data := c.recv(64): c.sendall(data)\n"
)


def link_rtt(cluster: SimulatedCluster, trips: int = 200) -> float:
    """Median seconds of a one-byte TCP round trip from the trainer to host 0, through its link."""
    echo = subprocess.Popen(["ip", "netns", "exec", cluster.namespaces[0], sys.executable, "-c", ECHO])
    try:
        deadline = time.monotonic() + 30
        while True:  # the proxy accepts at once, and drops the connection until the echo listens
            sock = None
            try:
                sock = socket.create_connection((cluster.host_address(0), ECHO_PORT), timeout=10)
                sock.sendall(b"x")
                if sock.recv(1) == b"x":
                    break
            except OSError:
                pass
            if sock is not None:
                sock.close()
            if time.monotonic() > deadline:
                raise TimeoutError("the echo server in host 0 did not answer through its link within 30 s")
            time.sleep(0.1)
        with sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            times = []
            for _ in range(trips):
                start = time.perf_counter()
                sock.sendall(b"x")
                sock.recv(1)
                times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        echo.kill()
        echo.wait(10)


def lockstep(envs, steps: int, rng: np.random.Generator) -> float:
    envs.reset(seed=0)
    actions = rng.integers(0, 2, (steps + 10, envs.num_envs))
    for row in actions[:10]:
        envs.step(row)
    start = time.perf_counter()
    for row in actions[10:]:
        envs.step(row)
    return envs.num_envs * steps / (time.perf_counter() - start)


def pipelined(envs, steps: int, rng: np.random.Generator) -> float:
    """EnvPool's loop: recv a batch, send its actions; ``steps`` batches timed after a warm-up."""
    batch = envs.unwrapped.batch_size
    envs.unwrapped.async_reset(seed=0)
    actions = rng.integers(0, 2, (steps + 10, batch))
    for index, row in enumerate(actions):
        if index == 10:
            start = time.perf_counter()
        *_, infos = envs.unwrapped.recv()
        envs.unwrapped.send(row, infos["env_id"])
    rate = batch * steps / (time.perf_counter() - start)
    for _ in range(envs.num_envs // batch):  # every block is out after a send: read them all
        envs.unwrapped.recv()
    return rate


def run(hosts: int, args: argparse.Namespace) -> dict[tuple[float, str], list[float]]:
    figures: dict[tuple[float, str], list[float]] = {}
    with SimulatedCluster(hosts, cpus_per_host=args.depth + 1, link=Link()) as cluster:
        cluster.connect()
        common = {"provider": "ray", "placement": "spread", "startup_timeout": 120}
        envs = {
            "lockstep": gym.make_vec("openenv/CartPole-v1", num_envs=args.batch, **common),
            "pipelined": gym.make_vec(
                "openenv/CartPole-v1",
                num_envs=args.depth * args.batch,
                batch_size=args.batch,
                servers=args.depth,
                **common,
            ),
        }
        try:
            for name, env in envs.items():
                nodes = sorted({entry["node"] for entry in env.unwrapped.placement})
                print(f"  {name}: {len(env.unwrapped.placement)} servers on {len(nodes)} hosts {nodes}", flush=True)
            rng = np.random.default_rng(0)
            for delay in args.delays:
                cluster.set_link(delay=delay / 1000)
                rtt = link_rtt(cluster)
                print(f"  link delay {delay:g} ms each way: measured TCP round trip {rtt * 1000:.2f} ms", flush=True)
                for _ in range(args.rounds):
                    figures.setdefault((delay, "lockstep"), []).append(lockstep(envs["lockstep"], args.steps, rng))
                    figures.setdefault((delay, "pipelined"), []).append(pipelined(envs["pipelined"], args.steps, rng))
        finally:
            for env in envs.values():
                env.close()
    return figures


def node_loss(hosts: int = 3) -> None:
    """Lose one host mid-rollout (1 ms links): how long the step that reports it takes, and the next."""
    with SimulatedCluster(hosts, cpus_per_host=4, link=Link(delay=0.001)) as cluster:
        cluster.connect()
        envs = gym.make_vec("openenv/CartPole-v1", num_envs=8 * hosts, provider="ray", placement="spread")
        try:
            envs.reset(seed=0)
            actions = np.zeros(envs.num_envs, dtype=np.int64)
            for _ in range(5):
                envs.step(actions)
            hosts_now = [cluster.host_of(entry["node"]) for entry in envs.unwrapped.placement]
            block = max(index for index, host in enumerate(hosts_now) if host != 0)  # host 0 runs the head
            victim = hosts_now[block]
            cluster.kill_host(victim)
            start = time.perf_counter()
            _, _, _, truncated, _ = envs.step(actions)
            lost = time.perf_counter() - start
            start = time.perf_counter()
            envs.step(actions)
            after = time.perf_counter() - start
            moved = cluster.host_of(envs.unwrapped.placement[block]["node"])
            print(
                f"node loss ({hosts} hosts, 1 ms): host {victim} killed; the step reporting its "
                f"{int(truncated.sum())} sub-envs truncated took {lost:.2f} s (they now run on host {moved}); "
                f"the next step {after * 1000:.1f} ms"
            )
        finally:
            envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 1.0, 5.0], help="one-way ms")
    parser.add_argument("--batch", type=int, default=64, help="sub-envs per batch the trainer takes (B)")
    parser.add_argument("--depth", type=int, default=16, help="pipelined: blocks of B per run (D)")
    parser.add_argument("--steps", type=int, default=300, help="batches timed per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="hosts 1 and 3, one round, 100 batches")
    args = parser.parse_args()
    if args.quick:
        args.hosts, args.rounds, args.steps = [1, 3], 1, 100
    reason = namespaces_supported()
    if reason is not None:
        sys.exit(f"multihost benchmark: {reason}")
    print(
        f"CartPole-v1, batches of B={args.batch}, pipelined depth D={args.depth}; env-steps/s, medians of {args.rounds}"
    )
    results = {}
    for hosts in args.hosts:
        print(f"{hosts} host(s):", flush=True)
        results[hosts] = run(hosts, args)
    print()
    print(f"{'hosts':>5} {'delay ms':>8} {'lockstep':>10} {'pipelined':>10} {'pipe/lock':>9} {'pipe/pipe@0':>11}")
    met = True
    for hosts, figures in results.items():
        zero = statistics.median(figures[(args.delays[0], "pipelined")])
        for delay in args.delays:
            lock = statistics.median(figures[(delay, "lockstep")])
            pipe = statistics.median(figures[(delay, "pipelined")])
            print(f"{hosts:>5} {delay:>8g} {lock:>10.0f} {pipe:>10.0f} {pipe / lock:>8.2f}x {pipe / zero:>10.2f}x")
            if delay == 5.0 and args.delays[0] == 0.0:
                met &= pipe / lock >= 3 and pipe / zero >= 0.5
    if 5.0 in args.delays and args.delays[0] == 0.0:
        print(f"target at 5 ms (pipelined >= 3x lockstep and >= 0.5x its 0 ms figure): {'met' if met else 'NOT met'}")
    node_loss()


if __name__ == "__main__":
    main()
