"""PettingZoo envs on a server: ``make_aec`` and ``make_parallel`` return PettingZoo's own env types.

    from openenv_gym.pettingzoo import make_aec, make_parallel

    env = make_aec("openenv/ConnectFour-v3")            # a server starts; env is a pettingzoo.AECEnv
    env = make_parallel("pettingzoo.butterfly.pistonball_v6", n_pistons=10)
    env = make_aec(base_url="http://host:8000")          # a server someone else runs

The id is a registered ``openenv/...`` id, a PettingZoo env's module, or ``module:fn``; keyword
arguments are ``gym.make``'s for a remote env (``base_url``, ``provider``, ``token``, the
timeouts, ``render_mode``) and the env's own (``n_pistons=10``). One session drives every agent;
for one agent per client, in games other clients join, see ``gym.make(id, agent=..., game=...)``
(:mod:`openenv_gym.server.games`). ``make_agents_vec`` makes a Parallel env's agents the sub-envs
of one Gymnasium VectorEnv, for self-play with one policy (SB3 through ``SB3VecEnv``).
"""

from __future__ import annotations

from typing import Any

from .aec import RemoteAECEnv
from .parallel import RemoteParallelEnv
from .vector import AgentsVectorEnv, make_agents_vec

__all__ = ["AgentsVectorEnv", "RemoteAECEnv", "RemoteParallelEnv", "make_aec", "make_agents_vec", "make_parallel"]


def make_aec(env_id: str | None = None, **kwargs: Any) -> RemoteAECEnv:
    """A ``pettingzoo.AECEnv`` on a server (see the module's docstring)."""
    return RemoteAECEnv(env_id, **kwargs)


def make_parallel(env_id: str | None = None, **kwargs: Any) -> RemoteParallelEnv:
    """A ``pettingzoo.ParallelEnv`` on a server (see the module's docstring)."""
    return RemoteParallelEnv(env_id, **kwargs)
