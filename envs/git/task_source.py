"""The task set of openenv/Git-v0, written in Python so that its bash scripts stay readable.

The tasks are written in the ``task_source_<n>_<level>.py`` modules beside it (with ``task_writing.py``'s
helpers); ``tasks.jsonl`` is generated from :data:`TASKS`; after editing a task, regenerate it::

    python envs/git/task_source.py

Each task builds a repository with its ``setup`` script, shows the agent its ``prompt``, and scores the
final repository by the fraction of its ``checks`` (bash scripts, exit status 0 = pass) that pass. A
check tests the end state the prompt asks for, never the commands used, and fails on the repository
as the setup leaves it, so that submitting without doing anything scores 0. ``solution`` is a
sequence of tool calls that scores 1; ``near_miss`` one that leaves the task almost done (it scores
strictly between 0 and 1).

Setups run with a fixed identity (Ada Lovelace <ada@example.com>) and fixed author and committer
dates from the environment, so the repository they build is the same on every run; a setup that
needs other people or dates sets them per commit. Checks run under ``bash -euo pipefail``, where a
failing ``! cmd`` or ``a && b`` that isn't the script's last command goes unnoticed: they test a
negation with ``[ -z "$(...)" ]`` or ``if cmd; then exit 1; fi`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path

# Each module adds its tasks, in this order, to TASKS (the helpers they are written with: task_writing.py).
from openenv_gym.envs.git import (  # noqa: F401 - imported for the tasks they add
    task_source_1_easy,
    task_source_2_easy,
    task_source_3_medium,
    task_source_4_medium,
    task_source_5_medium,
    task_source_6_hard,
    task_source_7_hard,
)
from openenv_gym.envs.git.task_writing import MAX_TURNS, TASKS

__all__ = ["TASKS", "TASKS_FILE", "render_jsonl"]

TASKS_FILE = Path(__file__).with_name("tasks.jsonl")


# Easy tasks first, then medium, then hard; in the order they are written within a level.
TASKS.sort(key=lambda task: list(MAX_TURNS).index(task["difficulty"]))


def render_jsonl() -> str:
    """The content of tasks.jsonl: one task a line, in the order of TASKS."""
    return "".join(json.dumps(task, ensure_ascii=False) + "\n" for task in TASKS)


if __name__ == "__main__":
    TASKS_FILE.write_text(render_jsonl())
    print(f"wrote {len(TASKS)} tasks to {TASKS_FILE}")
