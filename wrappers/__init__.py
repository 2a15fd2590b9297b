"""Wrappers for remote environments, importable as ``openenv_gym.wrappers``.

``ChatMessages`` turns a tool env's observations into a chat history. ``RecordEpisodes``,
``RecordVectorEpisodes`` and ``RecordAsyncEpisodes`` record episodes and pay the user's reward
functions (:mod:`.recording`); ``SampleTasks`` resets a vector env's episodes to the tasks a sampler
picks (:mod:`.task_sampling`). ``SB3VecEnv`` and
``make_sb3_vec_env`` need Stable-Baselines3 (``pip install 'openenv-gym[sb3]'``); they load on
first use, so importing this package does not import SB3 or torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat import ChatMessages
    from .recording import RecordAsyncEpisodes, RecordEpisodes, RecordVectorEpisodes
    from .sb3 import SB3VecEnv, make_sb3_vec_env
    from .task_sampling import SampleTasks

__all__ = [
    "ChatMessages",
    "RecordAsyncEpisodes",
    "RecordEpisodes",
    "RecordVectorEpisodes",
    "SB3VecEnv",
    "SampleTasks",
    "make_sb3_vec_env",
]

_SB3 = {"SB3VecEnv", "make_sb3_vec_env"}
_RECORDING = {"RecordAsyncEpisodes", "RecordEpisodes", "RecordVectorEpisodes"}


def __getattr__(name: str) -> Any:
    if name == "ChatMessages":
        return importlib.import_module(".chat", __name__).ChatMessages
    if name == "SampleTasks":
        return importlib.import_module(".task_sampling", __name__).SampleTasks
    if name in _RECORDING:
        return getattr(importlib.import_module(".recording", __name__), name)
    if name in _SB3:
        try:
            module = importlib.import_module(".sb3", __name__)
        except ImportError as exc:
            raise ImportError(
                f"openenv_gym.wrappers.{name} needs Stable-Baselines3: pip install 'openenv-gym[sb3]' ({exc})"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
