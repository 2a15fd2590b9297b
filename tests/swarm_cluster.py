"""A simulated multi-host Docker Swarm on this machine, for tests and benchmarks.

Each host is a network namespace on a private bridge (198.18.0.0/15, as ``tests/cluster.py``'s
Ray cluster, whose names, guardian and teardown it shares), running a Docker Engine of its own:
its own data root, exec root, socket, containerd and engine id. Host 0's engine is the swarm's
manager (``docker swarm init --advertise-addr`` its address), the others join as workers. The
trainer (this process) stays in the root namespace, at the bridge's address, and reaches the
manager through its socket (:attr:`SimulatedSwarm.docker_host`) and the servers at their hosts'
addresses. The images are copied from the machine's own engine (``docker save``, then ``docker
load`` into each host's engine): no registry.

What an engine in a namespace needs, found by trying: ``ip netns exec`` remounts ``/sys`` and
hides the cgroup hierarchies, so the engine is started with ``nsenter --net`` inside a mount and
UTS namespace of its own (its own hostname: the swarm's node name), where tmpfs mounts cover
``/run/docker`` (libnetwork's sockets, at a fixed path in 20.10; and the engine's second socket,
:data:`NODE_SOCKET`) and ``/run/containerd``, and a directory of its own covers ``/etc/docker``
(its engine id). Every process of a host (engine,
containerd, shims, containers, which have network namespaces of their own) is in the pids cgroup
named after the host, so :meth:`SimulatedSwarm.kill_host` and the teardown find them all. Every
network an engine makes is in 198.19.0.0/16.

    with SimulatedSwarm(hosts=3) as swarm:
        monkeypatch.setenv("DOCKER_HOST", swarm.docker_host)
        envs = gym.make_vec(..., provider="swarm", servers=3)
        swarm.kill_host(2)                 # a whole host lost
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.cluster import (
    CGROUPS,
    TEMP_ROOT,
    _reap,
    _run,
    kill_host_processes,
    leftovers,
    make_hosts,
    namespaces_supported,
    start_guardian,
    teardown,
)

__all__ = ["NODE_SOCKET", "SimulatedSwarm"]

ROOT_ENGINE = "unix:///var/run/docker.sock"  # the machine's own engine: only its images are read
#: Where each host's engine also listens, in the host's own /run/docker: the path a launched
#: server's task mounts (SwarmProvider's ``node_socket``) names each host's own engine.
NODE_SOCKET = "/run/docker/node.sock"
STEP_TIMEOUT = 120.0
_ENGINE_SCRIPT = """
echo $$ > {cgroup}/cgroup.procs && hostname {name} &&
mount -t tmpfs -o mode=0700,size=64m og-run-docker /run/docker &&
mount -t tmpfs -o mode=0700,size=64m og-run-containerd /run/containerd &&
mount --bind {etc} /etc/docker && exec dockerd "$@"
"""


class SimulatedSwarm:
    """``hosts`` simulated hosts (network namespaces), each with a Docker Engine, joined in a swarm.

    Args:
        hosts: how many hosts; host 0's engine is the manager, the others are workers.
        images: the images of the machine's engine every host gets.
        heartbeat: the swarm's dispatcher heartbeat, s: a lost host is marked down after a few
            missed ones (Swarm's default is 5 s).
        lifetime: seconds after which the guardian tears the swarm down whatever happens.
    """

    def __init__(
        self, hosts: int = 3, *, images: tuple[str, ...] = (), heartbeat: float = 1.0, lifetime: float = 1800.0
    ):
        if hosts < 1:
            raise ValueError(f"a swarm needs at least one host, got {hosts}")
        reason = namespaces_supported()
        if reason is not None:
            raise RuntimeError(reason)
        self.hosts = hosts
        self.images = images
        self.heartbeat = heartbeat
        self.lifetime = lifetime
        self.tag = f"{np.base_repr(os.getpid(), 36).lower()}-{secrets.token_hex(1)}"
        self.temp = TEMP_ROOT / f"og-{self.tag}"
        self.bridge = f"og-{self.tag}br"
        self.namespaces = [f"og-{self.tag}h{index}" for index in range(hosts)]
        self.subnet = ""
        self._guardian: subprocess.Popen[bytes] | None = None
        self._engines: dict[int, subprocess.Popen[bytes]] = {}

    # Addresses ----------------------------------------------------------------------------------

    def host_address(self, index: int) -> str:
        return f"{self.subnet}.{10 + index}"

    def host_of(self, address: str) -> int:
        """The index of the host with this IP address."""
        return [self.host_address(index) for index in range(self.hosts)].index(address)

    def socket(self, index: int) -> str:
        return f"unix://{self.temp}/h{index}/docker.sock"

    @property
    def docker_host(self) -> str:
        """``DOCKER_HOST`` for the manager's engine."""
        return self.socket(0)

    def engine(self, index: int) -> Any:
        """A docker SDK client on host ``index``'s engine (the caller closes it)."""
        import docker

        return docker.DockerClient(base_url=self.socket(index), timeout=60)

    # Life ---------------------------------------------------------------------------------------

    def __enter__(self) -> SimulatedSwarm:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Make the network, start an engine per host, form the swarm and give every host the images."""
        self._guardian = start_guardian(self.tag, self.lifetime)
        try:
            self.subnet = make_hosts(self.tag, self.hosts)
            for index in range(self.hosts):
                self._start_engine(index)
            self._form_swarm()
            self._copy_images()
        except BaseException:
            self.close()
            raise

    def _start_engine(self, index: int) -> None:
        namespace, home = self.namespaces[index], self.temp / f"h{index}"
        for directory in ("data", "exec", "etc-docker"):
            (home / directory).mkdir(parents=True)
        cgroup = CGROUPS / "pids" / namespace
        cgroup.mkdir()
        flags = [
            "--data-root", str(home / "data"), "--exec-root", str(home / "exec"),
            "--pidfile", str(home / "dockerd.pid"), "-H", self.socket(index), "-H", f"unix://{NODE_SOCKET}",
            "--config-file", str(self._config(home)), "--storage-driver", "overlay2",
            "--cgroup-parent", f"{namespace}-ctr",  # relative: under the host's cgroup in every hierarchy
            "--bip", f"198.19.{10 + index}.1/24", "--default-address-pool", "base=198.19.128.0/17,size=24",
        ]  # fmt: skip
        script = _ENGINE_SCRIPT.format(cgroup=cgroup, name=namespace, etc=home / "etc-docker")
        with open(home / "dockerd.log", "ab") as log:
            self._engines[index] = subprocess.Popen(
                [
                    "nsenter", f"--net=/run/netns/{namespace}", "--",
                    "unshare", "--mount", "--propagation", "slave", "--uts", "--",
                    "sh", "-c", script, "sh", *flags,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self._wait(lambda: self._answers(index), f"the engine of host {index} (see {home}/dockerd.log)")

    @staticmethod
    def _config(home: Path) -> Path:
        config = home / "daemon.json"
        config.write_text("{}")
        return config

    def _answers(self, index: int) -> bool:
        done = _run("docker", "-H", self.socket(index), "version", "--format", "{{.Server.Version}}", check=False)
        return done.returncode == 0

    def _docker(self, index: int, *arguments: str) -> str:
        return _run("docker", "-H", self.socket(index), *arguments).stdout.strip()

    def _form_swarm(self) -> None:
        manager = self.host_address(0)
        self._docker(
            0, "swarm", "init", "--advertise-addr", manager, "--listen-addr", f"{manager}:2377",
            "--default-addr-pool", "198.19.64.0/18", "--default-addr-pool-mask-length", "24",
            "--dispatcher-heartbeat", f"{self.heartbeat:g}s",
        )  # fmt: skip
        token = self._docker(0, "swarm", "join-token", "-q", "worker")
        for index in range(1, self.hosts):
            address = self.host_address(index)
            self._docker(
                index, "swarm", "join", "--token", token, "--advertise-addr", address,
                "--listen-addr", f"{address}:2377", f"{manager}:2377",
            )  # fmt: skip
        self._wait(lambda: self.ready_nodes() == self.hosts, f"{self.hosts} ready nodes")

    def ready_nodes(self) -> int:
        """How many nodes the manager sees ready."""
        states = self._docker(0, "node", "ls", "--format", "{{.Status}}").split()
        return states.count("Ready")

    def _copy_images(self) -> None:
        for image in self.images:
            archive = self.temp / "image.tar"
            _run_long("docker", "-H", ROOT_ENGINE, "save", "-o", str(archive), image)
            for index in range(self.hosts):
                _run_long("docker", "-H", self.socket(index), "load", "-q", "-i", str(archive))
            archive.unlink()

    @staticmethod
    def _wait(predicate: Any, what: str, timeout: float = STEP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} after {timeout:g} s")
            time.sleep(0.2)

    def close(self) -> None:
        """Tear everything down, and let the guardian go."""
        teardown(self.tag)
        for process in [*self._engines.values(), self._guardian]:
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    _reap(process)  # the guardian, its stdin closed, goes
        self._engines.clear()
        self._guardian = None

    # What a test does to the swarm --------------------------------------------------------------

    def kill_host(self, index: int) -> None:
        """Lose host ``index`` whole: SIGKILL its engine, containerd and every container on it."""
        if index == 0:
            raise ValueError("host 0 is the manager: losing it ends the swarm")
        kill_host_processes(self.namespaces[index])
        with contextlib.suppress(subprocess.TimeoutExpired):
            _reap(self._engines.pop(index))

    def node_states(self) -> dict[str, str]:
        """Each node's hostname (its host's namespace name) and state, as the manager sees them."""
        lines = self._docker(0, "node", "ls", "--format", "{{.Hostname}} {{.Status}}").splitlines()
        return dict(line.split(maxsplit=1) for line in lines)

    def leftovers(self) -> dict[str, Any]:
        """What of this swarm still exists (empty once it is torn down)."""
        return leftovers(self.tag)


def _run_long(*command: str) -> None:
    subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
