"""The reward-hacking catalogue on Git-v0, over every shipped task: what the agent does to the repository
that the verifier would see differently from what is there scores 0, and an episode pays once.

The repository tricks that would run code when the verifier's git runs (hooks, config, attributes,
replace refs, a fake ``git``) and a repository that leads git outside the verifier's copy are in
``tests/envs/test_git_hostile.py``; this file holds the classes that apply to every task.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from openenv_gym.envs.git import GitEnvironment, load_tasks
from openenv_gym.envs.git.tasks import GitTask, ToolCall
from tests.envs.test_git_tasks import call, episode

TASKS = load_tasks()

#: The agent's last act, one per class: each makes part of the repository unreadable to the agent's
#: own uid, which the verifier's copy would leave out (a "this file must be gone" check then passed).
UNREADABLE = {
    "a file made unreadable": "touch .openenv-gym-x && chmod 000 .openenv-gym-x",
    "a directory made unreadable": "mkdir -p .openenv-gym-d/inner && chmod 000 .openenv-gym-d",
    "a tracked file made unreadable": (
        'f="$(git ls-files 2>/dev/null | head -n 1)"; [ -n "$f" ] || { f=.openenv-gym-t; touch "$f"; }; chmod 000 "$f"'
    ),
}
#: As root the worker copies the workspace for the verifier, whatever its modes; elsewhere the
#: verifier copies it as the agent's uid, and fails closed when the copy is short.
ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def env() -> Iterator[GitEnvironment]:
    env = GitEnvironment()
    yield env
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "trick"),
    [(task, list(UNREADABLE)[index % len(UNREADABLE)]) for index, task in enumerate(TASKS)],
    ids=lambda value: value.task_id if isinstance(value, GitTask) else value.replace(" ", "-"),
)
def test_what_the_agent_makes_unreadable_is_still_verified(env: GitEnvironment, task: GitTask, trick: str) -> None:
    """The task's near miss, then a file (or directory) the agent makes unreadable (each task one of the
    tricks, in turn): it scores no more than the near miss alone. As root the verifier's copy holds
    every file (the worker copies as root); elsewhere the copy is short, so no check runs (0)."""
    near_miss = [tool_call for tool_call in task.near_miss if tool_call.tool != "submit"]
    honest, _ = episode(env, task, near_miss)
    trick_call = ToolCall(tool="run", arguments={"command": UNREADABLE[trick]})
    submitted, _ = episode(env, task, [*near_miss, trick_call])
    assert submitted.reward is not None and honest.reward is not None
    assert submitted.reward <= honest.reward, (submitted.metadata["checks"], honest.metadata["checks"])
    short = [
        "no check ran: the copy of the repository is incomplete" in out for out in submitted.metadata["check_output"]
    ]
    assert short == [not ROOT] * len(short), submitted.metadata["check_output"]


@pytest.mark.slow
def test_an_episode_pays_once(env: GitEnvironment) -> None:
    """After the submit, every tool call is refused until reset: the episode cannot be scored again."""
    task = TASKS[0]
    submitted, _ = episode(env, task, task.solution)
    assert submitted.reward == 1.0 and submitted.done
    for tool_call in (ToolCall(tool="submit"), ToolCall(tool="run", arguments={"command": "true"})):
        with pytest.raises(RuntimeError, match="the episode has ended"):
            call(env, tool_call)
