"""Vector environments over many remote sessions, importable as ``openenv_gym.vector``."""

from __future__ import annotations

from .remote_vector_env import RemoteVectorEnv

__all__ = ["RemoteVectorEnv"]
