"""`DockerProvider`: an env server in a locked-down Docker container, through the docker SDK."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from ...client import http_get_json
from ...errors import DockerUnavailableError, EnvCreationError, OpenEnvGymError, ProviderError, ServerConnectError
from ...protocol import ErrorCode
from ...startup import FAILED_LINE, TOKEN_ENV_VAR, serve_flags, shared_snapshot_key
from ...urls import unix_url
from ..base import Provider, checked_token
from ..process import new_token
from . import pool as warm_pool
from .images import (
    RUNTIME_IMAGE,
    SERVER_UID,
    ensure_image,
    env_image,
    envs_directory,
)
from .owners import owner_labels, reap

__all__ = [
    "CONTAINER_PORT",
    "DEFAULT_LIMITS",
    "SECRETS_ON_STDIN",
    "DockerProvider",
    "DockerUnavailableError",
    "checked_limits",
    "docker_client",
    "env_docker_options",
    "locked_down_host_config",
    "start_with_secrets",
    "translated_errors",
]

CONTAINER_PORT = 8000
SOCKET_DIR = "/run/openenv-gym"  # where a no-network container's socket directory is mounted
SOCKET_NAME = "server.sock"
_MAX_SOCKET_PATH = 107
DEFAULT_LIMITS = {"memory": "512m", "cpus": 1.0, "pids": 256, "open_files": 4096, "scratch": "64m"}
MAX_OPEN_FILES = 20000  # more fails on these engines
_STOP_TIMEOUT = 5
_reaped = False
_reap_lock = threading.Lock()


@contextlib.contextmanager
def translated_errors(what: str) -> Iterator[None]:
    """The docker SDK's errors as ``ProviderError`` (the cause chained): the one place they are translated."""
    import docker.errors

    try:
        yield
    except docker.errors.DockerException as exc:
        raise ProviderError(f"docker: {what} failed: {exc}") from exc


def docker_client() -> Any:
    """A docker SDK client for the engine of ``DOCKER_HOST`` (or the default socket), checked to answer.

    Raises:
        DockerUnavailableError: no engine answers.
    """
    import docker
    import docker.errors

    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://"):
        # Said before docker-py tries: its failed connect leaks a socket (and a stopped engine
        # leaves its socket file behind, so the file alone proves nothing).
        why = _unix_socket_refusal(host[len("unix://") :])
        if why is not None:
            raise DockerUnavailableError(
                f"no Docker Engine answers ({why} at {host}); start one (`dockerd`, or scripts/docker-engine.sh "
                "in a source checkout) or choose another provider"
            )
    client = None
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except docker.errors.DockerException as exc:
        if client is not None:
            client.close()
        raise DockerUnavailableError(
            f"no Docker Engine answers ({exc}); start one (`dockerd`, or scripts/docker-engine.sh in a "
            "source checkout) or choose another provider"
        ) from None
    return client


def _unix_socket_refusal(path: str) -> str | None:
    """Why nothing accepts connections on the Unix socket ``path``, or ``None`` if something does."""
    if not os.path.exists(path):
        return "no socket"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(5.0)
        try:
            probe.connect(path)
        except OSError as exc:
            return f"nothing listens: {exc.strerror or exc}"
    return None


def checked_limits(limits: dict[str, Any]) -> dict[str, Any]:
    """``limits`` (memory, cpus, pids, open_files, scratch), checked against what the engine accepts.

    Raises:
        ValueError: ``open_files`` above :data:`MAX_OPEN_FILES`.
    """
    if int(limits["open_files"]) > MAX_OPEN_FILES:
        raise ValueError(f"open_files={limits['open_files']} is above {MAX_OPEN_FILES}, which the engine refuses")
    return limits


def env_docker_options(target: str, **asked: Any) -> dict[str, Any]:
    """The Docker options that serve ``target``: its image, and what its manifest asks for, each
    replaced by the caller's option of that name in ``asked`` unless that one is ``None``.

    An env of ``envs/`` (``openenv_gym.envs.NAME:Class``) has its own image and may set
    ``image``, ``resources`` (memory, cpus, pids, open_files, scratch), ``network`` and
    ``security_opt`` in its ``openenv.yaml`` (:meth:`~openenv_gym.manifest.Manifest.docker_options`);
    anything else (a Gymnasium id, an importable factory) is served from the runtime image.
    """
    options: dict[str, Any] = {"image": RUNTIME_IMAGE}
    prefix = "openenv_gym.envs."
    if target.startswith(prefix):
        name = target[len(prefix) :].split(":", 1)[0].split(".", 1)[0]
        manifest_path = envs_directory() / name / "openenv.yaml"
        if manifest_path.is_file():
            from ...manifest import load_manifest

            options = {"image": env_image(name), **load_manifest(manifest_path).docker_options()}
    return {**options, **{key: value for key, value in asked.items() if value is not None}}


