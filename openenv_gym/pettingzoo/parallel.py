"""`RemoteParallelEnv`: a PettingZoo Parallel env stepped on a server, every agent in one round trip."""

from __future__ import annotations

from typing import Any

import pettingzoo

from ._remote import RemoteAgents, RemoteAgentsFace

__all__ = ["RemoteParallelEnv"]


class RemoteParallelEnv(RemoteAgentsFace, pettingzoo.ParallelEnv[str, Any, Any]):
    """A ``pettingzoo.ParallelEnv`` served by another process, container or machine.

    ``step(actions)`` sends every live agent's action in one frame and returns the five dicts
    the env returned, values as it made them (arrays travel as raw bytes). Made by
    :func:`openenv_gym.pettingzoo.make_parallel`.
    """

    def __init__(self, env_id: str | None = None, **kwargs: Any) -> None:
        self._take_spec(RemoteAgents(env_id, "parallel", **kwargs))
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._remote.check_open("reset")
        data = self._remote.client.reset(seed, options)
        self.agents = data["agents"]
        self._remote.shown()
        return data["observations"], data["infos"]

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        self._remote.check_open("step")
        data = self._remote.client.step({"actions": actions})
        self.agents = data["agents"]
        self._remote.shown()
        return data["observations"], data["rewards"], data["terminations"], data["truncations"], data["infos"]
