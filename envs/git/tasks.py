"""Git tasks: the model of one task, and loading a task set (JSONL, a Hugging Face dataset or dicts).

A task file has one JSON object per line::

    {"task_id": "tag-the-release", "difficulty": "easy", "prompt": "Tag the last commit v1.0.",
     "setup": "git init -q -b main\\necho 1 > VERSION\\ngit add VERSION\\ngit commit -q -m 'Release 1.0'",
     "checks": [{"name": "v1.0 tags main", "run": "[ \\"$(git rev-parse v1.0^{commit})\\" = \\"$(git rev-parse main)\\" ]"}],
     "solution": [{"tool": "run", "arguments": {"command": "git tag v1.0"}}],
     "near_miss": [{"tool": "run", "arguments": {"command": "git tag v1"}}],
     "max_turns": 10}

``setup`` builds the repository: a bash script run with ``bash -euo pipefail`` in an empty
directory that becomes the work tree, with a fixed identity and fixed dates (:mod:`.environment`),
so it builds the same commits every time. Each check is a bash script run the same way in a
copy of the final repository; it passes when it exits 0, and the reward of a ``submit`` is the
fraction that pass. ``solution`` and ``near_miss`` are tool calls that solve the task and that
leave it almost solved (scoring below 1): the test suite runs both, so a task set proves itself.
The checks and solutions never enter the agent's sandbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from openenv_gym.server.task_sets import BaseTask, TaskSource, load_task_set, select_task_set

__all__ = [
    "BUILTIN_TASKS",
    "MAX_PROMPT_LENGTH",
    "Check",
    "GitTask",
    "ToolCall",
    "load_tasks",
    "select_tasks",
    "task_ids",
]

BUILTIN_TASKS = Path(__file__).with_name("tasks.jsonl")
MAX_PROMPT_LENGTH = 8192
MAX_CHECKS = 100


class Check(BaseModel):
    """One check of the final repository: a bash script that exits 0 when it passes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    run: str = Field(min_length=1)


class ToolCall(BaseModel):
    """One tool call of a reference episode, as an agent would make it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: Literal["run", "read_file", "write_file", "submit"]
    arguments: dict[str, Any] = Field(default_factory=dict)


class GitTask(BaseTask):
    """A task in a git repository, scored by checks of the repository the agent leaves."""

    hidden_fields = ("setup", "checks", "solution", "near_miss")

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_LENGTH)
    setup: str = Field(min_length=1)
    checks: list[Check] = Field(min_length=1, max_length=MAX_CHECKS)
    solution: list[ToolCall] = Field(min_length=1)
    near_miss: list[ToolCall]
    max_turns: int | None = Field(default=None, ge=1)


def load_tasks(source: TaskSource = None) -> list[GitTask]:
    """Load a Git task set.

    Args:
        source: ``None`` for the shipped tasks; a path to a JSONL file; a Hugging Face dataset
            file as ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl``; or a list of task dicts.

    Raises:
        ValueError: the file is not a valid task set; the message names the line and the field.
        FileNotFoundError: no such file.
    """
    return load_task_set(source, GitTask, BUILTIN_TASKS)


def select_tasks(source: TaskSource = None, difficulties: Sequence[str] | None = None) -> list[GitTask]:
    """The tasks of ``source`` (as :func:`load_tasks` takes it) whose difficulty is one of ``difficulties`` (``None``: all).

    Raises:
        ValueError: a difficulty that is not one of ``"easy"``, ``"medium"``, ``"hard"``, no task left, or a bad task set.
    """
    return select_task_set(source, GitTask, BUILTIN_TASKS, difficulties)


def task_ids(tasks: TaskSource = None, difficulties: Sequence[str] | None = None) -> list[str]:
    """The ids of a Git task set, in its order: what ``reset(options={"task_id": ...})`` accepts.

    Raises:
        ValueError: an unknown difficulty (the message lists the valid ones), or a bad task set.
    """
    return [task.task_id for task in select_tasks(tasks, difficulties)]