class DockerProvider(Provider):
    """Runs ``openenv-gym serve TARGET`` in a container and returns its loopback URL.

    The container runs as an unprivileged user, with a read-only root filesystem, a tmpfs at
    ``/tmp``, all capabilities dropped, ``no-new-privileges``, and memory, CPU, process and
    open-file limits; its port 8000 is published on 127.0.0.1 only. It carries labels naming its
    owner process (see :mod:`.owners`) and is removed by :meth:`stop`, at interpreter exit,
    or by the reaper after its owner died. A missing image of ours is built on first use
    (``build=False`` makes that an error); nothing is ever pulled.

    Args:
        target: what to serve: a Gymnasium id or ``module:factory`` (as ``openenv-gym serve``).
        env_kwargs: keyword arguments for the env factory.
        max_sessions: sessions the server accepts at once.
        max_episode_steps: for Gymnasium ids: ``-1`` keeps the spec's time limit, ``None``
            removes it, a number replaces it.
        startup_timeout: seconds until the server must answer ``/health``.
        image: the image to run; default: the env's own (see :func:`env_docker_options`).
        memory: memory limit (``"512m"``, bytes); ``cpus``: CPUs; ``pids``: processes;
            ``open_files``: open-file limit (at most 20000); ``scratch``: size of the ``/tmp``
            tmpfs. Each defaults to the env manifest's ``resources``, then to the defaults.
        network: ``"bridge"`` (port 8000 published on 127.0.0.1) or ``"none"``: no network at
            all, the server listens on a Unix socket in a private host directory mounted into the
            container. Default: the env manifest's ``network``, else ``"bridge"``.
        security_opt: extra ``--security-opt`` values (the manifest's, else none).
        pool: take a warm container of the same kind from this process's pool, and give it
            back on :meth:`stop` (see :mod:`.pool`).
        build: build a missing image of ours instead of failing.
        token: the token the server requires of every request but ``/health``
            (``Authorization: Bearer``). Default with ``network="bridge"``: a fresh one (one per
            run for :meth:`group`; with ``pool=True``, the pool's), since the server binds every
            interface of the container, which other containers on the bridge and other users of
            this host's loopback can reach; with ``network="none"``, none (the socket's directory
            is this user's alone).
        docker_client: a ``docker.DockerClient`` (default: ``docker.from_env()``).
        accept_pickled_factories: as for :class:`~openenv_gym.providers.ProcessProvider` (set by
            ``RemoteVectorEnv.from_env_fns``): the server takes pickled env factories, and so
            requires a token.
    """

    def __init__(
        self,
        target: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int | None = None,
        max_episode_steps: int | None = -1,
        startup_timeout: float = 60.0,
        image: str | None = None,
        memory: str | int | None = None,
        cpus: float | None = None,
        pids: int | None = None,
        open_files: int | None = None,
        scratch: str | None = None,
        network: str | None = None,
        security_opt: list[str] | None = None,
        pool: bool = False,
        build: bool = True,
        docker_client: Any = None,
        token: str | None = None,
        accept_pickled_factories: bool = False,
    ) -> None:
        options = env_docker_options(
            target, image=image, memory=memory, cpus=cpus, pids=pids, open_files=open_files, scratch=scratch,
            network=network, security_opt=security_opt,
        )  # fmt: skip
        self.target = target
        self.image: str = options.pop("image")
        self.network: str = options.pop("network", "bridge")
        if self.network not in ("bridge", "none"):
            raise ValueError(f"network must be 'bridge' or 'none', got {self.network!r}")
        self.security_opt = list(options.pop("security_opt", []))
        if self.network == "none":
            listen = ["--unix-socket", f"{SOCKET_DIR}/{SOCKET_NAME}"]
        else:
            listen = ["--host", "0.0.0.0", "--port", str(CONTAINER_PORT)]
        self.limits = checked_limits({**DEFAULT_LIMITS, **options})  # what remains: the resource limits
        if token is None and (accept_pickled_factories or self.network == "bridge"):
            token = warm_pool.token() if pool else new_token()
        self.token = checked_token(token)
        flags = serve_flags(
            max_episode_steps=max_episode_steps,
            env_kwargs=env_kwargs,
            max_sessions=max_sessions,
            token_from=None if token is None else ["--token-env", TOKEN_ENV_VAR],
            accept_pickled_factories=accept_pickled_factories,
            snapshot_key_file=SECRETS_ON_STDIN,  # handed over at start: never in what docker inspect shows
        )
        self.command = [target, *listen, *flags]
        self.startup_timeout = startup_timeout
        self.pool = pool
        self.build = build
        self._client = docker_client
        self._owns_client = docker_client is None
        self._container: Any = None
        self._url: str | None = None
        self._socket_root: str | None = None  # the private host directory of a no-network container
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def group(cls, count: int, **options: Any) -> list[Provider]:
        """``count`` servers of one run, sharing one token (a client that loses its server may move to
        another of the run); pooled ones share the pool's."""
        if options.get("token") is None and not options.get("pool"):
            options["token"] = new_token()
        return super().group(count, **options)

    @property
    def container_id(self) -> str | None:
        """The running container's id, if any."""
        return self._container.id if self._container is not None else None

    def start(self) -> str:
        with self._lock, translated_errors(f"starting a container of {self.image}"):
            if self._container is not None and self._running():
                assert self._url is not None
                return self._url
            self._remove()
            client = self._docker()
            _reap_once(client)
            if self.pool and self._take_from_pool(client):
                assert self._url is not None
                return self._url
            ensure_image(client, self.image, build=self.build)
            self._container = self._run(client)
            # At exit the finalizer uses a client of its own: this one may be closed by then.
            self._finalizer = weakref.finalize(self, _remove_container, None, self._container.id, self._socket_root)
            try:
                self._url = self._wait_until_healthy()
            except BaseException:
                self._remove()
                raise
            return self._url

    def stop(self) -> None:
        """Remove the container; with ``pool=True``, keep it warm for the next provider of its kind."""
        with self._lock, translated_errors("removing a container"):
            if not (self.pool and self._give_to_pool()):
                self._remove(graceful=True)
            self._close_client()

    def kill(self) -> None:
        with self._lock, translated_errors("removing a container"):
            self._remove()
            self._close_client()

    def is_alive(self) -> bool:
        with self._lock, translated_errors("inspecting a container"):
            return self._container is not None and self._running()

    # --- internals ---------------------------------------------------------------------------

    def _pool_key(self) -> tuple[Any, ...]:
        limits = tuple(sorted((key, str(value)) for key, value in self.limits.items()))
        return (self.image, tuple(self.command), limits, self.network, tuple(self.security_opt), self.token)

    def _take_from_pool(self, client: Any) -> bool:
        """Adopt a warm container of this kind whose server still answers; ``False`` if none."""
        import docker.errors

        while (item := warm_pool.take(self._pool_key())) is not None:
            try:
                container = client.containers.get(item.container_id)
                http_get_json(item.url, "/health", timeout=2.0)
            except (docker.errors.DockerException, OpenEnvGymError):
                _remove_pooled(item)
                continue
            self._container, self._url, self._socket_root = container, item.url, item.socket_root
            self._finalizer = weakref.finalize(self, _remove_container, None, container.id, item.socket_root)
            return True
        return False

    def _give_to_pool(self) -> bool:
        """Hand a healthy container to the pool instead of removing it."""
        if self._container is None or self._url is None:
            return False
        try:
            http_get_json(self._url, "/health", timeout=2.0)
        except OpenEnvGymError:
            return False
        item = warm_pool.PooledContainer(self._container.id, self._url, self._socket_root)
        if not warm_pool.put(self._pool_key(), item, _remove_pooled):
            return False
        if self._finalizer is not None:
            self._finalizer.detach()  # the pool owns the container now
            self._finalizer = None
        self._container = self._url = self._socket_root = None
        return True

    def _close_client(self) -> None:
        if self._owns_client and self._client is not None:  # a client the caller gave is theirs to close
            self._client.close()
            self._client = None

    def _docker(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _run(self, client: Any) -> Any:
        """Create and start the container (through the low-level API: the high-level one cannot unmask /proc)."""
        host_config = locked_down_host_config(client, self.limits, self.security_opt, **self._network_config())
        probe = _UNIX_HEALTH_PROBE if self.network == "none" else _TCP_HEALTH_PROBE
        try:
            created = self._create(client, host_config, probe)
        except BaseException:
            if self._socket_root is not None:
                shutil.rmtree(self._socket_root, ignore_errors=True)
                self._socket_root = None
            raise
        container = client.containers.get(created["Id"])
        try:
            # The starter's key, so its servers restore each other's portable snapshots.
            start_with_secrets(client, container, [shared_snapshot_key()])
        except BaseException:
            _remove_container(client, container.id, self._socket_root)
            self._socket_root = None
            raise
        return container

    def _create(self, client: Any, host_config: dict[str, Any], probe: str) -> dict[str, Any]:
        return client.api.create_container(
            self.image,
            self.command,
            labels=owner_labels(self.target),
            user=f"{SERVER_UID}:{SERVER_UID}",
            environment={"PYTHONUNBUFFERED": "1", **({TOKEN_ENV_VAR: self.token} if self.token else {})},
            ports=[CONTAINER_PORT] if self.network == "bridge" else None,
            stdin_open=True,  # and StdinOnce: the secrets' end is the end of the server's stdin
            host_config=host_config,
            healthcheck={
                "test": ["CMD", "python3", "-c", probe],
                "interval": 2_000_000_000,
                "timeout": 2_000_000_000,
                "retries": 3,
                "start_period": 1_000_000_000,
            },
        )

    def _network_config(self) -> dict[str, Any]:
        if self.network == "none":
            self._socket_root = _private_socket_directory()
            socket_dir = os.path.join(self._socket_root, "socket")
            return {"network_mode": "none", "binds": {socket_dir: {"bind": SOCKET_DIR, "mode": "rw"}}}
        return {"port_bindings": {CONTAINER_PORT: ("127.0.0.1", None)}}

    def _wait_until_healthy(self) -> str:
        deadline = time.monotonic() + self.startup_timeout
        container = self._container
        url = None
        while time.monotonic() < deadline:
            container.reload()
            if container.status in ("exited", "dead"):
                logs = container.logs(tail=40).decode("utf-8", "replace").strip()
                reason = next((line for line in reversed(logs.splitlines()) if line.startswith(FAILED_LINE)), None)
                if reason is not None:  # the server said its environment cannot be made
                    raise EnvCreationError(
                        ErrorCode.FACTORY_ERROR.value, reason[len(FAILED_LINE) :], {"traceback": logs}, self.target
                    )
                raise ServerConnectError(
                    f"docker:{self.image}", f"the container exited with {container.attrs['State']['ExitCode']}: {logs}"
                )
            if url is None and self._socket_root is not None:
                url = unix_url(os.path.join(self._socket_root, "socket", SOCKET_NAME))
            bindings = (container.ports or {}).get(f"{CONTAINER_PORT}/tcp")
            if bindings and url is None:
                url = f"http://127.0.0.1:{bindings[0]['HostPort']}"
            if url is not None:
                try:
                    http_get_json(url, "/health", timeout=1.0)
                    return url
                except OpenEnvGymError:
                    pass
            time.sleep(0.02)
        raise ServerConnectError(
            f"docker:{self.image}", f"the server did not answer /health within {self.startup_timeout:g} s"
        )

    def _running(self) -> bool:
        import docker.errors

        try:
            self._container.reload()
        except docker.errors.NotFound:
            return False
        return self._container.status == "running"

    def _remove(self, graceful: bool = False) -> None:
        container, self._container, self._url = self._container, None, None
        socket_root, self._socket_root = self._socket_root, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if container is not None:
            _remove_container(self._client, container.id, socket_root, graceful)
        elif socket_root is not None:
            shutil.rmtree(socket_root, ignore_errors=True)


#: Where a container's server reads the secrets :func:`start_with_secrets` hands it, one a line.
SECRETS_ON_STDIN = "/dev/stdin"


def start_with_secrets(client: Any, container: Any, secrets: list[str]) -> None:
    """Start ``container`` (created with ``stdin_open=True``) and write ``secrets`` to its
    standard input, one a line, then close it: a secret there is in neither the container's
    environment nor its command, which ``docker inspect`` shows to whoever may use the engine."""
    stdin = client.api.attach_socket(container.id, params={"stdin": 1, "stream": 1})
    raw = stdin._sock  # docker-py's SocketIO around the connection
    try:
        container.start()
        raw.sendall("".join(f"{secret}\n" for secret in secrets).encode())
        raw.shutdown(socket.SHUT_WR)  # the end of the server's stdin
    finally:
        stdin.close()
        raw.close()  # closing the SocketIO alone leaves the connection open


def locked_down_host_config(
    client: Any, limits: dict[str, Any], security_opt: list[str], **network: Any
) -> dict[str, Any]:
    """The host config of an env server's container: read-only, a tmpfs at ``/tmp``, no
    capabilities, ``no-new-privileges``, the ``limits`` (see :data:`DEFAULT_LIMITS`), the
    manifest's ``security_opt`` (``systempaths=unconfined`` unmasks ``/proc``, as the docker CLI
    does), and ``network`` (``port_bindings=``, ``network_mode=``...)."""
    open_files = int(limits["open_files"])
    host_config = client.api.create_host_config(
        read_only=True,
        tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits['scratch']},mode=1777"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges", *(opt for opt in security_opt if opt != _UNMASK_PROC)],
        mem_limit=limits["memory"],
        memswap_limit=limits["memory"],  # no swap beyond the limit: past it, the OOM killer
        nano_cpus=int(float(limits["cpus"]) * 1e9),
        pids_limit=int(limits["pids"]),
        ulimits=[{"Name": "nofile", "Soft": open_files, "Hard": open_files}],
        **network,
    )
    if _UNMASK_PROC in security_opt:
        host_config["MaskedPaths"] = []
        host_config["ReadonlyPaths"] = []
    return host_config


