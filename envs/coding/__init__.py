"""The Coding environments: Python function-writing tasks with hidden tests, run in a sandbox.

``CodingEnvironment`` (``openenv/Coding-v0``) takes one program per step; ``CodingToolsEnvironment``
(``openenv/CodingTools-v0``) offers the same tasks through tools: run code, run the examples, submit.
"""

from __future__ import annotations

from .environment import CodeAction, CodeObservation, CodingEnvironment, CodingState, TaskObservation
from .tasks import Task, TestCase, load_tasks, task_ids
from .tools_environment import CodingToolsEnvironment, CodingToolsObservation

__all__ = [
    "CodeAction",
    "CodeObservation",
    "CodingEnvironment",
    "CodingState",
    "CodingToolsEnvironment",
    "CodingToolsObservation",
    "Task",
    "TaskObservation",
    "TestCase",
    "load_tasks",
    "task_ids",
]
