"""The reward-hacking catalogue on Git-v0, over every shipped task: what the agent does to the repository
that the verifier would see differently from what is there scores 0, and an episode pays once.

The repository tricks that would run code when the verifier's git runs (hooks, config, attributes,
replace refs, a fake ``git``) and a repository that leads git outside the verifier's copy are in
``tests/envs/test_git_hostile.py``; this file holds the classes that apply to every task.
"""

from __future__ import annotations

import base64
import os
import shlex
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


_HONEST: dict[str, float] = {}


def honest_near_miss(env: GitEnvironment, task: GitTask) -> float:
    """What the task's near miss scores on its own (measured once per task)."""
    if task.task_id not in _HONEST:
        submitted, _ = episode(env, task, near_miss(task))
        assert submitted.reward is not None
        _HONEST[task.task_id] = submitted.reward
    return _HONEST[task.task_id]


def near_miss(task: GitTask) -> list[ToolCall]:
    return [tool_call for tool_call in task.near_miss if tool_call.tool != "submit"]


def solve_script(task: GitTask) -> str:
    """The task's solution as one shell script (file writes as base64, reads dropped)."""
    lines = ['cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"']
    for tool_call in task.solution:
        if tool_call.tool == "run":
            lines.append(tool_call.arguments["command"])
        elif tool_call.tool == "write_file":
            data = base64.b64encode(tool_call.arguments["content"].encode()).decode()
            path = shlex.quote(tool_call.arguments["path"])
            lines.append(f'mkdir -p "$(dirname {path})" && echo {data} | base64 -d > {path}')
    return "\n".join(lines) + "\n"


def plant_the_solution(task: GitTask) -> str:
    """The agent's last command: the task's own solution, set to run whenever git runs in the repository
    (fsmonitor, hooks, a hooks path, filters on every file, a diff driver, an alias, a fake ``git`` in the
    work tree), as if the verifier's git would solve the task for the agent."""
    # Once: the solution's own git commands would fire it again.
    run = "[ -e .openenv-gym-ran ] || { touch .openenv-gym-ran; sh .openenv-gym-solve.sh >/dev/null 2>&1; }"
    config = "\n".join(
        [
            "[core]",
            f'\tfsmonitor = "{run}; true"',
            "\thooksPath = .githooks",
            f'\tpager = "{run}; cat"',
            '[filter "solve"]',
            f'\tclean = "{run}; cat"',
            f'\tsmudge = "{run}; cat"',
            '[diff "solve"]',
            f'\ttextconv = "{run}; cat"',
            "[alias]",
            f'\tstatus = "!{run}"',
        ]
    )
    hook = f"#!/bin/sh\n{run}\n"
    script = base64.b64encode(solve_script(task).encode()).decode()
    return (
        f"echo {script} | base64 -d > .openenv-gym-solve.sh\n"
        "printf '* filter=solve diff=solve\\n' >> .gitattributes\n"
        'gitdir="$(git rev-parse --git-dir)"\n'
        f"printf '%s\\n' '{config}' >> \"$gitdir/config\"\n"
        'mkdir -p .githooks "$gitdir/hooks"\n'
        'for dir in .githooks "$gitdir/hooks"; do\n'
        "  for name in pre-commit post-checkout post-commit reference-transaction post-index-change; do\n"
        f"    printf '%s' '{hook}' > \"$dir/$name\" && chmod +x \"$dir/$name\"\n"
        "  done\n"
        "done\n"
        f"printf '%s' '#!/bin/sh\n{run}\n' > git && chmod +x git\n"
        "echo planted\n"
    )


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
    honest = honest_near_miss(env, task)
    trick_call = ToolCall(tool="run", arguments={"command": UNREADABLE[trick]})
    submitted, _ = episode(env, task, [*near_miss(task), trick_call])
    verdict = env.last_verdict
    assert verdict is not None and submitted.reward is not None and submitted.reward <= honest, verdict
    short = ["no check ran: the copy of the repository is incomplete" in out for out in verdict.outputs]
    assert short == [not ROOT] * len(short), verdict.outputs


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.task_id)
def test_the_solution_planted_for_the_verifier_s_git_to_run_scores_nothing(env: GitEnvironment, task: GitTask) -> None:
    """The near miss, then the task's own solution planted in hooks, config (fsmonitor, filters, diff
    drivers, pager, aliases), attributes and a fake ``git``: the verifier's git runs none of it, so the
    episode scores what the near miss does, or less."""
    honest = honest_near_miss(env, task)
    planted = ToolCall(tool="run", arguments={"command": plant_the_solution(task)})
    submitted, results = episode(env, task, [*near_miss(task), planted])
    assert results[-1].value["stdout"].endswith("planted\n"), results[-1].value
    assert submitted.reward is not None and submitted.reward <= honest, env.last_verdict


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS[:5], ids=lambda task: task.task_id)
def test_the_planted_solution_is_live_when_the_agent_s_own_git_runs(env: GitEnvironment, task: GitTask) -> None:
    """The control: the same plant fires in the agent's own sandbox as soon as its git runs (so the
    verifier's scoring nothing above is the verifier's doing, not a dud plant)."""
    env.reset(options={"task_id": task.task_id})
    planted = call(env, ToolCall(tool="run", arguments={"command": plant_the_solution(task)}))
    assert planted.value["stdout"].endswith("planted\n"), planted.value
    fired = call(env, ToolCall(tool="run", arguments={"command": "git status > /dev/null 2>&1; ls -a"}))
    assert ".openenv-gym-ran" in fired.value["stdout"].split(), fired.value


@pytest.mark.slow
def test_an_episode_pays_once(env: GitEnvironment) -> None:
    """After the submit, every tool call is refused until reset: the episode cannot be scored again."""
    task = TASKS[0]
    submitted, _ = episode(env, task, task.solution)
    assert submitted.reward == 1.0 and submitted.done
    for tool_call in (ToolCall(tool="submit"), ToolCall(tool="run", arguments={"command": "true"})):
        with pytest.raises(RuntimeError, match="the episode has ended"):
            call(env, tool_call)
