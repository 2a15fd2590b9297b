"""A trainer-side adapter written by others plays our servers: PrimeIntellect's verifiers, whose
``openenv`` taskset drives an OpenEnv server by its URL (``verifiers/v1/tasksets/openenv``).

Why verifiers: it is the one library on PyPI whose own code runs OpenEnv episodes against a running
server (TRL's OpenEnv harness needs a newer ``openenv`` than openenv-core 0.3 and a vLLM server;
SkyRL, ART and GEM have no OpenEnv code). It cannot share the test environment: verifiers 0.4 pins
``mcp==2.0.0`` and ``openai<3``, and its ``openenv`` extra installs ``openenv`` 0.4, which writes the
same ``openenv`` package as openenv-core. So it gets a virtual environment of its own, made once
under ``build/`` and kept, and ``verifiers_episode.py`` runs there: verifiers' own episode runner
with a scripted policy (an OpenAI-style endpoint replaying fixed actions).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openenv_gym.providers import ProcessProvider
from tests.utils import REPO_ROOT, UNIT, kept_venv

VERIFIERS = "verifiers[openenv]==0.4.0"
VENV = REPO_ROOT / "build" / "verifiers-venv"
EPISODE = Path(__file__).with_name("verifiers_episode.py")

SOLUTION = """\
def anti_diagonal_sums(matrix):
    if not matrix or not matrix[0]:
        return []
    rows, cols = len(matrix), len(matrix[0])
    sums = [0] * (rows + cols - 1)
    for i in range(rows):
        for j in range(cols):
            sums[i + j] += matrix[i][j]
    return sums
"""


@pytest.fixture(scope="module")
def verifiers_python() -> Path:
    """The Python of a virtual environment holding verifiers (and uv, which it runs its harness with)."""
    return kept_venv(VENV, [VERIFIERS, "uv"], stamp=VERIFIERS)


def run_episode(python: Path, url: str, reset: dict, actions: list[dict], max_turns: int) -> dict:
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}  # its uv
    done = subprocess.run(
        [str(python), str(EPISODE), url, json.dumps(reset), json.dumps(actions), str(max_turns)],
        capture_output=True,
        text=True,
        timeout=600 * UNIT,
        env=env,
        cwd=VENV,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-5000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def call(tool: str, **arguments: object) -> dict:
    """An action as verifiers sends an MCP env's: OpenEnv's call_tool step."""
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


@pytest.mark.slow
def test_verifiers_plays_echo_and_is_paid_each_step(verifiers_python):
    """Echo never ends an episode: three messages at the turn limit, 0.1 a character each."""
    with ProcessProvider("openenv/Echo-v0") as url:
        result = run_episode(verifiers_python, url, {}, [{"message": "hello from verifiers"}] * 3, 3)
    assert (result["env"], result["ok"], result["errors"]) == ("OpenEnvEnv", True, [])
    assert result["turns"] == 3
    assert result["rewards"]["openenv_reward"] == pytest.approx(3 * 20 * 0.1)


@pytest.mark.slow
def test_verifiers_solves_a_codingtools_task(verifiers_python):
    """run_tests, then submit: the hidden tests pass, the episode ends and pays 1."""
    actions = [call("run_tests", code=SOLUTION), call("submit", code=SOLUTION)]
    with ProcessProvider("openenv/CodingTools-v0") as url:
        result = run_episode(verifiers_python, url, {"options": {"task_id": "anti-diagonal-sums"}}, actions, 4)
    assert (result["ok"], result["errors"], result["turns"]) == (True, [], 2)
    assert result["rewards"]["openenv_reward"] == 1.0


@pytest.mark.slow
def test_verifiers_plays_a_git_task_to_its_end(verifiers_python):
    """A command in the task's repository, then a submission that does not solve it: done, paid 0."""
    actions = [call("run", command="git status --short"), call("submit")]
    with ProcessProvider("openenv/Git-v0") as url:
        result = run_episode(verifiers_python, url, {"seed": 0}, actions, 4)
    assert (result["ok"], result["errors"], result["turns"]) == (True, [], 2)
    assert result["rewards"]["openenv_reward"] == 0.0
