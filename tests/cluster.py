"""A simulated multi-host Ray cluster on this machine, for tests and benchmarks.

Each host is a network namespace with its own address on a private bridge made for the cluster
(198.18.0.0/15, the range set aside for benchmarking networks: nothing outside this machine
is ever addressed). The trainer (this process) stays in the root namespace, at the bridge's
address, and runs a Ray node with no CPUs of its own, as a trainer on a cluster's head machine
would; host 0 runs the Ray head, the others Ray worker nodes (``ray start --address``).

Links: every TCP connection the trainer opens to a host is redirected (iptables REDIRECT, inside
that host's namespace) to a delaying proxy there (``tests/delay_proxy.py``), which forwards it
with the host's one-way delay, jitter, loss and bandwidth each way. So env traffic, and Ray's
calls from the trainer, cross a link as on a real network; traffic between hosts, and
connections a host opens to the trainer, are not delayed.

Nothing outlives its owner: a guardian process, in a session of its own, tears everything down
(every process in the namespaces, the namespaces, the bridge, the trainer's Ray node, the temp
dir) when its owner closes the cluster or dies, and after ``lifetime`` seconds whatever happens;
a new cluster also sweeps away those of owners that are gone.

    with SimulatedCluster(hosts=3, link=Link(delay=0.001)) as cluster:
        cluster.connect()                 # ray.init on the cluster
        envs = gym.make_vec(..., provider="ray", placement="spread")
        cluster.kill_host(2)              # a whole host lost
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.delay_proxy import Link
from tests.utils import REPO_ROOT, pid_alive

__all__ = [
    "Link",
    "SimulatedCluster",
    "kill_host_processes",
    "leftovers",
    "make_hosts",
    "namespaces_supported",
    "start_guardian",
    "teardown",
]

PROXY_PORT = 909  # inside each host's namespace, where nothing else listens
HEAD_PORT = 6379
TEMP_ROOT = Path("/tmp")  # short: Ray's Unix socket paths live under each node's temp dir
_NAME = re.compile(r"^og-([0-9a-z]+)-([0-9a-z]{2})(?:h\d+|br)$")
# Ray's health checks: a lost host is declared dead in about 3 s instead of 30.
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray's own token auth off on every node, whatever ~/.ray holds: the driver process cannot
    # switch modes once Ray is imported, and the bridge is reachable from this machine alone.
    # The env servers still require their per-run token.
    "RAY_AUTH_MODE": "disabled",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}
STEP_TIMEOUT = 60.0  # any one set-up step (a command, a node joining)


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=STEP_TIMEOUT, check=check)


def _reap(process: subprocess.Popen[Any]) -> None:
    """Close the pipes to ``process`` (an owner's end: a guardian or proxy then exits) and wait for it."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    process.wait(STEP_TIMEOUT)


def namespaces_supported() -> str | None:
    """Why simulated hosts cannot be made here, or ``None`` if they can."""
    if os.geteuid() != 0:
        return "simulated hosts need root (network namespaces, veth, iptables)"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"simulated hosts need {tool} (Debian's iproute2 and iptables)"
    return None


def _namespaces(tag: str | None = None) -> list[str]:
    listed = _run("ip", "netns", "list", check=False).stdout.split()
    names = [name for name in listed if _NAME.match(name)]
    return [name for name in names if tag is None or name.startswith(f"og-{tag}h")]


def _namespace_pids(namespace: str) -> list[int]:
    result = _run("ip", "netns", "pids", namespace, check=False)
    return [int(pid) for pid in result.stdout.split()]


def _processes_under(path: str) -> list[int]:
    """Processes whose command line names ``path`` (the trainer node's Ray processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if path.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


CGROUPS = Path("/sys/fs/cgroup")


def host_cgroup_pids(name: str) -> list[int]:
    """The processes in pids cgroup ``name`` and below it (a simulated host's engine, and the
    containers it runs in network namespaces of their own, which ``ip netns pids`` does not see)."""
    found: set[int] = set()
    for procs in (CGROUPS / "pids" / name).rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            found.update(int(pid) for pid in procs.read_text().split())
    return sorted(found)


def kill_host_processes(namespace: str, timeout: float = 20.0) -> None:
    """SIGKILL every process of a simulated host: its namespace's and its cgroup's (see
    :func:`host_cgroup_pids`), until none is left."""
    deadline = time.monotonic() + timeout
    while pids := sorted(set(_namespace_pids(namespace)) | set(host_cgroup_pids(namespace))):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {pids} of {namespace} survive SIGKILL")
        time.sleep(0.05)


def _remove_cgroups(tag: str) -> None:
    """Remove the cgroups of cluster ``tag``'s hosts (and of their containers), in every hierarchy."""
    for hierarchy in CGROUPS.iterdir() if CGROUPS.is_dir() else []:
        for top in hierarchy.rglob(f"og-{tag}h*"):
            for directory in sorted((d for d in [top, *top.rglob("*")] if d.is_dir()), key=lambda d: -len(d.parts)):
                with contextlib.suppress(OSError):
                    directory.rmdir()


def teardown(tag: str) -> None:
    """Remove everything of cluster ``tag``: safe to repeat, and to run from any process."""
    temp = TEMP_ROOT / f"og-{tag}"
    host_cgroups = {path.name for path in (CGROUPS / "pids").glob(f"og-{tag}h*")} if CGROUPS.is_dir() else set()
    for namespace in sorted(set(_namespaces(tag)) | host_cgroups):
        kill_host_processes(namespace)
        _run("ip", "netns", "del", namespace, check=False)
    _remove_cgroups(tag)
    group_file = temp / "trainer.pgid"
    with contextlib.suppress(OSError, ValueError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(group_file.read_text()), signal.SIGKILL)
    for _ in range(100):
        pids = _processes_under(str(temp))
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    _run("ip", "link", "del", f"og-{tag}br", check=False)
    shutil.rmtree(temp, ignore_errors=True)


def sweep() -> None:
    """Tear down the clusters of owners that are no longer alive (a test run killed earlier)."""
    bridges = [line.split(":")[1].strip().split("@")[0] for line in _run("ip", "-o", "link").stdout.splitlines()]
    for name in set(_namespaces()) | {b for b in bridges if _NAME.match(b)}:
        match = _NAME.match(name)
        assert match is not None
        if not pid_alive(int(match.group(1), 36)):
            teardown(f"{match.group(1)}-{match.group(2)}")


def start_guardian(tag: str, lifetime: float) -> subprocess.Popen[bytes]:
    """Sweep away the clusters of dead owners, make cluster ``tag``'s temp dir, and start its
    guardian (see :func:`_guard`): the owner closes its stdin, or dies, and everything goes."""
    sweep()
    (TEMP_ROOT / f"og-{tag}").mkdir(mode=0o700)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.cluster", "guard", tag, str(lifetime)],
        stdin=subprocess.PIPE,
        cwd=REPO_ROOT,
        start_new_session=True,
    )