def _remove_pooled(item: warm_pool.PooledContainer) -> None:
    _remove_container(None, item.container_id, item.socket_root)


_UNMASK_PROC = "systempaths=unconfined"
_TCP_HEALTH_PROBE = (
    f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{CONTAINER_PORT}/health', timeout=2)"
)
_UNIX_HEALTH_PROBE = (
    f"import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect('{SOCKET_DIR}/{SOCKET_NAME}'); "
    "s.sendall(b'GET /health HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n'); assert s.recv(64).split()[1] == b'200'"
)


def _private_socket_directory() -> str:
    """A host directory only this user can reach, holding one the container's server user may write.

    Raises:
        ProviderError: the socket's path in the temp dir would be longer than a Unix socket's may be.
    """
    # A Unix socket's path is at most 107 bytes (Linux's sun_path, less its NUL); past it nothing
    # could connect, and the server would seem never to answer.
    path = os.path.join(tempfile.gettempdir(), "openenv-gym-docker-xxxxxxxx", "socket", SOCKET_NAME)
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        raise ProviderError(
            f"docker: network='none' needs a Unix socket in the temp dir, but {path} would be {len(os.fsencode(path))}"
            f" bytes, more than the {_MAX_SOCKET_PATH} a socket's path may have: set TMPDIR to a shorter directory"
        )
    root = tempfile.mkdtemp(prefix="openenv-gym-docker-")  # mode 0700: other users cannot reach inside
    socket_dir = os.path.join(root, "socket")
    os.mkdir(socket_dir)
    if os.geteuid() == 0:
        os.chown(socket_dir, SERVER_UID, SERVER_UID)
    else:
        os.chmod(socket_dir, 0o777)  # the container's user is not us; the 0700 parent keeps others out
    return root


def _remove_container(client: Any, container_id: str, socket_root: str | None = None, graceful: bool = False) -> None:
    """Stop (SIGTERM, then SIGKILL after a few seconds, if graceful) and remove a container.

    With ``client=None`` a client is made for the call (the finalizer's case).
    """
    import docker.errors

    if client is None:
        try:
            own = docker_client()
        except DockerUnavailableError:
            return  # no engine: nothing to remove now; the reaper will, once one runs again
        try:
            _remove_container(own, container_id, socket_root, graceful)
        finally:
            own.close()
        return
    try:
        container = client.containers.get(container_id)
        if graceful:
            container.stop(timeout=_STOP_TIMEOUT)
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise
    finally:
        if socket_root is not None:
            shutil.rmtree(socket_root, ignore_errors=True)


def _reap_once(client: Any) -> None:
    """Remove containers of dead owners, the first time this process starts a container."""
    global _reaped
    with _reap_lock:
        if not _reaped:
            reap(client)
            _reaped = True
