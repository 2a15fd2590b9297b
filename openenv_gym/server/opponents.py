"""Built-in opponents: what plays a game's seats that no client takes.

A policy is any callable ``policy(observation, agent, action_space) -> action``; one with a
``reset(seed)`` method is told a seed each round, the server's
(:meth:`~openenv_gym.server.game_rules.GameRules.opponent_seed`: fresh randomness, or, when the
operator fixes a secret, the players' seed mixed with it, so a seeded game replays). ``"random"``
samples a legal action (it honours an ``action_mask`` in the observation or the info, as
PettingZoo's own tests do); a server is given more by name (``serve --opponent
NAME=module:fn``), such as a scripted player or a checkpoint's policy.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["Policy", "RandomPolicy", "action_mask", "load_policies", "make_policy"]

#: The name of the policy that samples legal actions.
RANDOM = "random"


class Policy(Protocol):
    """What plays a seat: an action for ``agent`` given its observation."""

    def __call__(self, observation: Any, agent: str, action_space: Any) -> Any: ...


def action_mask(observation: Any, info: Mapping[str, Any] | None = None) -> Any:
    """The legal-action mask an observation (``observation["action_mask"]``) or info carries, or None."""
    if isinstance(observation, Mapping) and "action_mask" in observation:
        return observation["action_mask"]
    if info is not None and "action_mask" in info:
        return info["action_mask"]
    return None


class RandomPolicy:
    """A uniformly random legal action, from a generator of its own (seeded by :meth:`reset`).

    It samples from its own copy of each agent's action space, so it never moves the env's
    spaces' generators.
    """

    def __init__(self) -> None:
        self._spaces: dict[str, Any] = {}
        self._seed: int | None = None

    def reset(self, seed: int | None) -> None:
        """Start an episode: with a seed, the same actions as every episode of that seed."""
        self._seed = seed
        self._spaces.clear()

    def __call__(self, observation: Any, agent: str, action_space: Any) -> Any:
        space = self._spaces.get(agent)
        if space is None:
            space = self._spaces[agent] = copy.deepcopy(action_space)
            # Each agent's stream differs but follows from the episode's seed.
            space.seed(None if self._seed is None else self._seed + len(self._spaces))
        mask = action_mask(observation)
        return space.sample(mask) if mask is not None else space.sample()


def load_policies(named: Mapping[str, str]) -> dict[str, Callable[[], Policy]]:
    """Makers of the policies ``named`` gives as ``{name: "module:fn"}``, each ``fn`` a policy.

    Raises:
        ValueError: a name that is not ``module:attr``, that cannot be imported, or is not callable.
    """
    makers: dict[str, Callable[[], Policy]] = {}
    for name, target in named.items():
        module_name, _, attr = target.partition(":")
        if not attr:
            raise ValueError(f"opponent {name}={target!r}: expected module:function")
        try:
            policy = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"opponent {name}={target!r} cannot be loaded: {exc}") from exc
        if not callable(policy):
            raise ValueError(f"opponent {name}={target!r} is not callable")
        makers[name] = functools.partial(_itself, policy)
    return makers


def _itself(policy: Policy) -> Policy:
    return policy


def make_policy(name: str, policies: Mapping[str, Callable[[], Policy]]) -> Policy:
    """A fresh policy called ``name``: ``"random"`` or one the server was given.

    Raises:
        ValueError: a name the server does not know.
    """
    if name == RANDOM and RANDOM not in policies:
        return RandomPolicy()
    maker = policies.get(name)
    if maker is None:
        raise ValueError(f"no opponent called {name!r}; this server has {sorted({RANDOM, *policies})}")
    return maker()
