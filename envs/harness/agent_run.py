"""`AgentRun`: one episode's agent process, its workspace and the model endpoint it calls.

The run owns a directory with two parts: ``workspace`` (the agent's working directory, which the
grader reads once the agent is done) and ``agent`` (the agent's home: its config, its trajectory and
its log, never graded). :meth:`AgentRun.close` kills the agent and every process it started, closes
the endpoint and removes the directory.

Agents start each command in a session of its own (mini-swe-agent does), so the agent's process group
does not hold them all: every process of the run carries the run's mark in its environment
(:data:`RUN_MARK`), which it inherits, and is found by it. A process that scrubs its environment
escapes the mark: only the sandbox holds those.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from openenv_gym.server.model_endpoint import ModelEndpoint, PendingCall

from .agents import AgentLaunch, model_variables

__all__ = ["RUN_MARK", "AgentRun"]

#: The variable whose value marks every process of one run.
RUN_MARK = "OPENENV_GYM_HARNESS_RUN"

#: How often a wait for the agent's next call looks whether the agent has exited meanwhile.
_EXIT_POLL_S = 0.05
#: The end of the agent's log kept for ``info`` (its own errors, a crash's traceback).
_LOG_TAIL = 2000


class AgentRun:
    """Start ``launch``'s agent on ``prompt``, its model endpoint answering through the env.

    Args:
        launch: the agent.
        prompt: the task as the agent is given it.
        reply_timeout: seconds each of the agent's calls waits for the env's reply (see
            :class:`~openenv_gym.server.model_endpoint.ModelEndpoint`).
    """

    def __init__(self, launch: AgentLaunch, prompt: str, reply_timeout: float) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="openenv-harness-"))
        self.workspace = self.root / "workspace"
        self.home = self.root / "agent"
        self.workspace.mkdir()
        self.home.mkdir()
        self.log_path = self.home / "agent.log"
        self.endpoint = ModelEndpoint(reply_timeout=reply_timeout)
        self.started = time.monotonic()
        variables = {
            **os.environ,
            **launch.variables(self.home),
            **model_variables(self.endpoint.base_url, self.endpoint.root_url),
            "HOME": str(self.home),
            RUN_MARK: self.root.name,
        }
        try:
            with self.log_path.open("wb") as log:
                self.process = subprocess.Popen(
                    launch.argv(prompt, self.home),
                    cwd=self.workspace,
                    env=variables,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: close kills whatever it started
                )
        except BaseException:
            self.endpoint.close()
            shutil.rmtree(self.root, ignore_errors=True)
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
        for _ in range(3):  # a process may fork while the others are killed
            pids = self.leftover_pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def close(self) -> None:
        """Kill the agent, close its endpoint and remove its directory; idempotent."""
        self.stop_agent()
        self.endpoint.close()
        shutil.rmtree(self.root, ignore_errors=True)
