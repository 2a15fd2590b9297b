"""How a command fails: an expected failure is one line on stderr and exit 1, a bug keeps its
traceback, OPENENV_GYM_DEBUG=1 shows it anyway, and a reader that leaves the pipe early (`| head`)
gets no BrokenPipeError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.utils import REPO_ROOT, UNIT

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))
POLICY = "tests.eval_policies:CoinFlipCoder"


def openenv_gym(*args: str, cwd: Path = REPO_ROOT, **environment: str) -> subprocess.CompletedProcess[str]:
    """``openenv-gym ARGS`` with this repository's tests importable (the policies and reward functions)."""
    variables = {key: value for key, value in os.environ.items() if key != "OPENENV_GYM_DEBUG"}
    variables.update(PYTHONPATH=str(REPO_ROOT), **environment)
    return subprocess.run(
        [CONSOLE_SCRIPT, *args], cwd=cwd, env=variables, capture_output=True, text=True, timeout=120 * UNIT
    )


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trajectory file of one CartPole episode (written as RecordEpisodes writes one)."""
    from openenv_gym.trajectories import Trajectory, write_trajectories

    path = tmp_path_factory.mktemp("episodes") / "one.jsonl"
    write_trajectories(path, [Trajectory(env_id="openenv/CartPole-v1", seed=0, actions=[0], rewards=[1.0])])
    return path


CASES = {
    "eval of an env with no tasks": (
        ["eval", "openenv/CartPole-v1", "--policy", POLICY],
        "publishes no task set in /schema (it is not a task env)",
    ),
    "eval with a policy that is no module:attr": (
        ["eval", "openenv/CodingTools-v0", "--policy", "my_agent"],
        "a policy is named as module:attr, got 'my_agent'",
    ),
    "eval with a policy module that is not there": (
        ["eval", "openenv/CodingTools-v0", "--policy", "no_such_agent:act"],
        "ModuleNotFoundError: No module named 'no_such_agent'",
    ),
    "eval of an id with a typo": (
        ["eval", "openenv/CodngTools-v0", "--policy", POLICY],
        "Environment `CodngTools` doesn't exist in namespace openenv. Did you mean: `CodingTools`?",
    ),
    "rescore with a function that is not there": (
        ["rescore", "{episodes}", "--reward", "tests.test_trajectories:no_such_function"],
        "tests.test_trajectories:no_such_function is not a function",
    ),
    "rescore of a file that is not there": (
        ["rescore", "missing.jsonl", "--reward", "tests.test_trajectories:short_episode"],
        "FileNotFoundError: [Errno 2] No such file or directory: 'missing.jsonl'",
    ),
    "replay of a file that is not JSON lines": (["replay", "{not_json}"], "not_json.jsonl line 1: not JSON"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_expected_failure_is_one_line_and_exit_1(case, episodes, tmp_path):
    arguments, reason = CASES[case]
    (tmp_path / "not_json.jsonl").write_text("{'stream': 0}\n")
    arguments = [a.format(episodes=episodes, not_json=tmp_path / "not_json.jsonl") for a in arguments]
    done = openenv_gym(*arguments, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"openenv-gym {arguments[0]}: error: ") and reason in done.stderr, done.stderr


def test_the_debug_variable_shows_the_traceback_of_an_expected_failure(tmp_path):
    done = openenv_gym("eval", "openenv/CodingTools-v0", "--policy", "my_agent", cwd=tmp_path, OPENENV_GYM_DEBUG="1")
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert done.stderr.rstrip().endswith("ValueError: a policy is named as module:attr, got 'my_agent'")


def test_a_bug_keeps_its_traceback(tmp_path):
    """A policy that fails in a way no command expects (here a KeyError in the user's code) shows where."""
    (tmp_path / "buggy_agent.py").write_text("def act(observation, info):\n    return {}['name']\n")
    done = openenv_gym(
        "eval", "openenv/CodingTools-v0", "--policy", "buggy_agent:act", "--episodes", "1",
        "--env-kwargs", json.dumps({"max_episode_steps": 1}), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr
    assert 'buggy_agent.py", line 2, in act' in done.stderr and done.stderr.rstrip().endswith("KeyError: 'name'")


def test_a_reader_that_leaves_early_gets_no_broken_pipe_error():
    """`openenv-gym tasks | head -1`: stdout's reader is gone before the listing is written; the
    command exits 1 (as Python does on EPIPE) with nothing on stderr."""
    reading, writing = os.pipe()
    os.close(reading)  # the reader left: every write to the pipe fails with EPIPE
    try:
        done = subprocess.run(
            [CONSOLE_SCRIPT, "tasks"], stdout=writing, stderr=subprocess.PIPE, text=True, timeout=60 * UNIT
        )
    finally:
        os.close(writing)
    assert (done.returncode, done.stderr) == (1, "")
