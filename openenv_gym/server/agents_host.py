"""A PettingZoo env on a server: how one is made for each API, and its calls as wire values.

:class:`PettingZooFactory` is what a server of a multi-agent env serves: it makes the env with
the API a session asks for (``"aec"`` or ``"parallel"``), as a local user would (a module's own
``env()`` or ``parallel_env()``), converting with PettingZoo's own functions only when the env
has no maker of that API. :class:`AgentsHost` holds one env and answers for it: a reset's or a
step's result, an agent's observation, the global state, a frame. It runs in a session's worker
thread; nothing here knows of sockets.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ProtocolError
from ..protocol import ErrorCode
from ..protocol.agents import APIS, AgentsSpec

__all__ = [
    "AgentsHost",
    "PettingZooFactory",
    "api_of",
    "is_pettingzoo_id",
    "is_pettingzoo_module",
    "pettingzoo_factory",
]


def _pettingzoo() -> types.ModuleType:
    try:
        import pettingzoo
    except ImportError as exc:  # pragma: no cover - the extra is installed wherever this is used
        raise ValueError(
            f"serving a PettingZoo env needs pettingzoo: pip install 'openenv-gym[pettingzoo]' ({exc})"
        ) from exc
    return pettingzoo


def api_of(env: Any) -> str | None:
    """``"aec"`` or ``"parallel"`` for a PettingZoo env, ``None`` for anything else."""
    try:
        import pettingzoo
    except ImportError:
        return None
    if isinstance(env, pettingzoo.AECEnv):
        return "aec"
    if isinstance(env, pettingzoo.ParallelEnv):
        return "parallel"
    return None


@dataclasses.dataclass(frozen=True)
class PettingZooFactory:
    """Makes a PettingZoo env per session, in the API the session asks for.

    Args:
        name: what the env is called (its module, or ``module:fn``).
        makers: the env's own maker per API it has (``{"aec": module.env, "parallel":
            module.parallel_env}``); the other API, if any is missing, is converted.
        env_kwargs: keyword arguments for the maker.
    """

    name: str
    makers: Mapping[str, Callable[..., Any]]
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def make(self, api: str, render_mode: str | None = None) -> Any:
        """A fresh env of ``api``, in ``render_mode`` when given.

        Raises:
            ValueError: an API this env cannot be given in (an AEC env that is not parallelizable).
        """
        if api not in APIS:
            raise ValueError(f"api must be one of {list(APIS)}, got {api!r}")
        kwargs = dict(self.env_kwargs) if render_mode is None else {**self.env_kwargs, "render_mode": render_mode}
        maker = self.makers.get(api)
        if maker is not None:
            return self._checked(maker(**kwargs), api)
        from pettingzoo.utils.conversions import aec_to_parallel, parallel_to_aec

        other = "parallel" if api == "aec" else "aec"
        env = self._checked(self.makers[other](**kwargs), other)
        if api == "aec":
            return parallel_to_aec(env)
        if not env.metadata.get("is_parallelizable", False):
            raise ValueError(
                f"{self.name} is an AEC env whose metadata does not say is_parallelizable: "
                "it has no Parallel API (use api='aec')"
            )
        return aec_to_parallel(env)

    def _checked(self, env: Any, api: str) -> Any:
        if api_of(env) != api:
            raise TypeError(f"{self.name} made a {type(env).__name__}, not a PettingZoo {api.upper()} env")
        return env

    @property
    def game_api(self) -> str:
        """The API a game of this env plays in: Parallel when the env has it (every live agent
        acts each step, so a game gathers their actions), AEC (turn by turn) otherwise."""
        return "parallel" if "parallel" in self.makers else "aec"


def is_pettingzoo_module(target: str) -> bool:
    """Whether ``target`` names a PettingZoo env's module (``pettingzoo.classic.connect_four_v3``,
    PettingZoo's older way to make envs): a module, not ``module:attr``, with an ``env`` or
    ``parallel_env`` maker."""
    if ":" in target or "/" in target:
        return False
    try:
        module = importlib.import_module(target)
    except ImportError:
        return False
    return callable(getattr(module, "env", None)) or callable(getattr(module, "parallel_env", None))


def is_pettingzoo_id(target: str) -> bool:
    """Whether ``target`` is an id in PettingZoo's registries (``classic/connect_four-v3``)."""
    if importlib.util.find_spec("pettingzoo") is None:
        return False
    import pettingzoo

    registries = [getattr(pettingzoo, name, {}) for name in ("aec_registry", "parallel_registry")]
    return any(target in registry for registry in registries)


def pettingzoo_factory(target: str, env_kwargs: dict[str, Any] | None = None) -> PettingZooFactory:
    """The factory of a PettingZoo env: an id in PettingZoo's registries
    (``butterfly/pistonball-v6``, made with ``pettingzoo.make``), a PettingZoo env's module
    (``pettingzoo.butterfly.pistonball_v6``), or a ``module:fn`` returning a PettingZoo env (its
    API found by making one, then closed)."""
    pettingzoo = _pettingzoo()
    env_kwargs = dict(env_kwargs or {})
    if is_pettingzoo_id(target):
        registries = {"aec": pettingzoo.aec_registry, "parallel": pettingzoo.parallel_registry}
        makers = {
            api: functools.partial(pettingzoo.make, api, target)
            for api, registry in registries.items()
            if target in registry
        }
        return PettingZooFactory(target, makers, env_kwargs)
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    if not attr:
        makers = {
            api: getattr(module, name)
            for api, name in (("aec", "env"), ("parallel", "parallel_env"))
            if callable(getattr(module, name, None))
        }
        return PettingZooFactory(target, makers, env_kwargs)
    maker = getattr(module, attr)
    probe = maker(**env_kwargs)
    try:
        api = api_of(probe)
    finally:
        probe.close()
    if api is None:
        raise TypeError(f"{target} made a {type(probe).__name__}, not a PettingZoo AEC or Parallel env")
    return PettingZooFactory(target, {api: maker}, env_kwargs)


