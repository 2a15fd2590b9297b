"""`RemoteParallelEnv`: a PettingZoo Parallel env stepped on a server, every agent in one round trip."""

from __future__ import annotations

from typing import Any, NoReturn

import gymnasium
import pettingzoo

from ._remote import RemoteAgents

__all__ = ["RemoteParallelEnv"]


class RemoteParallelEnv(pettingzoo.ParallelEnv[str, Any, Any]):
    """A ``pettingzoo.ParallelEnv`` served by another process, container or machine.

    ``step(actions)`` sends every live agent's action in one frame and returns the five dicts
    the env returned, values as it made them (arrays travel as raw bytes). Made by
    :func:`openenv_gym.pettingzoo.make_parallel`.
    """

    def __init__(self, env_id: str | None = None, **kwargs: Any) -> None:
        self._remote = RemoteAgents(env_id, "parallel", **kwargs)
        remote = self._remote
        self.possible_agents = list(remote.possible_agents)
        self.observation_spaces = remote.observation_spaces
        self.action_spaces = remote.action_spaces
        self.metadata = remote.metadata
        self.render_mode = remote.render_mode
        self.agents: list[str] = []

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

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._remote.check_open("reset")
        data = self._remote.client.reset(seed, options)
        self.agents = data["agents"]
        return data["observations"], data["infos"]

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        self._remote.check_open("step")
        data = self._remote.client.step({"actions": actions})
        self.agents = data["agents"]
        return data["observations"], data["rewards"], data["terminations"], data["truncations"], data["infos"]

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
        return f"RemoteParallelEnv({self._remote.name}, {self._remote.base_url})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{self!r} holds a live session with its server and cannot be pickled or copied")
