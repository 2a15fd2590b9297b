"""The server layer: the `Environment` base class and its ``@tool`` methods, `EnvServer`, and the Gymnasium adapter."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .env_server import EnvServer
from .environment import Action, Environment, EnvironmentMetadata, Observation, State
from .runner import load_factory, run
from .task_sets import BaseTask, TaskSet
from .tools import ToolResult, tool

if TYPE_CHECKING:
    from .gym_environment import GymEnvironment

__all__ = [
    "Action",
    "BaseTask",
    "EnvServer",
    "Environment",
    "EnvironmentMetadata",
    "GymEnvironment",
    "Observation",
    "State",
    "TaskSet",
    "ToolResult",
    "load_factory",
    "run",
    "tool",
]


def __getattr__(name: str) -> Any:
    # GymEnvironment imports gymnasium; servers of other environments never load it.
    if name == "GymEnvironment":
        return importlib.import_module(".gym_environment", __name__).GymEnvironment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
