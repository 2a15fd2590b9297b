"""`FactoryEnvironment`: a sub-env a pickled factory made, served as a GymEnvironment that trusts pickles."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from ..spaces import ACTION_FIELD, from_wire
from ..spaces.user_spaces import carry_pickled_values
from .gym_environment import GymEnvironment

__all__ = ["FactoryEnvironment"]


class FactoryEnvironment(GymEnvironment):
    """A :class:`GymEnvironment` of a session of pickled factories (:mod:`.pickled_factories`).

    The session trusts pickles, so the values of spaces of your own in its spaces travel pickled
    (:mod:`openenv_gym.spaces.user_spaces`). An action space holding one has its actions go to the
    env unchecked, as AsyncVectorEnv sends them: that space's ``contains`` is the user's, and
    need not take every action the env does.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._check_actions = not carry_pickled_values(self.action_space)
        carry_pickled_values(self.observation_space)

    def parse_action(self, data: dict[str, Any]) -> Any:
        if self._check_actions:
            return super().parse_action(data)
        return from_wire(self.action_space, data, ACTION_FIELD)
