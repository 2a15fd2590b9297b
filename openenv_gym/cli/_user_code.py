"""How a command finds the user's code: a ``module:attr`` (serve's TARGET, eval's ``--policy``,
rescore's ``--reward``, a ``module:Name-v0`` id) imports from the current directory, as with
``python -m``, whichever way the command was started (the console script's ``sys.path`` starts at
its own ``bin/`` directory instead)."""

from __future__ import annotations

import os
import sys

__all__ = ["current_directory_importable"]


def current_directory_importable() -> None:
    """Put the current directory first on ``sys.path``, unless it is there already (``""`` also
    names it), as ``python -m`` (and uvicorn) do."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
