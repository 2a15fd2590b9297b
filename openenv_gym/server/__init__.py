"""The server layer: the `Environment` base class, `EnvServer`, and the Gymnasium adapter."""

from __future__ import annotations

from .env_server import EnvServer
from .environment import Action, Environment, EnvironmentMetadata, Observation, State
from .gym_environment import GymEnvironment
from .runner import load_factory, run

__all__ = [
    "Action",
    "EnvServer",
    "Environment",
    "EnvironmentMetadata",
    "GymEnvironment",
    "Observation",
    "State",
    "load_factory",
    "run",
]
