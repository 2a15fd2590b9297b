"""Wrappers for remote environments, importable as ``openenv_gym.wrappers``.

``ChatMessages`` turns a tool env's observations into a chat history. ``SB3VecEnv`` and
``make_sb3_vec_env`` need Stable-Baselines3 (``pip install 'openenv-gym[sb3]'``); they load on
first use, so importing this package does not import SB3 or torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat import ChatMessages
    from .sb3 import SB3VecEnv, make_sb3_vec_env

__all__ = ["ChatMessages", "SB3VecEnv", "make_sb3_vec_env"]

_SB3 = {"SB3VecEnv", "make_sb3_vec_env"}


def __getattr__(name: str) -> Any:
    if name == "ChatMessages":
        return importlib.import_module(".chat", __name__).ChatMessages
    if name in _SB3:
        try:
            module = importlib.import_module(".sb3", __name__)
        except ImportError as exc:
            raise ImportError(
                f"openenv_gym.wrappers.{name} needs Stable-Baselines3: pip install 'openenv-gym[sb3]' ({exc})"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