def _bad_action(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.VALIDATION_ERROR.value, message)


class AgentsHost:
    """One PettingZoo env of one API, its calls answered as wire values.

    An action is checked against its agent's action space first (``None`` only for an agent
    that is done, as PettingZoo's AEC API wants): a bad one raises a ``VALIDATION_ERROR``
    :class:`ProtocolError` and the env is not touched.
    """

    def __init__(self, env: Any, api: str) -> None:
        self.env = env
        self.api = api

    def spec(self) -> AgentsSpec:
        """The env's API, agents and spaces, as the ``agents_spec`` reply gives them."""
        from ..spaces import space_to_json

        env = self.env
        agents = list(env.possible_agents)
        for agent in agents:
            if not isinstance(agent, str):
                raise TypeError(f"agent {agent!r} is not a string: agents travel as the keys of JSON objects")
        state_space = getattr(env, "state_space", None)
        return AgentsSpec(
            api=self.api,
            possible_agents=agents,
            observation_spaces={agent: space_to_json(env.observation_space(agent)) for agent in agents},
            action_spaces={agent: space_to_json(env.action_space(agent)) for agent in agents},
            metadata=_jsonable_metadata(env.metadata),
            render_mode=getattr(env, "render_mode", None),
            state_space=None if state_space is None else space_to_json(state_space),
        )

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """Reset; the result as ``agents_result`` carries it."""
        if self.api == "aec":
            self.env.reset(seed=seed, options=options)
            return self.aec_result()
        observations, infos = self.env.reset(seed=seed, options=options)
        return {"agents": list(self.env.agents), "observations": observations, "infos": infos}

    def step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Step with ``data["action"]`` (AEC) or ``data["actions"]`` (Parallel); the result."""
        if self.api == "aec":
            if "action" not in data:
                raise _bad_action("an AEC env steps one action: send data.action (agent_selection's)")
            agent = self.env.agent_selection
            action = data["action"]
            self.check_action(agent, action)
            self.env.step(action)
            return self.aec_result()
        actions = data.get("actions")
        if not isinstance(actions, dict):
            raise _bad_action("a Parallel env steps every live agent's action: send data.actions")
        for agent, action in actions.items():
            if agent not in self.env.agents:
                raise _bad_action(f"{agent!r} is not a live agent (agents: {list(self.env.agents)})")
            self.check_action(agent, action)
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return {
            "agents": list(self.env.agents),
            "observations": observations,
            "rewards": rewards,
            "terminations": terminations,
            "truncations": truncations,
            "infos": infos,
        }

    def check_action(self, agent: str, action: Any) -> None:
        """Raise a ``VALIDATION_ERROR`` unless ``action`` is in ``agent``'s action space (or is the
        ``None`` a done agent steps with)."""
        env = self.env
        if action is None:
            if self.api == "aec" and (env.terminations.get(agent) or env.truncations.get(agent)):
                return
            raise _bad_action(f"a None action is only for an agent that is done; {agent!r} is not")
        space = env.action_space(agent)
        try:
            inside = bool(space.contains(action))
        except Exception:  # contains() of a value of the wrong kind may raise instead of saying no
            inside = False
        if not inside:
            raise _bad_action(f"action {action!r:.200} of {agent!r} is outside its action space {space}")

    def aec_result(self) -> dict[str, Any]:
        """What an AEC env is now: its dicts, whose turn it is, and that agent's observation."""
        env = self.env
        agent = env.agent_selection
        data: dict[str, Any] = {
            "agents": list(env.agents),
            "agent_selection": agent,
            "rewards": dict(env.rewards),
            "cumulative_rewards": dict(env._cumulative_rewards),
            "terminations": dict(env.terminations),
            "truncations": dict(env.truncations),
            "infos": dict(env.infos),
        }
        if agent in env.terminations:  # an agent of this episode: last() will observe it
            data["observation"] = env.observe(agent)
        return data

    def observe(self, agent: str) -> Any:
        """``observe(agent)`` (AEC only)."""
        if self.api != "aec":
            raise _bad_action("agents_observe is for AEC envs: a Parallel env's step returns every observation")
        if agent not in self.env.possible_agents:
            raise _bad_action(f"{agent!r} is not one of the env's agents {list(self.env.possible_agents)}")
        return self.env.observe(agent)

    def state(self) -> Any:
        """The env's global ``state()``."""
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _jsonable_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The env's metadata, leaving out what JSON cannot carry (a callable, a class)."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, (str, int, float, bool, type(None))) or (
            isinstance(value, (list, tuple)) and all(isinstance(item, (str, int, float, bool)) for item in value)
        ):
            out[str(key)] = list(value) if isinstance(value, tuple) else value
    return out
