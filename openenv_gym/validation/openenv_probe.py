"""`OpenEnvProbe`: openenv-core's own client against a server, in a child process started early.

Importing openenv-core takes seconds (it loads gradio for its web interface), so the child starts
when the checks do and imports it while they run; the OpenEnv client check then hands it the
server's URL and an action on stdin and reads one JSON line back. Run as
``python -m openenv_gym.validation.openenv_probe``; it exits when its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import subprocess
import sys
import time
from typing import IO, Any

__all__ = ["IMPORT_TIMEOUT", "OpenEnvProbe", "main", "openenv_core_installed"]

#: Seconds the child has to import openenv-core (about 8 s on a 2-core machine).
IMPORT_TIMEOUT = 60.0


def openenv_core_installed() -> bool:
    """Whether openenv-core's client can be imported (found without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("openenv.core") is not None
    except ModuleNotFoundError:  # no 'openenv' package at all
        return False


class OpenEnvProbe:
    """A child process holding openenv-core's ``GenericEnvClient``, ready to run one session.

    Args:
        python: the interpreter to run it with.
    """

    def __init__(self, python: str = sys.executable) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [python, "-m", "openenv_gym.validation.openenv_probe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "ENABLE_WEB_INTERFACE": "false"},
        )

    def run(self, url: str, action: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Reset, step ``action`` and ask the state of a session at ``url``; what the child answered.

        Returns:
            ``{"ok": True, "version", "reward", "done", "observation_keys"}``, or ``{"ok": False,
            "reason"}`` (``"missing"`` instead when openenv-core cannot be imported).

        Raises:
            TimeoutError: no answer within the import's time left plus ``timeout``.
        """
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"url": url, "action": action, "timeout": timeout}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError:  # the child is gone: its answer (if any) says why
            pass
        left = max(IMPORT_TIMEOUT - (time.monotonic() - self.started), 0.0) + timeout + 5.0
        line = _read_line(self.process.stdout, left)
        if line is None:
            raise TimeoutError(f"openenv-core's client gave no answer within {left:.0f} s")
        if not line:
            return {"ok": False, "reason": f"the probe process exited with code {self.process.wait(5)}"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Stop the child (it also stops by itself when our end of its stdin closes); idempotent."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> OpenEnvProbe:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _read_line(stream: IO[str], timeout: float) -> str | None:
    """One line from ``stream`` within ``timeout`` seconds (``""`` at EOF, ``None`` on timeout)."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None
    return stream.readline()


async def _session(client_class: Any, url: str, action: dict[str, Any], timeout: float) -> dict[str, Any]:
    async with client_class(base_url=url, connect_timeout_s=timeout, message_timeout_s=timeout) as client:
        first = await client.reset()
        result = await client.step(action)
        state = await client.state()
    observation = result.observation if isinstance(result.observation, dict) else {}
    return {
        "ok": True,
        "first_keys": sorted(first.observation) if isinstance(first.observation, dict) else [],
        "observation_keys": sorted(observation),
        "reward": result.reward,
        "done": result.done,
        "state_keys": sorted(state) if isinstance(state, dict) else [],
    }


def main() -> None:
    """Import openenv-core's client, then answer each request line on stdin with one JSON line."""
    # The answers keep the pipe to themselves: whatever openenv-core (or what it imports) prints
    # goes to stderr instead of corrupting them.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        from importlib.metadata import version

        from openenv.core.generic_client import GenericEnvClient

        answer_base = {"version": version("openenv-core")}
    except Exception as exc:  # not installed, or broken: say so for every request
        GenericEnvClient, answer_base = None, {"missing": f"{type(exc).__name__}: {exc}"}
    for line in sys.stdin:
        request = json.loads(line)
        if GenericEnvClient is None:
            answer = {"ok": False, **answer_base}
        else:
            try:
                timeout = float(request["timeout"])
                coroutine = _session(GenericEnvClient, request["url"], request["action"], timeout)
                answer = {**answer_base, **asyncio.run(asyncio.wait_for(coroutine, 4 * timeout))}
            except Exception as exc:  # every failure is the answer: the check reports it
                answer = {**answer_base, "ok": False, "reason": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
