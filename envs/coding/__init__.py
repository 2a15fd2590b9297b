"""The Coding environment: Python function-writing tasks with hidden tests, run in a sandbox."""

from __future__ import annotations

from .environment import CodeAction, CodeObservation, CodingEnvironment, CodingState, TaskObservation
from .tasks import Task, TestCase, load_tasks, task_ids

__all__ = [
    "CodeAction",
    "CodeObservation",
    "CodingEnvironment",
    "CodingState",
    "Task",
    "TaskObservation",
    "TestCase",
    "load_tasks",
    "task_ids",
]
