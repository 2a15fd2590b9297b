"""`FactoryEnvironment`: a sub-env a pickled factory made, served as a GymEnvironment that trusts pickles."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..spaces import ACTION_FIELD, from_wire
from ..spaces.user_spaces import carry_pickled_values
from .gym_environment import GymEnvironment

__all__ = ["FactoryEnvironment"]


class FactoryEnvironment(GymEnvironment):
    """A :class:`GymEnvironment` of a session of pickled factories (:mod:`.pickled_factories`).

    The session trusts pickles, so the values of spaces of your own in its spaces travel pickled
    (:mod:`openenv_gym.spaces.user_spaces`). The env is the caller's own, so its actions go to it
    unchecked, as AsyncVectorEnv sends them: the space's ``contains`` need not take every action
    the env does (a ``Discrete(4)`` env whose ``step`` handles 4).
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        carry_pickled_values(self.action_space)
        carry_pickled_values(self.observation_space)
        # An array space's actions may come as the caller's numpy values or Python numbers: they
        # go to the env as they are.
        self._as_sent = isinstance(
            self.action_space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
        )

    def parse_action(self, data: dict[str, Any]) -> Any:
        if type(data) is dict and len(data) == 1:
            value = data.get(ACTION_FIELD)
            if self._discrete is not None and type(value) is int:  # GymEnvironment's fast path, unchecked
                return self._discrete[2](value)
            if self._as_sent and isinstance(value, (int, float, np.ndarray, np.generic)):
                return value  # the caller's own (a packed request keeps its dtype), as AsyncVectorEnv hands it on
        return from_wire(self.action_space, data, ACTION_FIELD)
