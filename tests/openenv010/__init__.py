"""OpenEnv 0.10 as the test peer: its own clients and servers, run from ``.venv-openenv``.

OpenEnv 0.10 pins MCP 1.x and FastMCP 3, ours MCP 2.x, so it lives in a virtual environment of its
own (``make test`` installs ``tests/openenv010/requirements.txt`` there). The tests reach it only
through processes: :func:`run_peer` runs a script of this folder under its interpreter and reads
the JSON it prints; :func:`peer_server` starts a server written only against ``openenv``'s own base
classes. The scripts import ``openenv``, never ``openenv_gym``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from openenv_gym.client import http_get_json
from openenv_gym.errors import ServerConnectError
from tests.utils import REPO_ROOT, UNIT, free_port, stop_process, wait_until

HERE = Path(__file__).parent
PEER_VENV = REPO_ROOT / ".venv-openenv"
PEER_PYTHON = PEER_VENV / "bin" / "python"


def peer_python() -> str:
    """The interpreter of OpenEnv 0.10's venv: skips without it, except in CI, where it fails."""
    if not PEER_PYTHON.exists():
        reason = f"OpenEnv 0.10's venv is missing ({PEER_VENV}); make test installs it"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return str(PEER_PYTHON)


def _peer_env() -> dict[str, str]:
    # The peer's scripts import only openenv: our checkout must not shadow anything on its path.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "ENABLE_WEB_INTERFACE": "false", "PYTHONDONTWRITEBYTECODE": "1"}


def run_peer(script: str, *args: str, timeout: float = 120) -> Any:
    """Run ``tests/openenv010/SCRIPT`` under OpenEnv 0.10's interpreter with ``args``; the JSON it
    printed last on stdout. A script that fails fails the test with its stderr."""
    result = subprocess.run(
        [peer_python(), str(HERE / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout * UNIT,
        env=_peer_env(),
        cwd=tempfile.gettempdir(),  # not the checkout: its folders would shadow nothing, but be sure
    )
    if result.returncode != 0:
        pytest.fail(f"{script} {' '.join(args)} exited {result.returncode}:\n{result.stderr[-4000:]}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        pytest.fail(f"{script} printed nothing:\n{result.stderr[-4000:]}")
    return json.loads(lines[-1])


@contextmanager
def peer_server(script: str, *args: str) -> Iterator[str]:
    """A server of OpenEnv 0.10 (``tests/openenv010/SCRIPT PORT ARGS...`` under uvicorn) for the
    test's duration: its base URL (``http://127.0.0.1:PORT``)."""
    port = free_port()  # uvicorn does not report the port it picks for port 0
    logs = tempfile.TemporaryFile()  # not a pipe: uvicorn logs every closed socket, a full pipe blocks it
    process = subprocess.Popen(
        [peer_python(), str(HERE / script), str(port), *args],
        env=_peer_env(),
        cwd=tempfile.gettempdir(),
        stdout=subprocess.DEVNULL,
        stderr=logs,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            try:
                return http_get_json(url, "/health", timeout=1) == {"status": "healthy"}
            except ServerConnectError:
                return process.poll() is not None  # stop waiting: it died

        # OpenEnv imports gradio and FastMCP at start-up: seconds on this machine.
        if not (wait_until(healthy, 120 * UNIT, interval=0.2) and process.poll() is None):
            logs.seek(0)
            pytest.fail(f"OpenEnv 0.10 server {script} did not start:\n{logs.read().decode(errors='replace')[-4000:]}")
        yield url
    finally:
        stop_process(process)
        logs.close()
