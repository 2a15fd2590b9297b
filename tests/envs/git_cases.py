"""The Git env's test tasks, and helpers to replay a task's tool calls and to watch one env's sandbox processes.

The tests use these tasks, not the shipped task file (which grows on its own); the shipped file
is checked task by task in ``test_git_tasks.py``. They are the ones ``envs/git/tasks.jsonl``
started with: one per difficulty, and every check fails on the repository the setup builds.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from openenv_gym.envs.git import GitEnvironment
from openenv_gym.envs.git.tasks import ToolCall

__all__ = [
    "MERGE",
    "RECOVER",
    "TAG",
    "TASKS",
    "TASKS_BY_ID",
    "WALL_TIME",
    "descendants",
    "replay",
    "run_processes",
    "sandbox_processes",
    "sh",
]

WALL_TIME = 5.0  # the sandbox's wall-clock limit in these tests: a few hostile commands run into it


def sh(script: str) -> str:
    """A bash script written indented: dedented, with no blank line before it."""
    return textwrap.dedent(script).strip("\n") + "\n"


TAG, MERGE, RECOVER = "tag-the-release", "merge-keeping-both-lines", "recover-a-deleted-branch"

TASKS: list[dict[str, Any]] = [
    {
        "task_id": TAG,
        "difficulty": "easy",
        "prompt": 'The last commit on main is release 1.0. Tag it v1.0 with an annotated tag whose message is "Release 1.0".',
        "setup": sh("""
            git init -q -b main
            echo 'print("hello")' > app.py
            git add app.py
            git commit -q -m 'Add the app'
            echo 1.0 > VERSION
            git add VERSION
            git commit -q -m 'Bump the version to 1.0'
        """),
        "checks": [
            {
                "name": "v1.0 names main's last commit",
                "run": """[ "$(git rev-parse -q --verify 'v1.0^{commit}')" = "$(git rev-parse main)" ]""",
            },
            {"name": "v1.0 is an annotated tag", "run": '[ "$(git cat-file -t v1.0)" = tag ]'},
            {
                "name": "its message is Release 1.0",
                "run": """[ "$(git tag -l --format='%(contents:subject)' v1.0)" = "Release 1.0" ]""",
            },
        ],
        "solution": [
            {"tool": "run", "arguments": {"command": "git tag -a v1.0 -m 'Release 1.0'"}},
            {"tool": "submit", "arguments": {}},
        ],
        "near_miss": [{"tool": "run", "arguments": {"command": "git tag v1.0"}}],
        "max_turns": 10,
    },
    {
        "task_id": MERGE,
        "difficulty": "medium",
        "prompt": "Merge the branch feature into main. Both changed the greeting in greeting.txt, so the merge "
        "conflicts: keep both lines, main's first, then feature's, and commit the merge.",
        "setup": sh("""
            git init -q -b main
            echo 'Hello' > greeting.txt
            git add greeting.txt
            git commit -q -m 'Add a greeting'
            git checkout -q -b feature
            echo 'Hello from feature' > greeting.txt
            git commit -q -am 'Greet from feature'
            git checkout -q main
            echo 'Hello from main' > greeting.txt
            git commit -q -am 'Greet from main'
        """),
        "checks": [
            {
                "name": "main is a merge of feature",
                "run": sh("""
                    [ "$(git rev-parse main^2)" = "$(git rev-parse feature)" ]
                    [ "$(git log -1 --format=%s main^1)" = 'Greet from main' ]
                """),
            },
            {
                "name": "both lines are kept, main's first",
                "run": """[ "$(git show main:greeting.txt)" = "$(printf 'Hello from main\\nHello from feature')" ]""",
            },
            {
                "name": "the merge is done: main is checked out, its work tree clean",
                "run": sh("""
                    git rev-parse -q --verify main^2 > /dev/null
                    [ "$(git symbolic-ref HEAD)" = refs/heads/main ]
                    [ -z "$(git status --porcelain)" ]
                """),
            },
        ],
        "solution": [
            {"tool": "run", "arguments": {"command": "git merge feature"}},
            {"tool": "read_file", "arguments": {"path": "greeting.txt"}},
            {
                "tool": "write_file",
                "arguments": {"path": "greeting.txt", "content": "Hello from main\nHello from feature\n"},
            },
            {"tool": "run", "arguments": {"command": "git add greeting.txt && git commit -q --no-edit"}},
        ],
        "near_miss": [
            {"tool": "run", "arguments": {"command": "git merge feature"}},
            {
                "tool": "write_file",
                "arguments": {"path": "greeting.txt", "content": "Hello from main\nHello from feature\n"},
            },
            {"tool": "run", "arguments": {"command": "git add greeting.txt"}},
        ],
    },
    {
        "task_id": RECOVER,
        "difficulty": "hard",
        "prompt": "Someone deleted the branch experiment with `git branch -D`. Bring it back, pointing at the commit "
        "it pointed at before, without changing main.",
        "setup": sh("""
            git init -q -b main
            echo 'def parse(text): return text.split()' > parser.py
            git add parser.py
            git commit -q -m 'Add a parser'
            git checkout -q -b experiment
            echo '# faster, one day' >> parser.py
            git commit -q -am 'Plan a faster parser'
            echo 'def parse_fast(text): return text.split(" ")' >> parser.py
            git commit -q -am 'Try a faster parser'
            git checkout -q main
            git branch -q -D experiment
        """),
        "checks": [
            {
                "name": "experiment is back at its last commit",
                "run": '[ "$(git log -1 --format=%s experiment)" = "Try a faster parser" ]',
            },
            {
                "name": "experiment holds both of its commits",
                "run": '[ "$(git rev-list --count main..experiment)" = 2 ]',
            },
            {
                "name": "experiment is back, and main is unchanged",
                "run": sh("""
                    git rev-parse -q --verify refs/heads/experiment > /dev/null
                    [ "$(git log --format=%s main)" = "Add a parser" ]
                    [ "$(git symbolic-ref HEAD)" = refs/heads/main ]
                """),
            },
        ],
        "solution": [
            {"tool": "run", "arguments": {"command": "git reflog -n 3"}},
            {"tool": "run", "arguments": {"command": "git branch experiment 'HEAD@{1}'"}},
        ],
        "near_miss": [{"tool": "run", "arguments": {"command": "git branch experiment 'HEAD@{1}~1'"}}],
    },
]
TASKS_BY_ID = {task["task_id"]: task for task in TASKS}


def replay(call: Callable[[str, dict[str, Any]], Any], calls: Iterable[dict[str, Any] | ToolCall]) -> list[Any]:
    """Make each of ``calls`` (a task's ``solution`` or ``near_miss``) with ``call(tool, arguments)``, up to a ``submit``.

    Returns what each call returned; the caller submits (a ``submit`` in ``calls`` is where they stop).
    """
    returned = []
    for item in calls:
        tool_call = item if isinstance(item, ToolCall) else ToolCall.model_validate(item)
        if tool_call.tool == "submit":
            break
        returned.append(call(tool_call.tool, dict(tool_call.arguments)))
    return returned


def descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it (zombies left out)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        if Path(f"/proc/{current}").exists():
            found.add(current)
            todo += children.get(current, [])
    return found


def sandbox_processes(env: GitEnvironment) -> set[int]:
    """The processes of ``env``'s sandbox right now: bubblewrap's and everything below it (empty when closed)."""
    pid = env._sandbox.pid
    return descendants(pid) if pid is not None else set()


def run_processes(env: GitEnvironment, baseline: set[int]) -> set[int]:
    """Processes of ``env``'s sandbox beyond ``baseline`` (its processes between runs): what a run left behind.

    Whatever uid the runs have (their own as root, the server's otherwise), a run's process stays
    in the sandbox's pid namespace, below its bubblewrap, even when it leaves its session.
    """
    if not baseline:
        raise AssertionError("no baseline: the sandbox had no process when it was taken")
    return sandbox_processes(env) - baseline
