"""ReasoningGym-v0: questions from the reasoning-gym package's procedural generators, scored by its verifiers."""

from __future__ import annotations

from .environment import AnswerAction, ReasoningGymEnvironment, ReasoningObservation, ReasoningState
from .tasks import CODE_SCORERS, DEFAULT_GENERATORS, ReasoningTask, make_tasks

__all__ = [
    "CODE_SCORERS",
    "DEFAULT_GENERATORS",
    "AnswerAction",
    "ReasoningGymEnvironment",
    "ReasoningObservation",
    "ReasoningState",
    "ReasoningTask",
    "make_tasks",
]
