"""The reward-hacking catalogue on Git-v0, over every shipped task: what the agent does to the repository
that the verifier would see differently from what is there scores 0, and an episode pays once.

The repository tricks that would run code when the verifier's git runs (hooks, config, attributes,
replace refs, a fake ``git``) and a repository that leads git outside the verifier's copy are in
``tests/envs/test_git_hostile.py``; this file holds the classes that apply to every task.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenv_gym.envs.git import GitEnvironment, load_tasks
from openenv_gym.envs.git.tasks import GitTask, ToolCall
from tests.envs.test_git_tasks import call, episode

TASKS = load_tasks()

#: The agent's last act after a correct solution, one per class: each makes the verifier's copy of
#: the repository short (what it cannot read, it cannot check), so every check must fail.
UNREADABLE = {
    "a file made unreadable": "touch .openenv-gym-x && chmod 000 .openenv-gym-x",
    "a directory made unreadable": "mkdir -p .openenv-gym-d/inner && chmod 000 .openenv-gym-d",
    "a tracked file made unreadable": (
        'f="$(git ls-files 2>/dev/null | head -n 1)"; [ -n "$f" ] || { f=.openenv-gym-t; touch "$f"; }; chmod 000 "$f"'
    ),
}


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
def test_what_the_verifier_cannot_read_fails_every_check(env: GitEnvironment, task: GitTask, trick: str) -> None:
    """The task's solution, then a file (or directory) the agent makes unreadable (each task one of the
    tricks, in turn): the verifier's copy is short, so no check runs and the episode scores 0 (it
    scored the checks on what was copied, so "this file must be gone" passed)."""
    calls = [tool_call for tool_call in task.solution if tool_call.tool != "submit"]
    submitted, _ = episode(env, task, [*calls, ToolCall(tool="run", arguments={"command": UNREADABLE[trick]})])
    assert submitted.reward == 0.0, submitted.metadata["checks"]
    outputs = submitted.metadata["check_output"]
    assert all("no check ran: the copy of the repository is incomplete" in output for output in outputs), outputs


@pytest.mark.slow
def test_an_episode_pays_once(env: GitEnvironment) -> None:
    """After the submit, every tool call is refused until reset: the episode cannot be scored again."""
    task = TASKS[0]
    submitted, _ = episode(env, task, task.solution)
    assert submitted.reward == 1.0 and submitted.done
    for tool_call in (ToolCall(tool="submit"), ToolCall(tool="run", arguments={"command": "true"})):
        with pytest.raises(RuntimeError, match="the episode has ended"):
            call(env, tool_call)
