"""`RemoteAECEnv`: a PettingZoo AEC env whose turns run on a server."""

from __future__ import annotations

from typing import Any, NoReturn

import gymnasium
import pettingzoo

from ._remote import RemoteAgents

__all__ = ["RemoteAECEnv"]


class RemoteAECEnv(pettingzoo.AECEnv[str, Any, Any]):
    """A ``pettingzoo.AECEnv`` served by another process, container or machine.

    Each ``step`` (and ``reset``) is one round trip whose reply holds the env's dicts (agents,
    rewards, terminations, truncations, infos, the cumulative rewards ``last()`` reads) and the
    observation of the agent whose turn it is, so ``last()`` costs nothing more; observing
    another agent asks the server. Values arrive as the env made them (dtypes, numpy scalars).
    Made by :func:`openenv_gym.pettingzoo.make_aec`.
    """

    def __init__(self, env_id: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._remote = RemoteAgents(env_id, "aec", **kwargs)
        remote = self._remote
        self.possible_agents = list(remote.possible_agents)
        self.observation_spaces = remote.observation_spaces
        self.action_spaces = remote.action_spaces
        self.metadata = remote.metadata
        self.render_mode = remote.render_mode
        self.agents: list[str] = []
        self.rewards: dict[str, Any] = {}
        self._cumulative_rewards: dict[str, Any] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection: str = ""
        self._observation: tuple[str, Any] | None = None  # (agent, its observation) of the last result

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self._remote.base_url

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.action_spaces[agent]

    @property
    def state_space(self) -> gymnasium.spaces.Space[Any] | None:
        """The space of :meth:`state`, if the env has one."""
        return self._remote.state_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._remote.check_open("reset")
        self._take(self._remote.client.reset(seed, options))

    def step(self, action: Any) -> None:
        self._remote.check_open("step")
        self._take(self._remote.client.step({"action": action}))

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

    def state(self) -> Any:
        self._remote.check_open("state")
        return self._remote.client.state()

    def render(self) -> Any:
        self._remote.check_open("render")
        return self._remote.client.render()

    def close(self) -> None:
        self._remote.close()

    def __str__(self) -> str:
        return str(self.metadata.get("name", type(self).__name__))

    def __repr__(self) -> str:
        return f"RemoteAECEnv({self._remote.name}, {self._remote.base_url})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{self!r} holds a live session with its server and cannot be pickled or copied")
