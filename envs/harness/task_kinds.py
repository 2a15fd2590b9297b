"""The kinds of task a harness env's agent works on, each the task set and grader of an existing env.

- ``"coding"`` (:class:`CodingTasks`): openenv/Coding-v0's tasks; the agent writes the function in
  :data:`SOLUTION_FILE`, and Coding's hidden tests run on it in the grader's sandbox.
- ``"git"`` (:class:`GitTasks`): openenv/Git-v0's tasks; the task's setup builds the repository in
  Git-v0's sandbox, it is copied into the agent's workspace (as ``repo``), and when the agent exits
  its workspace is copied back into that sandbox and Git-v0's ``submit`` runs the hidden checks there
  (the fraction that pass is the reward).

Either way the task file (the tests, the checks) is hidden from the agent's sandbox, and the grader
never runs anything of the workspace outside its own sandbox.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
from pathlib import Path
from typing import Any, Protocol

from openenv_gym.sandbox import Limits
from openenv_gym.server.task_sets import TaskSet, TaskSource, hidden_task_files

from ..coding.environment import MAX_CODE_LENGTH
from ..coding.harness import grade, task_sandbox
from ..coding.tasks import Task
from ..coding.tasks import select_tasks as select_coding_tasks
from ..git.environment import GitEnvironment, command_env
from ..git.tasks import BUILTIN_TASKS as GIT_TASKS_FILE

__all__ = ["SOLUTION_FILE", "TASK_KINDS", "WORK_TREE", "CodingTasks", "GitTasks", "TaskKind"]

#: The file a Coding task's function is written in (in the agent's working directory).
SOLUTION_FILE = "solution.py"
#: Where a Git task's repository is, in the agent's working directory (as in Git-v0's workspace).
WORK_TREE = "repo"
#: The variables of Git-v0's commands the agent's commands get too: its identity and fixed dates,
#: no pager nor prompt (its ``HOME`` and ``PATH`` stay the agent's own).
_GIT_VARIABLES = ("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG_NOSYSTEM", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "PAGER")


class TaskKind(Protocol):
    """What a harness env needs of a kind of task."""

    task_set: TaskSet[Any]
    #: Paths of the host the confined agent must not read (the task file).
    hidden_paths: list[str]
    #: Variables set for the agent's processes.
    variables: dict[str, str]

    def prompt(self, task: Any) -> str:
        """What the agent is told."""

    def prepare(self, task: Any, workspace: Path) -> None:
        """Start the grader's sandbox and fill the agent's (empty) workspace for ``task``."""

    def grade(self, task: Any, workspace: Path) -> tuple[float, dict[str, Any]]:
        """The reward of the workspace as the agent left it, and what ``info`` says of it."""

    def close(self) -> None:
        """Stop the grader's sandbox."""


class CodingTasks:
    """openenv/Coding-v0's tasks: a function in :data:`SOLUTION_FILE`, paid 1 when it passes every hidden test."""

    def __init__(self, tasks: TaskSource, difficulties: list[str] | None, limits: Limits, sandbox: Any, **split: Any):
        self.limits = limits
        self.task_set: TaskSet[Task] = TaskSet(select_coding_tasks(tasks, difficulties), **split)
        self._sandbox = task_sandbox(tasks, limits, sandbox)  # raises if no sandbox here
        self.hidden_paths = list(self._sandbox.hidden_paths)
        self.variables: dict[str, str] = {}

    def prompt(self, task: Task) -> str:
        return (
            f"{task.statement}\n\nWrite the function in the file {SOLUTION_FILE} in the current directory "
            f"(define it at the top level of the module: it is imported and called by hidden tests)."
        )

    def prepare(self, task: Task, workspace: Path) -> None:
        self._sandbox.start()

    def grade(self, task: Task, workspace: Path) -> tuple[float, dict[str, Any]]:
        info: dict[str, Any] = {"tests_total": len(task.tests)}
        code = _solution(workspace / SOLUTION_FILE)
        if code is None:
            return 0.0, {**info, "tests_passed": 0, "solution": "missing"}
        graded = grade(self._sandbox, task, code, self.limits.output_limit)
        return (1.0 if graded.solved else 0.0), {**info, "tests_passed": sum(graded.passed), "solution": "graded"}

    def close(self) -> None:
        self._sandbox.close()


