"""`ProcessProvider`: the default; runs the server as a child process on a free loopback port.

No server outlives its owner: the child watches its stdin, whose only write end the owner holds,
and stops when it reads EOF. That covers a normal :meth:`ProcessProvider.stop`, garbage
collection and interpreter exit (through ``weakref.finalize``), and an owner killed with SIGKILL
(the kernel closes the pipe). :func:`server_processes` finds the running servers of this user
(``openenv-gym ps``), whoever started them, through ``/proc`` (Linux only).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import selectors
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import IO, Any

from ..client import http_get_json
from ..errors import EnvCreationError, ServerConnectError, ServerStartError
from ..protocol import ErrorFrame
from ..startup import (
    ACCEPT_FLAG,
    FAILED_PREFIX,
    PICKLED_FACTORIES_TARGET,
    READY_PREFIX,
    SNAPSHOT_KEY_ENV_VAR,
    TOKEN_ENV_VAR,
    serve_flags,
    shared_snapshot_key,
)
from ..urls import is_loopback_host
from .base import DEFAULT_STARTUP_TIMEOUT, Provider, checked_token

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "SERVE_FLAGS",
    "ProcessProvider",
    "ServerProcess",
    "serve_arguments",
    "serve_target",
    "server_processes",
]

STOP_GRACE = 5.0


def new_token() -> str:
    """A fresh random token for one server (or one run of servers)."""
    return secrets.token_urlsafe(32)


def _tail(log: IO[bytes], lines: int = 20) -> str:
    try:
        log.seek(0)
        return b"\n".join(log.read().splitlines()[-lines:]).decode(errors="replace")
    except (OSError, ValueError):
        return ""


def _stop_process(process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """Ask the server to stop (EOF on its stdin), then terminate, then kill; always reap it."""
    if process.stdin is not None and not process.stdin.closed:
        try:
            process.stdin.close()
        except OSError:
            pass
    for escalate in (None, process.terminate, process.kill):
        if escalate is not None:
            try:
                escalate()
            except ProcessLookupError:
                pass
        try:
            process.wait(STOP_GRACE)
            break
        except subprocess.TimeoutExpired:
            continue
    log.close()


def _creation_error(report: str, target: str, command: list[str]) -> Exception:
    """The error for a server that could not make its environment, from the JSON it reported."""
    try:
        data = json.loads(report)
    except ValueError:
        data = None
    if not (isinstance(data, dict) and "code" in data and "message" in data):
        return ServerStartError(f"server could not create its environment: {report}", command)
    frame = ErrorFrame.from_data(data)
    return EnvCreationError(frame.code, frame.message, frame.details, env_id=target)


class ProcessProvider(Provider):
    """Run ``openenv-gym serve TARGET`` as a child process bound to a free loopback port.

    Args:
        target: what to serve: a Gymnasium id or ``"module:attr"`` (see ``openenv-gym serve``).
        env_kwargs: keyword arguments for the environment factory, as JSON.
        max_episode_steps: for Gymnasium ids: ``-1`` keeps the spec's time limit, ``None``
            removes it (the client's ``TimeLimit`` applies), a number replaces it.
        host: the address the server binds; loopback by default. A server bound beyond
            loopback requires a token.
        token: the token clients must present (``Authorization: Bearer``); default: none on
            loopback, a fresh random one otherwise (read it from :attr:`token`).
        max_sessions: passed to the server; ``None`` lets the server decide.
        idle_timeout: seconds before the server reaps an idle session; ``None`` (the default)
            never reaps, since this server lives exactly as long as its owner anyway, and an
            agent may think for longer than any fixed timeout between two steps.
        startup_timeout: seconds to wait for the server to report its port and answer ``/health``.
        python: the interpreter to run the server with.
        cwd: the server's working directory; ``python -m`` puts it first on the server's
            ``sys.path``, so a ``module:attr`` of a package in it is served without installing it.
        accept_pickled_factories: start the server with ``--accept-pickled-factories`` (for
            ``RemoteVectorEnv.from_env_fns``, which sets it), and so with a token, a fresh one
            unless ``token`` is given.
        snapshot_key: the key the server seals portable snapshots with (in its environment,
            never on its command line); default: this process's (:func:`~openenv_gym.startup.shared_snapshot_key`),
            so every server it starts restores the others' snapshots.
    """

    def __init__(
        self,
        target: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_episode_steps: int | None = -1,
        host: str = "127.0.0.1",
        token: str | None = None,
        max_sessions: int | None = None,
        idle_timeout: float | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        python: str = sys.executable,
        cwd: str | os.PathLike[str] | None = None,
        accept_pickled_factories: bool = False,
        snapshot_key: str | None = None,
    ) -> None:
        self.target = target
        self.cwd = cwd
        self.accept_pickled_factories = accept_pickled_factories
        self.env_kwargs = env_kwargs or {}
        self.max_episode_steps = max_episode_steps
        self.host = host
        if token is None and (accept_pickled_factories or not is_loopback_host(host)):
            token = new_token()
        self.token = checked_token(token)
        self.snapshot_key = snapshot_key
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.startup_timeout = startup_timeout
        self.python = python
        self.base_url: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def group(cls, count: int, **options: Any) -> list[Provider]:
        """``count`` servers of one run; beyond loopback (or taking pickles) they share one token, so
        a client that loses its server can move to another of the run."""
        beyond = not is_loopback_host(options.get("host", "127.0.0.1"))
        if options.get("token") is None and (beyond or options.get("accept_pickled_factories")):
            options["token"] = new_token()
        return super().group(count, **options)

    def __repr__(self) -> str:
        return f"ProcessProvider({self.target!r}, url={self.base_url!r})"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def command(self, ready_fd: int) -> list[str]:
        """The command line that starts the server and reports readiness on ``ready_fd``."""
        command = [self.python, "-m", "openenv_gym", "serve", self.target, "--host", self.host, "--port", "0"]
        command += ["--exit-on-stdin-eof", "--ready-fd", str(ready_fd)]
        return command + serve_flags(
            max_episode_steps=self.max_episode_steps,
            env_kwargs=self.env_kwargs,
            max_sessions=self.max_sessions,
            idle_timeout=self.idle_timeout,
            token_from=None if self.token is None else ["--token-env", TOKEN_ENV_VAR],
            accept_pickled_factories=self.accept_pickled_factories,
        )

    def start(self) -> str:
        if self.base_url is not None and self.is_alive():
            return self.base_url
        self.stop()
        ready_read, ready_write = os.pipe()
        command = self.command(ready_write)
        log = tempfile.TemporaryFile(prefix="openenv-gym-server-")
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                pass_fds=(ready_write,),
                cwd=self.cwd,
                env=self._child_environment(),
                # Its own session: a Ctrl-C meant for the owner does not kill the server
                # under it; the owner stops it in order.
                start_new_session=True,
            )
        except OSError as exc:
            os.close(ready_read)
            log.close()
            raise ServerStartError(f"cannot run the server: {exc}", command) from exc
        finally:
            os.close(ready_write)
        self.process = process
        self._finalizer = weakref.finalize(self, _stop_process, process, log)
        try:
            line = self._read_ready_line(ready_read, process, command, log)
        finally:
            os.close(ready_read)
        self.base_url = line[len(READY_PREFIX) :].split()[0]
        try:
            http_get_json(self.base_url, "/health", timeout=self.startup_timeout)
        except ServerConnectError as exc:
            self.stop()
            raise ServerStartError(f"server at {self.base_url} failed its health check: {exc}", command) from exc
        return self.base_url

    def _child_environment(self) -> dict[str, str]:
        """The server's environment: this process's, with its token and snapshot key."""
        environment = {**os.environ, SNAPSHOT_KEY_ENV_VAR: self.snapshot_key or shared_snapshot_key()}
        if self.token is not None:
            environment[TOKEN_ENV_VAR] = self.token
        return environment

    def _read_ready_line(self, fd: int, process: subprocess.Popen[bytes], command: list[str], log: IO[bytes]) -> str:
        deadline = time.monotonic() + self.startup_timeout
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    output = _tail(log)
                    self.stop()
                    raise ServerStartError(
                        f"server did not report ready within {self.startup_timeout:g} s (it makes one environment "
                        "before it listens: a slow download or set-up needs a larger startup_timeout)",
                        command,
                        output,
                    )
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, 4096)
                if not chunk:  # the server exited, or closed the fd without a line
                    try:
                        process.wait(STOP_GRACE)
                    except subprocess.TimeoutExpired:
                        pass
                    output = _tail(log)
                    self.stop()
                    raise ServerStartError(
                        f"server exited with code {process.returncode} before it was ready", command, output
                    )
                buffer += chunk
        line = buffer.split(b"\n", 1)[0].decode()
        if line.startswith(FAILED_PREFIX):
            self.stop()
            raise _creation_error(line[len(FAILED_PREFIX) :], self.target, command)
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise ServerStartError(f"unexpected ready line {line!r}", command)
        return line

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the server (a hung one would ignore EOF and SIGTERM), then reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        self.stop()

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs _stop_process once; later calls do nothing
            self._finalizer = None
        self.base_url = None


# --- the servers running on this machine ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ServerProcess:
    """A running ``openenv-gym serve`` process of this user, as ``openenv-gym ps`` lists it.

    Attributes:
        pid: the server's process id.
        target: what it serves (``CartPole-v1``, ``module:attr``).
        addresses: where it listens (``127.0.0.1:8000``, ``unix:/path``); empty if unknown.
        owner_pid: its parent process: the owner, for a server of the process provider.
        owner: the parent's command name (``python3``, ``bash``), or ``"?"``.
        with_owner: started by the process provider, so it stops when its owner goes.
    """

    pid: int
    target: str
    addresses: tuple[str, ...]
    owner_pid: int
    owner: str
    with_owner: bool


def serve_arguments(argv: list[str]) -> list[str] | None:
    """The arguments after ``serve`` if ``argv`` runs ``openenv-gym serve``, else ``None``.

    Example:
        >>> serve_arguments(["python3", "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0"])
        ['CartPole-v1', '--port', '0']
        >>> serve_arguments(["python3", "/venv/bin/openenv-gym", "serve", "CartPole-v1"])
        ['CartPole-v1']
        >>> serve_arguments(["python3", "-m", "openenv_gym", "ps"]) is None
        True
    """
    for index, arg in enumerate(argv):
        if (arg == "openenv_gym" and argv[index - 1 : index] == ["-m"]) or os.path.basename(arg) == "openenv-gym":
            return argv[index + 2 :] if argv[index + 1 : index + 2] == ["serve"] else None
    return None


# The options of `openenv-gym serve` that take no value (tests/test_cli.py keeps it true to the parser).
SERVE_FLAGS = frozenset(
    {"--inline", "--exit-on-stdin-eof", ACCEPT_FLAG, "--web", "--no-web", "--insecure", "-h", "--help"}
)


def serve_target(arguments: list[str]) -> str | None:
    """What ``openenv-gym serve ARGUMENTS`` serves: its one positional argument, wherever it stands.

    Example:
        >>> serve_target(["--port", "8000", "--inline", "CartPole-v1"])
        'CartPole-v1'
        >>> serve_target(["--host=0.0.0.0", "CartPole-v1"]), serve_target(["--port", "0"])
        ('CartPole-v1', None)
    """
    takes_value = False
    for arg in arguments:
        if takes_value:
            takes_value = False
        elif arg.startswith("-"):
            takes_value = "=" not in arg and arg not in SERVE_FLAGS
        else:
            return arg
    return None


def server_processes() -> list[ServerProcess] | None:
    """The ``openenv-gym serve`` processes of this user, or ``None`` where there is no ``/proc``."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    listening = _listening_tcp_sockets()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            argv = [arg.decode(errors="replace") for arg in (entry / "cmdline").read_bytes().split(b"\0")[:-1]]
            arguments = serve_arguments(argv)
            if arguments is None:
                continue
            target = serve_target(arguments)
            if target is None and ACCEPT_FLAG in arguments:
                target = PICKLED_FACTORIES_TARGET  # serves no env of its own
            if target is None:
                continue
            owner_pid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            sockets = {link[len("socket:[") : -1] for link in _fd_links(entry) if link.startswith("socket:[")}
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
        addresses = [listening[inode] for inode in sorted(sockets) if inode in listening]
        unix_socket = _option(arguments, "--unix-socket")
        if unix_socket is not None:
            addresses.append(f"unix:{unix_socket}")
        try:
            owner = (proc / str(owner_pid) / "comm").read_text().strip()
        except OSError:
            owner = "?"
        found.append(
            ServerProcess(
                pid=int(entry.name),
                target=target,
                addresses=tuple(addresses),
                owner_pid=owner_pid,
                owner=owner,
                with_owner="--exit-on-stdin-eof" in arguments,
            )
        )
    return sorted(found, key=lambda server: server.pid)


def _option(arguments: list[str], name: str) -> str | None:
    for index, arg in enumerate(arguments):
        if arg == name and index + 1 < len(arguments):
            return arguments[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _fd_links(entry: Path) -> list[str]:
    links = []
    for fd in os.scandir(entry / "fd"):
        try:
            links.append(os.readlink(fd.path))
        except OSError:
            pass  # closed meanwhile
    return links


def _listening_tcp_sockets() -> dict[str, str]:
    """Socket inode -> ``host:port`` of every listening TCP socket of this network namespace."""
    found = {}
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            lines = Path("/proc/net", name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            host_hex, port_hex = fields[1].split(":")
            packed = bytes.fromhex(host_hex)
            if sys.byteorder == "little":  # the kernel prints the address as 32-bit words in host order
                packed = b"".join(packed[i : i + 4][::-1] for i in range(0, len(packed), 4))
            host = socket.inet_ntop(family, packed)
            found[fields[9]] = (
                f"[{host}]:{int(port_hex, 16)}" if family == socket.AF_INET6 else f"{host}:{int(port_hex, 16)}"
            )
    return found
