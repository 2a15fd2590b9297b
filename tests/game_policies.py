"""Policies a test server is given by name (``opponents="leftmost=tests.game_policies:leftmost_legal"``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def leftmost_legal(observation: Any, agent: str, action_space: Any) -> int:
    """The first legal action (Connect Four: the leftmost column with room)."""
    return int(np.flatnonzero(observation["action_mask"])[0])
