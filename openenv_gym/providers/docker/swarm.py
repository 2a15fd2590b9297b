"""`SwarmProvider`: an env server as a Docker Swarm service, reached on the port its task publishes.

One service per server (``replicas=1``), not one per fleet:

- the provider contract is per server (start, kill a hung one, stop): removing a one-task
  service stops exactly that server, while a manager has no call that kills one task of a
  replicated service (only the engine of the task's node can);
- Swarm's scheduler already spreads them: a new task goes to the node with the fewest tasks of
  its service, then the fewest tasks in all, so the servers of a run land on different nodes
  without constraints of ours.

Each task publishes port 8000 in *host* mode, on an ephemeral port of its node (the routing mesh
needs IPVS in the kernel, which not every node has), so a task's address is read from the task
list: again after Swarm replaced a failed task, which :meth:`SwarmProvider.start` does when the
fleet recovers the server. A published port binds every interface of the node, so the server
always requires a token, handed to it as a Swarm secret (a file under ``/run/secrets``, readable
by the server's user alone), never in the service's environment or command; so is its snapshot
key (the starter's: its servers restore each other's portable snapshots), a second secret.

An env whose manifest needs ``security_opt`` (a sandbox inside) cannot be a service's container:
its task runs :mod:`.swarm_launcher`, which starts the server in a container of the node's own.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
import weakref
from typing import Any

from ...client import http_get_json
from ...errors import EnvCreationError, OpenEnvGymError, ProviderError, ServerConnectError, ServerStartError
from ...protocol import ErrorCode
from ...startup import FAILED_LINE, TOKEN_FILE_FLAG, serve_flags, shared_snapshot_key
from ..base import Provider, checked_token
from ..process import new_token
from .images import SERVER_UID, ensure_image
from .owners import SWARM_LABEL, owner_labels, reap_services
from .provider import (
    CONTAINER_PORT,
    DEFAULT_LIMITS,
    checked_limits,
    docker_client,
    env_docker_options,
    translated_errors,
)
from .swarm_launcher import NODE_SOCKET, launch_spec

__all__ = ["SECRET_DIR", "SwarmProvider", "swarm_manager"]

SECRET_DIR = "/run/secrets"
_TOKEN_FILE = "openenv-gym-token"  # the secret's file name in SECRET_DIR
_KEY_FILE = "openenv-gym-snapshot-key"  # the snapshot key's
_SECOND = 1_000_000_000  # the engine's durations are nanoseconds
_STOP_GRACE = 5 * _SECOND
_RESTART_DELAY = _SECOND // 2  # Swarm's default of 5 s would keep a lost server away that long
# A launcher only starts its server and copies its log: the server's own limits are its container's.
_LAUNCHER_LIMITS: dict[str, Any] = {"memory": "128m", "cpus": 0.25, "pids": 32, "open_files": 1024, "scratch": "8m"}
_reaped = False
_reap_lock = threading.Lock()


def swarm_manager(client: Any) -> None:
    """Check that ``client``'s engine is a manager of an active swarm.

    Raises:
        ProviderError: it is not in a swarm, or is a worker (services are made on a manager).
    """
    swarm = client.info().get("Swarm", {})
    if swarm.get("LocalNodeState") != "active":
        raise ProviderError(
            "swarm: this Docker Engine is not in a swarm (`docker swarm init`, or point DOCKER_HOST at a manager)"
        )
    if not swarm.get("ControlAvailable"):
        raise ProviderError("swarm: this Docker Engine is a worker; point DOCKER_HOST at a manager of the swarm")


class SwarmProvider(Provider):
    """Runs ``openenv-gym serve TARGET`` as a one-task Docker Swarm service and returns its task's URL.

    The engine of ``DOCKER_HOST`` (or the default socket) must be a swarm manager. The service's
    container runs the env's image as the unprivileged server user, with a read-only root
    filesystem, a tmpfs at ``/tmp``, all capabilities dropped, and memory, CPU, process and
    open-file limits. Its port 8000 is published in host mode on an ephemeral port of its node,
    which binds every interface of that node: the server requires a token, given as a Swarm
    secret readable by the server's user only. Service and secret carry labels naming their owner
    (see :mod:`.owners`); :meth:`stop`, interpreter exit, or the reaper after the owner died
    (``openenv-gym clean``) removes them. A failed task is replaced by Swarm; :meth:`start` then
    returns the new task's URL.

    An env whose manifest needs ``security_opt`` (the sandboxed Coding, CodingTools and Git envs)
    cannot be a service's container: a service can neither turn off seccomp nor unmask ``/proc``,
    which bubblewrap inside needs. Its task runs a launcher instead
    (:mod:`.swarm_launcher`), as root with the node's Docker socket (``node_socket``) mounted,
    which starts the server in a container of the node's own, locked down as the Docker provider's
    with the manifest's ``security_opt``, in the task's network namespace; it hands the server
    the token on its standard input. Agent code still runs in bubblewrap, without network, in a
    container that has neither the socket nor the secret. A manifest's ``network: none`` does not
    apply: a server on Swarm has its task's network, where clients reach it.

    Images are not pulled: the image must be in the cache of every node that may run the server.
    On the manager a missing image of ours is built (``build=False`` makes that an error).

    Args:
        target: what to serve: a Gymnasium id or ``module:factory`` (as ``openenv-gym serve``).
        env_kwargs: keyword arguments for the env factory.
        max_sessions: sessions the server accepts at once.
        max_episode_steps: for Gymnasium ids: ``-1`` keeps the spec's time limit, ``None``
            removes it, a number replaces it.
        startup_timeout: seconds until a task answers ``/health`` (scheduling and start included).
        image: the image to run; default: the env's own (as for the Docker provider).
        memory, cpus, pids, open_files, scratch: the limits, as for the Docker provider.
        constraints: placement constraints (``["node.labels.env == true"]``, ``node.role``...).
        build: build a missing image of ours on the manager instead of failing.
        docker_client: a ``docker.DockerClient`` on a manager (default: ``docker.from_env()``).
        token: the token the server requires; default: a fresh one (one per run for :meth:`group`).
        accept_pickled_factories: the server takes pickled env factories (``from_env_fns``).
        node_socket: where each node's Docker Engine socket is, for a launched server (the path on
            the nodes, mounted into the launcher's task).
    """

    def __init__(
        self,
        target: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int | None = None,
        max_episode_steps: int | None = -1,
        startup_timeout: float = 120.0,
        image: str | None = None,
        memory: str | int | None = None,
        cpus: float | None = None,
        pids: int | None = None,
        open_files: int | None = None,
        scratch: str | None = None,
        constraints: list[str] | None = None,
        build: bool = True,
        docker_client: Any = None,
        token: str | None = None,
        accept_pickled_factories: bool = False,
        node_socket: str = "/var/run/docker.sock",
    ) -> None:
        options = env_docker_options(
            target, image=image, memory=memory, cpus=cpus, pids=pids, open_files=open_files, scratch=scratch
        )
        self.target = target
        self.image: str = options.pop("image")
        # A service cannot be given these (its sandbox's needs): a launcher in the task starts the
        # server in a container of the node's own (see .swarm_launcher).
        self.security_opt: list[str] = list(options.pop("security_opt", []))
        self.launched = bool(self.security_opt)
        options.pop("network", None)  # a server on Swarm has its task's network: clients reach it there
        self.node_socket = node_socket
        self.limits = checked_limits({**DEFAULT_LIMITS, **options})
        self.token: str = checked_token(token) or new_token()
        self.command = [target, "--host", "0.0.0.0", "--port", str(CONTAINER_PORT)]
        self.command += serve_flags(
            max_episode_steps=max_episode_steps,
            env_kwargs=env_kwargs,
            max_sessions=max_sessions,
            token_from=[TOKEN_FILE_FLAG, f"{SECRET_DIR}/{_TOKEN_FILE}"],
            accept_pickled_factories=accept_pickled_factories,
            snapshot_key_file=f"{SECRET_DIR}/{_KEY_FILE}",
        )
        self.constraints = list(constraints or [])
        self.startup_timeout = startup_timeout
        self.build = build
        self.node: str | None = None
        self._client = docker_client
        self._owns_client = docker_client is None
        self._service_id: str | None = None
        self._secret_ids: tuple[str, ...] = ()  # the token's, then the snapshot key's
        self._url: str | None = None
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def group(cls, count: int, **options: Any) -> list[Provider]:
        """``count`` servers of one run, sharing one token (a client that loses its server may move to
        another of the run)."""
        if options.get("token") is None:
            options["token"] = new_token()
        return super().group(count, **options)

    def __repr__(self) -> str:
        return f"SwarmProvider({self.target!r}, service={self._service_id!r}, url={self._url!r})"

    @property
    def service_id(self) -> str | None:
        """The service's id while it exists."""
        return self._service_id

    @property
    def secret_id(self) -> str | None:
        """The id of the secret holding the token, while it exists."""
        return self._secret_ids[0] if self._secret_ids else None

    @property
    def secret_ids(self) -> tuple[str, ...]:
        """The ids of the secrets holding the token and the snapshot key, while they exist."""
        return self._secret_ids

    def start(self) -> str:
        """Create the service (or, if it exists, wait for its running task: Swarm's replacement of a
        failed one) and return the task's URL once it answers ``/health``."""
        with self._lock, translated_errors(f"starting a swarm service of {self.image}"):
            client = self._docker()
            if self._service_id is not None and self._service_exists(client):
                try:
                    self._url = self._wait_for_task(client)
                except ServerConnectError:
                    self._remove(client)
                    raise
                return self._url
            self._remove(client)
            swarm_manager(client)
            _reap_once(client)
            ensure_image(client, self.image, build=self.build)
            self._create(client)
            try:
                self._url = self._wait_for_task(client)
            except BaseException:
                self._remove(client)
                raise
            return self._url

    def stop(self) -> None:
        """Remove the service (its task gets SIGTERM, then SIGKILL after 5 s) and its secrets."""
        with self._lock, translated_errors("removing a swarm service"):
            self._remove(self._client)
            self._close_client()

    def is_alive(self) -> bool:
        """Whether the service exists and has a running task."""
        with self._lock, translated_errors("inspecting a swarm service"):
            if self._service_id is None:
                return False
            client = self._docker()
            return self._service_exists(client) and self._running_task(self._tasks(client)) is not None

    # --- internals ---------------------------------------------------------------------------

    def _docker(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _close_client(self) -> None:
        if self._owns_client and self._client is not None:  # a client the caller gave is theirs to close
            self._client.close()
            self._client = None

    def _create(self, client: Any) -> None:
        from docker.types import (
            ContainerSpec,
            EndpointSpec,
            Healthcheck,
            Mount,
            Placement,
            Resources,
            RestartPolicy,
            SecretReference,
            TaskTemplate,
        )
        from docker.utils import parse_bytes

        name = _service_name(self.target)
        labels = {**owner_labels(self.target), SWARM_LABEL: name}
        made = []
        for suffix, value in (("token", self.token), ("key", shared_snapshot_key())):  # a name: 64 characters at most
            made.append(client.secrets.create(name=f"{name}-{suffix}", data=value.encode(), labels=labels))
            self._secret_ids = tuple(secret.id for secret in made)
            self._remove_at_exit()
        limits = _LAUNCHER_LIMITS if self.launched else self.limits  # a launched server's are its container's
        open_files = int(limits["open_files"])
        user = "0:0" if self.launched else f"{SERVER_UID}:{SERVER_UID}"  # the launcher needs the node's socket
        scratch = Mount(
            "/tmp", None, type="tmpfs", tmpfs_size=int(parse_bytes(str(limits["scratch"]))), tmpfs_mode=0o1777
        )
        if self.launched:
            command = ["python3", "-m", "openenv_gym.providers.docker.swarm_launcher"]
            arguments = [launch_spec(self.image, self.command, self.limits, self.security_opt, labels)]
            mounts = [scratch, Mount(NODE_SOCKET, self.node_socket, type="bind")]
        else:
            command, arguments, mounts = None, self.command, [scratch]  # None: the image's `openenv-gym serve`
        container = ContainerSpec(
            self.image,
            command=command,
            args=arguments,
            env={"PYTHONUNBUFFERED": "1"},
            labels=labels,
            user=user,
            read_only=True,
            mounts=mounts,
            secrets=[
                SecretReference(
                    secret.id,
                    secret.name,
                    filename=filename,
                    uid=user.split(":")[0],
                    gid=user.split(":")[1],
                    mode=0o400,
                )
                for secret, filename in zip(made, (_TOKEN_FILE, _KEY_FILE))
            ],
            cap_drop=["ALL"],
            stop_grace_period=_STOP_GRACE,
            healthcheck=Healthcheck(
                test=["CMD", "python3", "-c", _HEALTH_PROBE],
                interval=2 * _SECOND,
                timeout=2 * _SECOND,
                retries=3,
                start_period=_SECOND,
            ),
        )
        # Not in docker-py's ContainerSpec: the engine's own fields (API 1.41).
        container["Ulimits"] = [{"Name": "nofile", "Soft": open_files, "Hard": open_files}]
        memory = int(parse_bytes(str(limits["memory"])))
        resources = Resources(cpu_limit=int(float(limits["cpus"]) * 1e9), mem_limit=memory)
        resources["Limits"]["Pids"] = int(limits["pids"])
        template = TaskTemplate(
            container,
            resources=resources,
            restart_policy=RestartPolicy(condition="any", delay=_RESTART_DELAY, max_attempts=0),
            placement=Placement(constraints=self.constraints) if self.constraints else None,
        )
        endpoint = EndpointSpec(mode="vip")
        endpoint["Ports"] = [{"Protocol": "tcp", "TargetPort": CONTAINER_PORT, "PublishMode": "host"}]
        created = client.api.create_service(template, name=name, labels=labels, endpoint_spec=endpoint)
        self._service_id = created["ID"]
        self._remove_at_exit()

    def _remove_at_exit(self) -> None:
        """Have the service and secrets made so far removed at exit, unless :meth:`_remove` does first."""
        if self._finalizer is not None:
            self._finalizer.detach()
        # At exit the finalizer uses a client of its own: this one may be closed by then.
        self._finalizer = weakref.finalize(self, _remove_service, None, self._service_id, self._secret_ids)

    def _service_exists(self, client: Any) -> bool:
        import docker.errors

        try:
            client.services.get(self._service_id)
        except docker.errors.NotFound:
            return False
        return True

    def _tasks(self, client: Any) -> list[dict[str, Any]]:
        return client.api.tasks(filters={"service": self._service_id})

    @staticmethod
    def _running_task(tasks: list[dict[str, Any]]) -> dict[str, Any] | None:
        for task in tasks:
            if task.get("DesiredState") == "running" and task.get("Status", {}).get("State") == "running":
                return task
        return None

    def _task_url(self, client: Any, task: dict[str, Any]) -> str | None:
        """The URL of a running task: its node's address and the port it published there.

        The engine lists a host-mode port once per address family, IPv4's first, and the two
        numbers may differ (each family's next free port): one family's number may even be another
        task's port in the other family, so the node's family picks the entry, never a probe.
        """
        ports = task.get("Status", {}).get("PortStatus", {}).get("Ports") or []
        published = [port["PublishedPort"] for port in ports if port.get("TargetPort") == CONTAINER_PORT]
        if not published:
            return None
        self.node = client.api.inspect_node(task["NodeID"])["Status"]["Addr"]
        ipv6 = ":" in self.node
        return f"http://{_url_host(self.node)}:{published[min(len(published) - 1, int(ipv6))]}"

    def _wait_for_task(self, client: Any) -> str:
        """Wait for a running task that answers ``/health``; fail early when new tasks keep failing
        (the server's own reason, from the service's log), else say why none ran in time."""
        deadline = time.monotonic() + self.startup_timeout
        earlier = {task["ID"] for task in self._tasks(client)}  # a killed task the fleet recovers from
        last_error = "no task was scheduled"
        failures = 0  # new tasks seen failed: the service's log is read again only when one more fails
        while time.monotonic() < deadline:
            tasks = self._tasks(client)
            task = self._running_task(tasks)
            url = self._task_url(client, task) if task is not None else None
            if url is not None:
                try:
                    http_get_json(url, "/health", timeout=1.0)
                    return url
                except OpenEnvGymError:
                    pass
            failed = [t for t in tasks if t["ID"] not in earlier and t["Status"]["State"] in ("failed", "rejected")]
            if len(failed) > failures:
                failures = len(failed)
                self._raise_if_hopeless(client, failed)
            current = [t["Status"] for t in tasks if t.get("DesiredState") == "running"]
            if current:
                last_error = current[-1].get("Err") or current[-1].get("Message") or last_error
            time.sleep(0.1)
        raise ServerConnectError(
            f"swarm:{self.image}",
            f"no task of service {self._service_id} answered /health within {self.startup_timeout:g} s ({last_error})",
        )

    def _raise_if_hopeless(self, client: Any, failed: list[dict[str, Any]]) -> None:
        """Raise when the server said its env cannot be made, or when two tasks in a row exited
        before they were ready: Swarm would only go on restarting them."""
        log = self._log_tail(client)
        reason = next((line.split(FAILED_LINE, 1)[1] for line in reversed(log) if FAILED_LINE in line), None)
        if reason is not None:
            raise EnvCreationError(ErrorCode.FACTORY_ERROR.value, reason, {"traceback": "\n".join(log)}, self.target)
        if len(failed) >= 2:
            status = failed[-1]["Status"]
            raise ServerStartError(
                f"swarm: {len(failed)} tasks of service {self._service_id} failed before they were ready "
                f"({status.get('Err') or status['State']})",
                self.command,
                "\n".join(log),
            )

    def _log_tail(self, client: Any) -> list[str]:
        """The last lines the service's tasks wrote (none when the engine cannot give them: a lost node)."""
        try:
            logs = b"".join(client.api.service_logs(self._service_id, stdout=True, stderr=True, tail=20))
        except Exception:  # docker-py raises more than DockerException for an unreadable log stream
            return []
        return logs.decode("utf-8", "replace").splitlines()

    def _remove(self, client: Any) -> None:
        service_id, secret_ids = self._service_id, self._secret_ids
        self._service_id = self._url = None
        self._secret_ids = ()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if service_id is not None or secret_ids:
            _remove_service(client, service_id, secret_ids)


def _service_name(target: str) -> str:
    """A service name unique to this server (a DNS label: at most 63 characters)."""
    slug = re.sub(r"[^a-z0-9]+", "-", target.lower()).strip("-")[:32].strip("-") or "env"
    return f"openenv-gym-{slug}-{secrets.token_hex(4)}"


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


_HEALTH_PROBE = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{CONTAINER_PORT}/health', timeout=2)"


def _remove_service(client: Any, service_id: str | None, secret_ids: tuple[str, ...]) -> None:
    """Remove a service and then its secrets (the engine refuses to remove a secret a service uses).

    With ``client=None`` a client is made for the call (the finalizer's case).
    """
    import docker.errors

    from ...errors import DockerUnavailableError

    if client is None:
        try:
            own = docker_client()
        except DockerUnavailableError:
            return  # no engine: nothing to remove now; `openenv-gym clean` will, once one runs again
        try:
            _remove_service(own, service_id, secret_ids)
        finally:
            own.close()
        return
    removals = [(client.api.remove_service, service_id), *((client.api.remove_secret, id_) for id_ in secret_ids)]
    for remove, what in removals:
        if what is None:
            continue
        try:
            remove(what)
        except docker.errors.NotFound:
            pass


def _reap_once(client: Any) -> None:
    """Remove the services of dead owners, the first time this process starts a service."""
    global _reaped
    with _reap_lock:
        if not _reaped:
            reap_services(client)
            _reaped = True
