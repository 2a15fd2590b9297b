"""`RemoteAECEnv`: a PettingZoo AEC env whose turns run on a server."""

from __future__ import annotations

from typing import Any

import pettingzoo

from ._remote import RemoteAgents, RemoteAgentsFace

__all__ = ["RemoteAECEnv"]


class RemoteAECEnv(RemoteAgentsFace, pettingzoo.AECEnv[str, Any, Any]):
    """A ``pettingzoo.AECEnv`` served by another process, container or machine.

    Each ``step`` (and ``reset``) is one round trip whose reply holds the env's dicts (agents,
    rewards, terminations, truncations, infos, the cumulative rewards ``last()`` reads) and the
    observation of the agent whose turn it is, so ``last()`` costs nothing more; observing
    another agent asks the server. Values arrive as the env made them (dtypes, numpy scalars).
    Made by :func:`openenv_gym.pettingzoo.make_aec`.
    """

    def __init__(self, env_id: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._take_spec(RemoteAgents(env_id, "aec", **kwargs))
        self.agents: list[str] = []
        self.rewards: dict[str, Any] = {}
        self._cumulative_rewards: dict[str, Any] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection: str = ""
        self._observation: tuple[str, Any] | None = None  # (agent, its observation) of the last result

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._remote.check_open("reset")
        self._take(self._remote.client.reset(seed, options))
        self._remote.shown()

    def step(self, action: Any) -> None:
        self._remote.check_open("step")
        self._take(self._remote.client.step({"action": action}))
        self._remote.shown()

    def _take(self, data: dict[str, Any]) -> None:
        self.agents = data["agents"]
        self.agent_selection = data["agent_selection"]
        self.rewards = data["rewards"]
        self._cumulative_rewards = data["cumulative_rewards"]
        self.terminations = data["terminations"]
        self.truncations = data["truncations"]
        self.infos = data["infos"]
        self._observation = (self.agent_selection, data["observation"]) if "observation" in data else None

    def observe(self, agent: str) -> Any:
        self._remote.check_open("observe")
        if self._observation is not None and self._observation[0] == agent:
            return self._observation[1]
        return self._remote.client.observe(agent)
