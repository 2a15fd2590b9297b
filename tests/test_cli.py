"""The console script: `openenv-gym serve` and `python -m openenv_gym serve`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from openenv_gym.server.runner import READY_PREFIX
from tests.utils import REPO_ROOT, UNIT

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))


@pytest.mark.parametrize("command", [[CONSOLE_SCRIPT], [sys.executable, "-m", "openenv_gym"]], ids=["script", "module"])
def test_serve_until_sigterm(command):
    """serve prints its URL, answers /health and /metadata, and exits 0 on SIGTERM."""
    server = subprocess.Popen(
        [*command, "serve", "CartPole-v1", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT
    )
    try:
        line = server.stdout.readline()
        match = re.match(re.escape(READY_PREFIX) + r"(http://127\.0\.0\.1:\d+) \(WebSocket ws://127\.0\.0\.1:\d+/ws\)", line)
        assert match, line
        with urllib.request.urlopen(match.group(1) + "/metadata", timeout=5 * UNIT) as response:
            assert json.loads(response.read())["name"] == "CartPole-v1"
        server.send_signal(signal.SIGTERM)
        assert server.wait(10 * UNIT) == 0
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def test_serve_rejects_an_unknown_target():
    """A target that is neither module:attr nor a Gymnasium id exits 2 with a message saying so."""
    result = subprocess.run(
        [CONSOLE_SCRIPT, "serve", "NoSuchEnv-v9", "--port", "0"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "'NoSuchEnv-v9' is neither 'module:attr' nor a registered Gymnasium id" in result.stderr


def test_serve_reports_a_busy_port():
    """A port already taken gives exit code 1 and a one-line reason, not a traceback."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [CONSOLE_SCRIPT, "serve", "CartPole-v1", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_help_lists_the_options():
    """--help documents the options a user needs."""
    result = subprocess.run([CONSOLE_SCRIPT, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for option in ("--host", "--port", "--max-sessions", "--idle-timeout", "--max-episode-steps", "--env-kwargs"):
        assert option in result.stdout
    assert "--ready-fd" not in result.stdout  # internal to the process provider


def test_env_kwargs_reach_the_environment():
    """--env-kwargs passes keyword arguments through gym.make on the server (Pendulum's gravity here)."""
    import gymnasium as gym
    import numpy as np

    from openenv_gym.sync_client import EnvClient

    server = subprocess.Popen(
        [CONSOLE_SCRIPT, "serve", "Pendulum-v1", "--port", "0", "--env-kwargs", '{"g": 1.5}'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline()[len(READY_PREFIX) :].split()[0]
        with EnvClient(url) as client:
            client.reset(seed=0)
            remote = client.step({"action": [0.0]}).observation["observation"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(10 * UNIT)
        server.stdout.close()
    low_gravity, default_gravity = gym.make("Pendulum-v1", g=1.5), gym.make("Pendulum-v1")
    low_gravity.reset(seed=0)
    default_gravity.reset(seed=0)
    expected = low_gravity.step(np.array([0.0], dtype=np.float32))[0]
    np.testing.assert_array_equal(np.asarray(remote, dtype=np.float32), expected)
    assert not np.array_equal(expected, default_gravity.step(np.array([0.0], dtype=np.float32))[0])


@pytest.mark.parametrize(("option", "value"), [("--max-episode-steps", "0"), ("--idle-timeout", "-5")])
def test_nonsense_limits_are_refused(option, value):
    """A zero time limit or a negative idle timeout is an argument error, not a silent default."""
    result = subprocess.run(
        [CONSOLE_SCRIPT, "serve", "CartPole-v1", option, value], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "expected a positive number" in result.stderr


def test_tasks_lists_one_task_per_line(tmp_path):
    """`openenv-gym tasks` prints id, difficulty and the prompt's first line per task; --difficulty and --tasks filter."""
    from openenv_gym.envs.coding import task_ids

    everything = subprocess.run([CONSOLE_SCRIPT, "tasks"], capture_output=True, text=True, timeout=60)
    assert everything.returncode == 0, everything.stderr
    lines = everything.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == task_ids()
    assert lines[0].startswith("digit-square-sum\teasy\tWrite a function that returns the sum of the squares")
    hard = subprocess.run([CONSOLE_SCRIPT, "tasks", "--difficulty", "hard"], capture_output=True, text=True, timeout=60)
    assert [line.split("\t")[0] for line in hard.stdout.splitlines()] == task_ids(difficulties=["hard"])
    mine = tmp_path / "mine.jsonl"
    row = {"task_id": "t", "difficulty": "easy", "prompt": "First line.\nSecond.", "signature": "def f(x):",
           "entry_point": "f", "tests": [{"args": [1], "expected": 2}]}
    mine.write_text(json.dumps(row) + "\n")
    listed = subprocess.run([CONSOLE_SCRIPT, "tasks", "--tasks", str(mine)], capture_output=True, text=True, timeout=60)
    assert listed.stdout == "t\teasy\tFirst line.\n"
    bad = subprocess.run([CONSOLE_SCRIPT, "tasks", "--difficulty", "hrad"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'hrad'" in bad.stderr
