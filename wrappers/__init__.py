"""Wrappers for remote environments, importable as ``openenv_gym.wrappers``.

Empty for now: the Stable-Baselines3 adapter lands here with the vector env.
"""

from __future__ import annotations

__all__: list[str] = []
