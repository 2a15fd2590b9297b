"""The Git environment (``openenv/Git-v0``): tasks in a git repository, for an agent with tools, in a sandbox.

``GitEnvironment`` builds each task's repository in a fresh sandbox and offers four tools: run a
bash command in it, read a file, write a file, and submit; the reward is the fraction of the
task's checks that pass on the repository the agent leaves.
"""

from __future__ import annotations

from .environment import GitEnvironment, GitObservation, GitState
from .tasks import GitTask, load_tasks, task_ids

__all__ = ["GitEnvironment", "GitObservation", "GitState", "GitTask", "load_tasks", "task_ids"]
