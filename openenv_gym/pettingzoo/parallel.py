"""`RemoteParallelEnv`: a PettingZoo Parallel env stepped on a server, every agent in one round trip."""

from __future__ import annotations

from typing import Any

import pettingzoo

from ..errors import EnvCreationError
from ._remote import RemoteAgents, RemoteAgentsFace

__all__ = ["RemoteParallelEnv"]


class RemoteParallelEnv(RemoteAgentsFace, pettingzoo.ParallelEnv[str, Any, Any]):
    """A ``pettingzoo.ParallelEnv`` served by another process, container or machine.

    ``step(actions)`` sends every live agent's action in one frame and returns the five dicts
    the env returned, values as it made them (arrays travel as raw bytes). Made by
    :func:`openenv_gym.pettingzoo.make_parallel`.
    """

    def __init__(self, env_id: str | None = None, **kwargs: Any) -> None:
        try:
            self._take_spec(RemoteAgents(env_id, "parallel", **kwargs))
        except EnvCreationError as exc:
            if "no Parallel API" not in exc.message:
                raise
            # The server speaks of its wire's api='aec', which the caller never passed: name the function.
            raise EnvCreationError(
                exc.code,
                "it is an AEC env with no Parallel API (its metadata does not say is_parallelizable): "
                "make_aec takes it, with the same arguments, and steps it turn by turn",
                exc.details,
                exc.env_id,
            ) from exc
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
