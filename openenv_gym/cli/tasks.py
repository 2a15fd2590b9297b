"""``openenv-gym tasks``: list a task env's tasks."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]

_TASK_ENVS = {"coding": "openenv_gym.envs.coding.tasks", "git": "openenv_gym.envs.git.tasks"}


def add_parser(commands: Any) -> None:
    tasks = commands.add_parser(
        "tasks",
        help="list a task env's tasks (Coding's, or Git's with --env git): id, difficulty and the prompt's first line",
        description="List the tasks of openenv/Coding-v0 (and CodingTools-v0), or with --env git of "
        "openenv/Git-v0 (tab-separated: id, difficulty, the prompt's first line); an id is what "
        "reset(options={'task_id': ...}) takes.",
    )
    tasks.add_argument(
        "--env",
        default="coding",
        choices=sorted(_TASK_ENVS),
        help="whose tasks: coding (Coding-v0 and CodingTools-v0, the default) or git (Git-v0)",
    )
    tasks.add_argument(
        "--tasks",
        default=None,
        metavar="PATH",
        help="a JSONL task file or hf://datasets/... (default: the shipped set)",
    )
    tasks.add_argument(
        "--difficulty", action="append", choices=("easy", "medium", "hard"), help="only this difficulty (repeatable)"
    )


def run(args: argparse.Namespace) -> int:
    import importlib

    select_tasks = importlib.import_module(_TASK_ENVS[args.env]).select_tasks
    try:
        selected = select_tasks(args.tasks, args.difficulty)
    except (OSError, ValueError) as exc:
        print(f"openenv-gym tasks: error: {exc}", file=sys.stderr)
        return 1
    for task in selected:
        print(f"{task.task_id}\t{task.difficulty}\t{task.prompt.splitlines()[0]}")
    return 0
