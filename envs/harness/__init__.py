"""The harness env (``openenv/Harness-v0``): a real coding agent runs each episode, and each model call
it makes is a step whose action is the model's reply (see :mod:`.environment`)."""

from __future__ import annotations

from .agents import AGENTS, AgentLaunch
from .environment import SOLUTION_FILE, HarnessEnvironment, HarnessState, ModelCallObservation, ReplyAction

__all__ = [
    "AGENTS",
    "SOLUTION_FILE",
    "AgentLaunch",
    "HarnessEnvironment",
    "HarnessState",
    "ModelCallObservation",
    "ReplyAction",
]