class GitTasks:
    """openenv/Git-v0's tasks, built and checked by a Git-v0 env of the server's own (its ``submit``
    on a copy of the agent's workspace): the reward is the fraction of the checks that pass."""

    def __init__(self, tasks: TaskSource, difficulties: list[str] | None, limits: Limits, sandbox: Any, **split: Any):
        self._git = GitEnvironment(
            tasks=tasks, difficulties=difficulties, max_turns=None, sandbox=sandbox, limits=_git_limits(limits), **split
        )
        self.task_set = self._git.task_set
        self.hidden_paths = [os.fspath(path) for path in hidden_task_files(tasks, GIT_TASKS_FILE)]
        self.variables = {name: value for name, value in command_env("").items() if name.startswith(_GIT_VARIABLES)}
        self._header = b""

    def prompt(self, task: Any) -> str:
        return (
            f"{task.prompt}\n\nThe git repository is the directory {WORK_TREE} in the current directory. "
            "When you are done, finish: the repository is then checked as you leave it."
        )

    def prepare(self, task: Any, workspace: Path) -> None:
        self._git.reset(options={"task_id": task.task_id})  # builds the repository in Git-v0's sandbox
        self._header, _, files = self._git.snapshot().partition(b"\n")
        with tarfile.open(fileobj=io.BytesIO(files)) as archive:
            archive.extractall(workspace, filter=_owned_here)

    def grade(self, task: Any, workspace: Path) -> tuple[float, dict[str, Any]]:
        info: dict[str, Any] = {"checks_total": len(task.checks)}
        files = _archive(workspace, self._git.limits.workspace_size)
        if files is None:
            return 0.0, {**info, "checks_passed": 0, "workspace": "too large"}
        try:
            self._git.restore(self._header + b"\n" + files)
        except RuntimeError:  # the sandbox could not unpack it: fail closed, as Git-v0's verifier does
            return 0.0, {**info, "checks_passed": 0, "workspace": "not loaded"}
        result = self._git.submit()
        return float(result.reward or 0.0), {**info, "checks_passed": result.value["checks_passed"]}

    @property
    def last_verdict(self) -> Any:
        """Which checks passed, and what each printed: the server's alone (see Git-v0's ``last_verdict``)."""
        return self._git.last_verdict

    def close(self) -> None:
        self._git.close()


#: The kinds of task, by the name ``HarnessEnvironment(task_kind=...)`` takes.
TASK_KINDS: dict[str, type[CodingTasks] | type[GitTasks]] = {"coding": CodingTasks, "git": GitTasks}


def _git_limits(limits: Limits) -> dict[str, Any]:
    """The harness's grader limits as Git-v0's ``limits`` argument (it sizes its scratch itself)."""
    fields = {name: getattr(limits, name) for name in Limits.__dataclass_fields__}
    fields.pop("scratch_size", None)
    return fields


def _owned_here(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """Unpack the setup's repository as the server's user's (the sandbox's worker wrote it as its own)."""
    member = tarfile.data_filter(member, path)
    return member.replace(uid=os.getuid(), gid=os.getgid(), uname="", gname="", deep=False)


def _archive(workspace: Path, limit: int) -> bytes | None:
    """The workspace as a tar (links kept as links, nothing followed out of it); ``None`` when its
    files pass ``limit`` bytes, more than Git-v0's sandbox holds."""
    total = 0
    for directory, _, names in os.walk(workspace):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    if total > limit:
        return None
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(workspace.iterdir()):
            archive.add(entry, arcname=entry.name)
    return buffer.getvalue()


def _solution(path: Path) -> str | None:
    """The solution file's text as the agent left it (``None``: absent, not a plain file, too long or
    not UTF-8); a link is not followed, so no file outside the workspace is ever read for it."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # a FIFO would block the read
            return None
        data = file.read(MAX_CODE_LENGTH * 4 + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if len(text) <= MAX_CODE_LENGTH else None
