"""`AgentsVectorEnv`: a remote Parallel env's agents as the sub-envs of one Gymnasium VectorEnv (self-play).

Each agent of each copy of the env is one sub-env, in the order of ``possible_agents``, copy
after copy: a policy trained on the vector env plays every seat at once, as SuperSuit's
``pettingzoo_env_to_vec_env_v1`` arranges it. As there, every agent must have the same spaces
and all agents of a copy must stay until its episode ends together; the copy then resets in the
same step (Gymnasium's ``SAME_STEP`` autoreset, which :class:`~openenv_gym.wrappers.SB3VecEnv`
takes), each of its sub-envs' last observation in ``infos["final_obs"]``::

    from openenv_gym.pettingzoo import make_agents_vec
    from openenv_gym.wrappers import SB3VecEnv
    from stable_baselines3 import PPO

    envs = make_agents_vec("classic/rps-v2", copies=4)     # 4 sessions x 2 players = 8 sub-envs
    PPO("MlpPolicy", SB3VecEnv(envs)).learn(10_000)          # one policy, both seats
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from .parallel import RemoteParallelEnv

__all__ = ["AgentsVectorEnv", "make_agents_vec"]

_SESSION_SETTINGS = ("binary", "open_timeout", "call_timeout", "render_mode")


class AgentsVectorEnv(VectorEnv[Any, Any, Any]):
    """``copies`` remote Parallel envs, each agent one sub-env (see the module's docstring).

    Args:
        env_id: as for :func:`~openenv_gym.pettingzoo.make_parallel`.
        copies: how many envs (sessions) to run; the first starts the server (unless
            ``base_url`` is given) and the others join it.
        **kwargs: as for :func:`~openenv_gym.pettingzoo.make_parallel`.

    Raises:
        ValueError: the agents' spaces differ.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012 - VectorEnv declares it so

    def __init__(self, env_id: str | None = None, copies: int = 1, **kwargs: Any) -> None:
        if copies < 1:
            raise ValueError(f"copies must be at least 1, got {copies}")
        first = RemoteParallelEnv(env_id, **kwargs)
        self.envs = [first]
        try:
            if copies > 1:
                # The others join the first's server: only the session's own settings apply to them.
                attach = {key: kwargs[key] for key in _SESSION_SETTINGS if key in kwargs}
                attach.update(base_url=first.base_url, token=first._remote.client.token)
                self.envs += [RemoteParallelEnv(None, **attach) for _ in range(copies - 1)]
        except BaseException:
            self.close()
            raise
        self.agents: list[str] = list(first.possible_agents)
        observation_space = first.observation_space(self.agents[0])
        action_space = first.action_space(self.agents[0])
        for agent in self.agents:
            if first.observation_space(agent) != observation_space or first.action_space(agent) != action_space:
                self.close()
                raise ValueError(
                    f"every agent must have the same spaces to share a policy; {agent} has "
                    f"{first.observation_space(agent)} and {first.action_space(agent)}"
                )
        self.num_envs = copies * len(self.agents)
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.observation_space = batch_space(observation_space, self.num_envs)
        self.action_space = batch_space(action_space, self.num_envs)
        self.render_mode = first.render_mode
        self._observations: Any = create_empty_array(observation_space, self.num_envs)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every copy (copy ``i`` with ``seed + i``, or the i-th of a list of seeds, one per sub-env)."""
        seeds = self._copy_seeds(seed)
        observations: list[Any] = []
        for env, copy_seed in zip(self.envs, seeds):
            by_agent, _ = env.reset(seed=copy_seed, options=options)
            observations += [by_agent[agent] for agent in self.agents]
        return concatenate(self.single_observation_space, observations, self._observations), {}

    def _copy_seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * len(self.envs)
        if isinstance(seed, int):
            return [seed + index for index in range(len(self.envs))]
        if len(seed) != self.num_envs:
            raise ValueError(f"seed must be an int or one per sub-env ({self.num_envs}), got {len(seed)}")
        return [seed[index * len(self.agents)] for index in range(len(self.envs))]  # a copy's first agent's

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        count = len(self.agents)
        observations: list[Any] = []
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        final_obs = np.full(self.num_envs, None, dtype=object)
        final_info = np.full(self.num_envs, None, dtype=object)
        ended = np.zeros(self.num_envs, dtype=np.bool_)
        for index, env in enumerate(self.envs):
            base = index * count
            by_agent = {agent: actions[base + offset] for offset, agent in enumerate(self.agents)}
            obs, reward, term, trunc, info = env.step(by_agent)
            for offset, agent in enumerate(self.agents):
                rewards[base + offset] = float(reward.get(agent, 0.0))
                terminated[base + offset] = bool(term.get(agent, False))
                truncated[base + offset] = bool(trunc.get(agent, False))
            done = [bool(terminated[base + offset] or truncated[base + offset]) for offset in range(count)]
            apart = any(done) and not all(done)
            if apart or (all(done) and env.agents):
                raise RuntimeError(
                    f"agents of {env!r} ended apart ({dict(zip(self.agents, done))}, live: {env.agents}): "
                    "an agents vector env needs every agent to stay until the episode ends"
                )
            if all(done):
                for offset, agent in enumerate(self.agents):
                    final_obs[base + offset] = obs[agent]
                    final_info[base + offset] = info.get(agent, {})
                ended[base : base + count] = True
                obs, _ = env.reset()
            observations += [obs[agent] for agent in self.agents]
        infos: dict[str, Any] = {}
        if ended.any():
            infos = {"final_obs": final_obs, "_final_obs": ended, "final_info": final_info, "_final_info": ended.copy()}
        batched = concatenate(self.single_observation_space, observations, self._observations)
        return batched, rewards, terminated, truncated, infos

    def render(self) -> Any:
        """Every copy's frame."""
        return [env.render() for env in self.envs]

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


def make_agents_vec(env_id: str | None = None, copies: int = 1, **kwargs: Any) -> AgentsVectorEnv:
    """A remote Parallel env's agents as one VectorEnv's sub-envs (see :class:`AgentsVectorEnv`)."""
    return AgentsVectorEnv(env_id, copies, **kwargs)
