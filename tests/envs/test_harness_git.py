"""openenv/Harness-v0 on Git-v0's tasks (``task_kind="git"``), driven end to end with mini-swe-agent: a
scripted policy runs git through the agent's bash tool in the repository Git-v0's setup built, and the
episode is paid by Git-v0's checks, run in its own sandbox on a copy of the workspace the agent left.

The task is ``annotated-release-tag``: an annotated tag ``v2.1.0`` with the message 'Release 2.1.0' on
``main~1``; its near miss (a lightweight tag) passes one check of three.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the envs)
from openenv_gym.envs.git import GitEnvironment
from openenv_gym.envs.git.tasks import task_ids
from openenv_gym.envs.harness import HarnessEnvironment
from tests.envs.harness_policy import LIMITS, SUBMIT, bash, finish, play
from tests.utils import running_server

pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")

pytestmark = pytest.mark.slow

TASK = "annotated-release-tag"
SOLVE = "cd repo && git tag -a v2.1.0 -m 'Release 2.1.0' main~1 && git tag -n"
NEAR_MISS = "cd repo && git tag v2.1.0 main~1"


@pytest.fixture(scope="module")
def env():
    with running_server(lambda: HarnessEnvironment(task_kind="git", **LIMITS), max_sessions=2) as server:
        made = gym.make("openenv/Harness-v0", base_url=server.url)
        yield made
        made.close()


def test_a_scripted_policy_solves_a_git_task_through_mini_swe_agent_and_earns_1(env):
    """The prompt is the Git task's and names the repository; the agent's git sees the commits Git-v0's
    setup made, and its own commits carry Git-v0's identity; all three checks pass."""
    calls, reward, info = play(env, [bash("cd repo && git log --oneline"), bash(SOLVE), bash(SUBMIT)], TASK)
    prompt = calls[0]["messages"][-1]["content"]
    assert "v2.1.0" in prompt and "directory repo" in prompt
    assert "Bump version to 2.1.0" in calls[1]["messages"][-1]["content"]  # the setup's history
    assert "Release 2.1.0" in calls[2]["messages"][-1]["content"]  # the annotated tag was made
    assert reward == 1.0
    assert info["end"] == "agent_exited" and info["checks_passed"] == info["checks_total"] == 3


@pytest.mark.parametrize(
    ("command", "reward"), [("cd repo && git status", 0.0), (NEAR_MISS, 1 / 3)], ids=["nothing done", "near miss"]
)
def test_a_policy_that_fails_earns_what_git_v0_pays_it(env, command, reward):
    """The reward is Git-v0's: the fraction of the checks that pass (none for a repository left as built)."""
    _, paid, info = play(env, [bash(command), bash(SUBMIT)], TASK)
    assert paid == pytest.approx(reward)
    assert info["end"] == "agent_exited" and info["checks_passed"] < info["checks_total"]


def test_the_task_set_is_git_v0s_and_the_kind_is_checked():
    env = HarnessEnvironment(task_kind="git", agent_sandbox="none", sandbox="none", **LIMITS)
    try:
        assert [task.task_id for task in env.task_set.tasks] == task_ids()
        git = GitEnvironment(sandbox="none")
        assert env.task_catalog() == git.task_catalog()
        git.close()
    finally:
        env.close()
    with pytest.raises(ValueError, match="task_kind"):
        HarnessEnvironment(task_kind="gti", **LIMITS)


def test_a_workspace_larger_than_git_v0s_sandbox_holds_earns_nothing():
    """The task solved, but files beside it past the workspace size: the copy would be short, so no
    check runs (fail closed, as Git-v0's verifier does)."""
    limits = {"workspace_size": 16 * 2**20}
    env = HarnessEnvironment(task_kind="git", limits=limits, **LIMITS)
    try:
        _, end = finish(env, TASK, [SOLVE, "head -c 20000000 /dev/zero > padding"])
        assert end.done and end.reward == 0.0 and end.info["workspace"] == "too large"
    finally:
        env.close()
