"""``openenv-gym tasks``: list a task env's tasks (from its files, or from a server's ``/schema``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._arguments import env_kwargs

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
        "env_id",
        nargs="?",
        default=None,
        help="a registered task env id (openenv/ReasoningGym-v0): start its server and list the task set it "
        "publishes, with each task's split (tab-separated: id, difficulty, split); --env-kwargs as gym.make takes them",
    )
    tasks.add_argument(
        "--env-kwargs", type=env_kwargs, default={}, help="with an env id: gym.make keyword arguments, as JSON"
    )
    tasks.add_argument("--split", default=None, help="with an env id: only this split")
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

    if args.env_id is not None:
        return _served(args)

    select_tasks = importlib.import_module(_TASK_ENVS[args.env]).select_tasks
    try:
        selected = select_tasks(args.tasks, args.difficulty)
    except (OSError, ValueError) as exc:
        print(f"openenv-gym tasks: error: {exc}", file=sys.stderr)
        return 1
    for task in selected:
        print(f"{task.task_id}\t{task.difficulty}\t{task.prompt.splitlines()[0]}")
    return 0


def _served(args: argparse.Namespace) -> int:
    """The task set the env's server publishes: id, difficulty and split of each task."""
    from .. import tasks

    try:
        catalog = tasks(args.env_id, **args.env_kwargs)
        if args.split is not None:
            catalog.ids(split=args.split)  # an unknown split is refused by name
    except ValueError as exc:
        print(f"openenv-gym tasks: error: {exc}", file=sys.stderr)
        return 1
    wanted = set(catalog.ids(split=args.split, difficulty=None)) if args.split is not None else None
    for entry in catalog:
        if (wanted is None or entry.task_id in wanted) and (not args.difficulty or entry.difficulty in args.difficulty):
            print(f"{entry.task_id}\t{entry.difficulty}\t{entry.split}")
    return 0
