"""`AgentRun`: one episode's agent process, its workspace and the model endpoint it calls.

The run owns a directory with two parts: ``workspace`` (the agent's working directory, which the
grader reads once the agent is done) and ``agent`` (the agent's home: its config and its trajectory,
never graded); beside them the agent's log and, when the agent is confined (:mod:`.agent_sandbox`),
the endpoint's Unix socket. :meth:`AgentRun.close` kills the agent and every process it started, closes
the endpoint and removes the directory.

Agents start each command in a session of its own (mini-swe-agent does), so the agent's process group
does not hold them all: every process of the run carries the run's mark in its environment
(:data:`RUN_MARK`), which it inherits, and is found by it. A process that scrubs its environment
escapes the mark: only the sandbox holds those.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from openenv_gym.server.model_endpoint import ModelEndpoint, PendingCall

from .agent_sandbox import AGENT_HOME, AGENT_PORT, sandboxed_argv
from .agents import AgentLaunch, model_variables

__all__ = ["RUN_MARK", "AgentRun"]

#: The variable whose value marks every process of one run.
RUN_MARK = "OPENENV_GYM_HARNESS_RUN"

#: How often a wait for the agent's next call looks whether the agent has exited meanwhile.
_EXIT_POLL_S = 0.05
#: Seconds to wait for the agent's processes to go once killed.
_STOP_TIMEOUT_S = 10.0
#: The end of the agent's log kept for ``info`` (its own errors, a crash's traceback).
_LOG_TAIL = 2000


class AgentRun:
    """Start ``launch``'s agent on ``prompt``, its model endpoint answering through the env.

    Args:
        launch: the agent.
        prompt: the task as the agent is given it.
        reply_timeout: seconds each of the agent's calls waits for the env's reply (see
            :class:`~openenv_gym.server.model_endpoint.ModelEndpoint`).
        bwrap: the bubblewrap executable to confine the agent with (:mod:`.agent_sandbox`);
            ``None``: the agent runs on the host, as the server's user, its network unrestricted.
        hidden: paths the confined agent must not read (the task files).
        variables: set for the agent's processes besides its own (a task's, such as git's identity).
        prepare: called with the empty workspace before the agent starts, to fill it for the task.
    """

    def __init__(
        self,
        launch: AgentLaunch,
        prompt: str,
        reply_timeout: float,
        bwrap: str | None,
        hidden: Sequence[str] = (),
        *,
        variables: Mapping[str, str] | None = None,
        prepare: Callable[[Path], None] | None = None,
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="openenv-harness-"))
        self.workspace = self.root / "workspace"
        self.home = self.root / "agent"
        self.workspace.mkdir()
        self.home.mkdir()
        self.log_path = self.root / "agent.log"  # outside the agent's reach: what it printed, as it printed it
        self.sandboxed = bwrap is not None
        self._status: int | None = None
        self._left_running: bool | None = None
        mark = {RUN_MARK: self.root.name}
        pass_fds: list[int]
        task_variables = dict(variables or {})
        try:
            if prepare is not None:
                prepare(self.workspace)
            if bwrap is None:
                self.endpoint = ModelEndpoint(reply_timeout=reply_timeout)
                variables = {
                    **os.environ,
                    **launch.variables(self.home),
                    **model_variables(self.endpoint.base_url, self.endpoint.root_url),
                    "HOME": str(self.home),
                    **task_variables,
                    **mark,
                }
                argv, pass_fds = launch.argv(prompt, self.home, self.endpoint.base_url), []
            else:
                socket_path = self.root / "endpoint.sock"
                self.endpoint = ModelEndpoint(reply_timeout=reply_timeout, unix_socket=str(socket_path))
                inside = {
                    "PATH": "/usr/local/bin:/usr/bin:/bin",
                    "LANG": "C.UTF-8",
                    **launch.variables(Path(AGENT_HOME)),
                    **model_variables(f"http://127.0.0.1:{AGENT_PORT}/v1", f"http://127.0.0.1:{AGENT_PORT}"),
                    "HOME": AGENT_HOME,
                    **task_variables,
                    **mark,
                }
                self._status, status_write = os.pipe()
                argv = sandboxed_argv(
                    bwrap,
                    launch.argv(prompt, Path(AGENT_HOME), f"http://127.0.0.1:{AGENT_PORT}/v1"),
                    workspace=self.workspace,
                    home=self.home,
                    socket_path=socket_path,
                    variables=inside,
                    status_fd=status_write,
                    hidden=hidden,
                    install_dirs=launch.install_dirs(),
                )
                variables, pass_fds = {**os.environ, **mark}, [status_write]
            self.started = time.monotonic()
            with self.log_path.open("wb") as log:
                self.process = subprocess.Popen(
                    argv,
                    cwd=self.workspace,
                    env=variables,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=pass_fds,
                    start_new_session=True,  # its own process group: close kills whatever it started
                )
            for descriptor in pass_fds:
                os.close(descriptor)
        except BaseException:
            self.close()
            raise

    def next_call(self, deadline: float) -> PendingCall | None:
        """The agent's next call; ``None`` once it has exited (with no call left unread).

        Raises:
            TimeoutError: neither came before ``deadline`` (a :func:`time.monotonic` time).
        """
        while True:
            pending = self.endpoint.next_call(timeout=max(0.0, min(_EXIT_POLL_S, deadline - time.monotonic())))
            if pending is not None:
                return pending
            if self.process.poll() is not None:
                return self.endpoint.next_call(timeout=0)
            if time.monotonic() >= deadline:
                raise TimeoutError("the agent made no call and did not exit in time")

    @property
    def exit_code(self) -> int | None:
        """The agent's exit status (``None``: still running)."""
        return self.process.poll()

    def log_tail(self) -> str:
        """The end of what the agent printed."""
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-_LOG_TAIL:].decode("utf-8", "replace")

    def left_running(self) -> bool:
        """Whether the agent, once it exited, left a process of its own running. Confined, its relay
        says (the sandbox's processes die with it); else any process of the run still alive."""
        if not self.sandboxed:
            return bool(self.leftover_pids())
        if self._left_running is None and self._status is not None:
            with os.fdopen(self._status, "rb") as status:
                self._status = None
                report = status.read(4096)
            try:
                self._left_running = bool(json.loads(report)["left_running"])
            except (ValueError, KeyError, TypeError):
                self._left_running = False  # the relay was killed: nothing of the sandbox is left
        return bool(self._left_running)

    def leftover_pids(self) -> list[int]:
        """The processes of the run still alive (the agent's own included, if it runs)."""
        mark = f"{RUN_MARK}={self.root.name}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environment = (entry / "environ").read_bytes().split(b"\0")
            except OSError:  # gone, or another user's
                continue
            if mark in environment:
                pids.append(int(entry.name))
        return pids

    def stop_agent(self) -> None:
        """Kill the agent and every process of the run, and reap the agent."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_STOP_TIMEOUT_S)
        # Until none is left: a process may fork while the others are killed, and a sandbox's die
        # with its namespace a moment after bubblewrap.
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        while (pids := self.leftover_pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(_EXIT_POLL_S / 5)

    def close(self) -> None:
        """Kill the agent, close its endpoint and remove its directory; idempotent."""
        if hasattr(self, "process"):
            self.stop_agent()
        if hasattr(self, "endpoint"):
            self.endpoint.close()
        if self._status is not None:
            os.close(self._status)
            self._status = None
        shutil.rmtree(self.root, ignore_errors=True)