def make_hosts(tag: str, hosts: int) -> str:
    """Cluster ``tag``'s bridge (the trainer at .1) and ``hosts`` network namespaces on it (host i
    at .(10 + i), its link ``eth0``); return the subnet's first three bytes."""
    subnet, bridge = _free_subnet(), f"og-{tag}br"
    _run("ip", "link", "add", bridge, "type", "bridge")
    # Bridged frames skip the root namespace's iptables (Docker's FORWARD rules, say).
    _run("ip", "link", "set", bridge, "type", "bridge", "nf_call_iptables", "0")
    _run("ip", "addr", "add", f"{subnet}.1/24", "dev", bridge)
    _run("ip", "link", "set", bridge, "up")
    for index in range(hosts):
        namespace = f"og-{tag}h{index}"
        _run("ip", "netns", "add", namespace)
        _run("ip", "link", "add", namespace, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        _run("ip", "link", "set", namespace, "master", bridge, "up")
        _run("ip", "-n", namespace, "addr", "add", f"{subnet}.{10 + index}/24", "dev", "eth0")
        _run("ip", "-n", namespace, "link", "set", "eth0", "up")
        _run("ip", "-n", namespace, "link", "set", "lo", "up")
    return subnet


def _free_subnet() -> str:
    used = _run("ip", "-4", "-o", "addr").stdout
    for third in range(1, 255):
        prefix = f"198.18.{third}"
        if f" {prefix}." not in used:
            return prefix
    raise RuntimeError("no free /24 in 198.18.0.0/16 for a simulated cluster")


class SimulatedCluster:
    """``hosts`` simulated hosts (network namespaces), a Ray node on each and one for the trainer.

    Args:
        hosts: how many hosts; host 0 runs the Ray head.
        cpus_per_host: the Ray CPUs each host offers (logical: they all share this machine's cores);
            more than the servers placed on it leaves room for those of a lost host.
        link: each host's link to the trainer at start (:meth:`set_link` changes it).
        lifetime: seconds after which the guardian tears the cluster down whatever happens.
    """

    def __init__(self, hosts: int = 3, *, cpus_per_host: int = 4, link: Link | None = None, lifetime: float = 1800.0):
        if hosts < 1:
            raise ValueError(f"a cluster needs at least one host, got {hosts}")
        reason = namespaces_supported()
        if reason is not None:
            raise RuntimeError(reason)
        self.hosts = hosts
        self.cpus_per_host = cpus_per_host
        self.link = link or Link()
        self.lifetime = lifetime
        self.tag = f"{np.base_repr(os.getpid(), 36).lower()}-{secrets.token_hex(1)}"
        self.temp = TEMP_ROOT / f"og-{self.tag}"
        self.bridge = f"og-{self.tag}br"
        self.namespaces = [f"og-{self.tag}h{index}" for index in range(hosts)]
        self.subnet = ""
        self._proxies: dict[int, subprocess.Popen[str]] = {}
        self._nodes: dict[int, subprocess.Popen[bytes]] = {}  # each host's `ray start --block`
        self._guardian: subprocess.Popen[bytes] | None = None
        self._trainer_node: subprocess.Popen[bytes] | None = None
        self._saved_env: dict[str, str | None] = {}

    # Addresses ----------------------------------------------------------------------------------

    @property
    def trainer_address(self) -> str:
        return f"{self.subnet}.1"

    def host_address(self, index: int) -> str:
        return f"{self.subnet}.{10 + index}"

    @property
    def address(self) -> str:
        """The Ray head's GCS address (``ray.init(address=...)``)."""
        return f"{self.host_address(0)}:{HEAD_PORT}"

    def host_of(self, address: str) -> int:
        """The index of the host with this IP address."""
        return [self.host_address(index) for index in range(self.hosts)].index(address)

    # Life ---------------------------------------------------------------------------------------

    def __enter__(self) -> SimulatedCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Make the network, the proxies and the Ray nodes (the trainer's last)."""
        self._guardian = start_guardian(self.tag, self.lifetime)
        try:
            self.subnet = make_hosts(self.tag, self.hosts)
            for namespace in self.namespaces:
                _run(
                    "ip", "netns", "exec", namespace,
                    "iptables", "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "-s", self.trainer_address,
                    "-j", "REDIRECT", "--to-ports", str(PROXY_PORT),
                )  # fmt: skip
            for index in range(self.hosts):
                self._start_host(index)
            self._start_trainer_node()
        except BaseException:
            self.close()
            raise

    def _ray_env(self) -> dict[str, str]:
        return {**os.environ, **RAY_ENV}

    def _ray_start(self, name: str, *options: str) -> list[str]:
        ray = str(Path(sys.executable).with_name("ray"))
        return [
            ray, "start", *options, "--disable-usage-stats", "--object-store-memory", str(80 * 2**20),
            "--temp-dir", str(self.temp / name), "--block",
        ]  # fmt: skip

    def _start_host(self, index: int) -> None:
        """The host's proxy, then its Ray node (the head on host 0)."""
        namespace = self.namespaces[index]
        link = self.link
        proxy = subprocess.Popen(
            [
                "ip", "netns", "exec", namespace, sys.executable, "-m", "tests.delay_proxy",
                "--port", str(PROXY_PORT), "--delay", str(link.delay), "--jitter", str(link.jitter),
                "--loss", str(link.loss), "--lifetime", str(self.lifetime), "--seed", str(index),
                *(["--bandwidth", str(link.bandwidth)] if link.bandwidth else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )  # fmt: skip
        self._proxies[index] = proxy
        assert proxy.stdout is not None
        if proxy.stdout.readline().strip() != "listening":
            raise RuntimeError(f"the link proxy of host {index} did not start")
        if index == 0:
            role = ["--head", "--port", str(HEAD_PORT), "--include-dashboard=false"]
        else:
            role = ["--address", self.address]
        command = self._ray_start(
            f"h{index}", *role, "--node-ip-address", self.host_address(index), "--num-cpus", str(self.cpus_per_host)
        )
        log = open(self.temp / f"h{index}.log", "ab")  # the node's: Popen holds its own copy
        self._nodes[index] = subprocess.Popen(
            ["ip", "netns", "exec", namespace, *command],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self._ray_env(),
            start_new_session=True,
        )
        log.close()

    def _start_trainer_node(self) -> None:
        command = self._ray_start(
            "trainer", "--address", self.address, "--node-ip-address", self.trainer_address, "--num-cpus", "0"
        )
        with open(self.temp / "trainer.log", "ab") as log:
            self._trainer_node = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._ray_env(),
                start_new_session=True,
            )
        (self.temp / "trainer.pgid").write_text(str(self._trainer_node.pid))

    def connect(self, timeout: float = 120.0) -> None:
        """``ray.init`` this process on the cluster (from the trainer's node), once every node has joined."""
        import ray

        for key, value in RAY_ENV.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        deadline = time.monotonic() + timeout
        while True:
            try:
                ray.init(address=self.address, _node_ip_address=self.trainer_address, log_to_driver=False)
                break
            except (ConnectionError, RuntimeError, ValueError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        self.wait_for_nodes(self.hosts + 1, deadline - time.monotonic())

    def wait_for_nodes(self, count: int, timeout: float) -> None:
        """Wait until ``count`` Ray nodes are alive."""
        import ray

        deadline = time.monotonic() + timeout
        while (alive := sum(node["Alive"] for node in ray.nodes())) != count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{alive} Ray nodes alive, not {count}, after {timeout:g} s: see {self.temp}/*.log")
            time.sleep(0.2)

    def close(self) -> None:
        """Leave Ray, tear everything down, and let the guardian go."""
        with contextlib.suppress(Exception):
            import ray

            if ray.is_initialized():
                ray.shutdown()
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()
        teardown(self.tag)
        for process in [*self._proxies.values(), *self._nodes.values(), self._trainer_node, self._guardian]:
            if process is not None:
                _reap(process)  # the guardian, its stdin closed, goes
        self._proxies.clear()
        self._nodes.clear()
        self._trainer_node = self._guardian = None

    # What a test does to the cluster ------------------------------------------------------------

    def set_link(self, index: int | None = None, **fields: Any) -> None:
        """Change the link of host ``index`` (all when ``None``): ``delay=0.005``, ``jitter``, ``loss``, ``bandwidth``."""
        Link(**fields)  # refuse bad values here, not in the proxy
        for host in range(self.hosts) if index is None else [index]:
            proxy = self._proxies[host]
            assert proxy.stdin is not None and proxy.stdout is not None
            proxy.stdin.write(json.dumps(fields) + "\n")
            proxy.stdin.flush()
            answer = proxy.stdout.readline().strip()
            if answer != "ok":
                raise RuntimeError(f"the link proxy of host {host} answered {answer!r}")
        if index is None:
            self.link = Link(**{**self.link.__dict__, **fields})

    def kill_host(self, index: int) -> None:
        """Lose host ``index`` whole: SIGKILL every process in it (its Ray node, servers, link proxy)."""
        if index == 0:
            raise ValueError("host 0 runs the Ray head: losing it ends the cluster")
        kill_host_processes(self.namespaces[index])
        _reap(self._nodes.pop(index))
        _reap(self._proxies.pop(index))

    def restore_host(self, index: int) -> None:
        """Bring a lost host back: its link proxy and a new Ray node."""
        if index in self._proxies:
            raise ValueError(f"host {index} is up")
        self._start_host(index)

    def processes(self, index: int) -> list[int]:
        """The processes running in host ``index``."""
        return _namespace_pids(self.namespaces[index])

    def leftovers(self) -> dict[str, Any]:
        """What of this cluster still exists (empty once it is torn down)."""
        return leftovers(self.tag)


def leftovers(tag: str) -> dict[str, Any]:
    """What of cluster ``tag`` still exists: namespaces, bridge, processes, temp dir."""
    found: dict[str, Any] = {}
    if namespaces := _namespaces(tag):
        found["namespaces"] = namespaces
        found["processes"] = [pid for namespace in namespaces for pid in _namespace_pids(namespace)]
    if _run("ip", "link", "show", f"og-{tag}br", check=False).returncode == 0:
        found["bridge"] = f"og-{tag}br"
    if pids := [pid for host in sorted((CGROUPS / "pids").glob(f"og-{tag}h*")) for pid in host_cgroup_pids(host.name)]:
        found["host processes"] = pids
    if cgroups := sorted(str(path) for path in CGROUPS.glob(f"*/**/og-{tag}h*")):
        found["cgroups"] = cgroups
    temp = TEMP_ROOT / f"og-{tag}"
    if pids := _processes_under(str(temp)):
        found["trainer node processes"] = pids
    if temp.exists():
        found["temp dir"] = str(temp)
    return found


def _guard(tag: str, lifetime: float) -> None:
    """Wait for the owner to close standard input (or die), or for ``lifetime``; then tear down."""
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(sys.stdin.buffer, selectors.EVENT_READ)
    deadline = time.monotonic() + lifetime
    while time.monotonic() < deadline:
        if selector.select(timeout=max(0.0, min(5.0, deadline - time.monotonic()))):
            if not sys.stdin.buffer.read1(4096):
                break
    teardown(tag)


if __name__ == "__main__":
    if sys.argv[1:2] == ["guard"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the owner's terminal must not skip teardown
        _guard(sys.argv[2], float(sys.argv[3]))
