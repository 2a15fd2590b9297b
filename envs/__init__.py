"""The environments openenv-gym ships, importable as ``openenv_gym.envs``; each has its own folder."""

from __future__ import annotations

__all__: list[str] = []
