"""Wrappers for remote environments, importable as ``openenv_gym.wrappers``.

``SB3VecEnv`` and ``make_sb3_vec_env`` need Stable-Baselines3 (``pip install 'openenv-gym[sb3]'``);
they load on first use, so importing this package does not import SB3 or torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sb3 import SB3VecEnv, make_sb3_vec_env

__all__ = ["SB3VecEnv", "make_sb3_vec_env"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        try:
            module = importlib.import_module(".sb3", __name__)
        except ImportError as exc:
            raise ImportError(
                f"openenv_gym.wrappers.{name} needs Stable-Baselines3: pip install 'openenv-gym[sb3]' ({exc})"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
