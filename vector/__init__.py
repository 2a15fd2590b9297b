"""Vector environments over many remote sessions, importable as ``openenv_gym.vector``.

Empty for now: ``RemoteVectorEnv`` lands here next.
"""

from __future__ import annotations

__all__: list[str] = []
