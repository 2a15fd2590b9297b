"""Server-side vector envs for a Gymnasium id: Gymnasium's ``vector_entry_point``, ALE, EnvPool, openenv-gym's own.

:class:`VectorBackends` says which of them can serve an id (and why not), builds one probe of
each to publish its spaces, autoreset modes and render modes in ``/schema["vector_backends"]``,
and builds the vector env of each vector session (in the render mode it asks for). Every backend is a ``gymnasium.vector.VectorEnv`` or
behaves like one (EnvPool's, through :class:`_EnvPoolVector`), keeping its own autoreset mode.
"""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from ..protocol.batch import BatchCallFrame
from ..protocol.vector import OWN_VECTOR_ENVS
from ..spaces import space_to_json
from .gym_environment import _MICROSECOND_ENVS, session_render_modes

__all__ = ["VectorBackends", "VectorHost"]

_ALE_ENTRY_POINT = "ale_py.env:AtariEnv"
#: The vector env's method each ``batch_call`` op calls.
_VECTOR_METHODS = {"get": "get_attr", "set": "set_attr", "call": "call"}


def _parameters(function: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return {}


class _EnvPoolVector:
    """EnvPool's env as Gymnasium's vector API: seeded by ``reset(seed=...)``, which EnvPool
    only takes when the pool is made, so a new seed makes a new pool."""

    def __init__(self, task_id: str, num_envs: int, kwargs: dict[str, Any]) -> None:
        self.task_id, self.num_envs, self.kwargs = task_id, num_envs, kwargs
        self.seed: int | None = None
        self.env = self._make(None)
        self.single_observation_space = self.env.observation_space
        self.single_action_space = self.env.action_space
        self.metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def _make(self, seed: int | None) -> Any:
        import envpool

        seeded = {} if seed is None else {"seed": seed}
        return envpool.make_gymnasium(self.task_id, num_envs=self.num_envs, **seeded, **self.kwargs)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if options:
            raise ValueError(f"EnvPool takes no reset options, got {sorted(options)}")
        if seed is not None and seed != self.seed:
            self.env.close()
            self.env, self.seed = self._make(seed), seed
        return self.env.reset()

    def step(self, actions: Any) -> Any:
        return self.env.step(actions)

    def close(self) -> None:
        self.env.close()


class VectorHost:
    """One vector session's vector env; what its worker thread calls."""

    def __init__(self, env: Any, blocking: bool) -> None:
        self.env = env
        self.blocking = blocking
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space

    def reset(
        self, seed: int | list[int | None] | None, options: dict[str, Any] | None, mask: list[bool] | None
    ) -> tuple[Any, Any]:
        if mask is not None:
            options = {**(options or {}), "reset_mask": np.asarray(mask, dtype=np.bool_)}
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: Any) -> tuple[Any, ...]:
        return tuple(self.env.step(actions))

    def render(self) -> Any:
        """The vector env's ``render()``, in the render mode it was made with."""
        return self.env.render()

    def call(self, request: BatchCallFrame) -> list[Any]:
        """A ``batch_call`` as the vector env answers it in-process: its own ``get_attr``, ``set_attr``
        or ``call`` (SyncVectorEnv's reach its sub-envs), one value per sub-env.

        Raises:
            AttributeError: the vector env has no such method (``CartPoleVectorEnv``: a vector env
                with no sub-env objects), as Gymnasium raises it in-process.
            ValueError: the call names some sub-envs only (a vector env's reach them all).
        """
        method_name = _VECTOR_METHODS.get(request.op)
        size = getattr(self.env, "num_envs", None)
        if method_name is None or (request.envs is not None and sorted(request.envs) != list(range(size or 0))):
            raise ValueError(
                f"a server-side vector env answers get_attr, set_attr and call of all its sub-envs, not "
                f"{request.op} of sub-envs {request.envs}: make the vector env with vector_backend='per_env' for this"
            )
        method = getattr(self.env, method_name, None)
        if method is None:
            raise AttributeError(
                f"{type(self.env).__name__} has no {method_name}: a vector env without sub-env objects, as in Gymnasium"
            )
        if request.op == "set":
            method(request.name, request.values)
            return [None] * (size or len(request.values or ()))
        if request.op == "get":
            return list(method(request.name))
        return list(method(request.name, *request.args, **request.kwargs))

    def close(self) -> None:
        self.env.close()


class VectorBackends:
    """The vector envs that can serve Gymnasium id ``env_id`` made as the server makes its envs.

    Args:
        env_id: the Gymnasium id.
        max_episode_steps: as for :func:`~openenv_gym.server.gym_environment.make_gym_env`:
            ``-1`` the spec's limit, ``None`` none, a number that limit.
        env_kwargs: the env's keyword arguments.
    """

    def __init__(self, env_id: str, max_episode_steps: int | None, env_kwargs: dict[str, Any]) -> None:
        self.env_id = env_id
        self.spec = gym.spec(env_id)
        self.max_episode_steps = self.spec.max_episode_steps if max_episode_steps == -1 else max_episode_steps
        self.env_kwargs = dict(env_kwargs)
        self._description: tuple[dict[str, dict[str, Any]], dict[str, str]] | None = None
        self._probes: dict[Any, dict[str, Any]] = {}

    # What each backend would build -------------------------------------------------------------

    def _entry_point(self, name: str) -> Any:
        """The class or function backend ``name`` builds from; raise ValueError saying why not."""
        if name == "gymnasium":
            if self.spec.vector_entry_point is None:
                raise ValueError(f"{self.env_id} has no vector_entry_point")
            entry_point = self.spec.vector_entry_point
            return gym.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        if name == "ale":
            if self.spec.entry_point != _ALE_ENTRY_POINT:
                raise ValueError(f"{self.env_id} is not an ALE game (its entry point is {self.spec.entry_point})")
            try:
                from ale_py.vector_env import AtariVectorEnv
            except ImportError as exc:
                raise ValueError(f"ale-py is not installed: {exc}") from exc
            return AtariVectorEnv
        if name == "openenv_gym":
            own = OWN_VECTOR_ENVS.get(self.spec.entry_point) if isinstance(self.spec.entry_point, str) else None
            if own is None:
                raise ValueError(f"openenv-gym has no vector env of its own for {self.spec.entry_point}")
            return gym.envs.registration.load_env_creator(own)
        if name == "envpool":
            try:
                import envpool
            except ImportError as exc:
                raise ValueError(f"EnvPool is not installed (pip install envpool): {exc}") from exc
            if self._envpool_task() not in envpool.list_all_envs():
                raise ValueError(f"EnvPool has no task {self._envpool_task()!r}")
            return _EnvPoolVector
        raise ValueError(f"unknown vector backend {name!r}")

    def _envpool_task(self) -> str:
        return self.env_id.removeprefix("ALE/")  # EnvPool names Atari games without the namespace

    def _renders(self, name: str, entry_point: Any) -> bool:
        """Whether backend ``name`` takes a ``render_mode`` (EnvPool's and ALE's vector envs do not)."""
        return name != "envpool" and "render_mode" in _parameters(entry_point)

    def _kwargs(self, name: str, entry_point: Any, mode: AutoresetMode, render_mode: str | None) -> dict[str, Any]:
        """The keyword arguments for ``entry_point``, as ``gymnasium.make_vec`` passes them."""
        if render_mode is not None and not self._renders(name, entry_point):
            raise ValueError(f"{getattr(entry_point, '__name__', name)} renders nothing (it takes no render_mode)")
        if name == "envpool":
            kwargs = dict(self.env_kwargs)
            if self.max_episode_steps is not None:
                kwargs.setdefault("max_episode_steps", self.max_episode_steps)
            return kwargs
        kwargs = {**self.spec.kwargs, **self.env_kwargs}
        if render_mode is not None:
            kwargs["render_mode"] = render_mode
        parameters = _parameters(entry_point)
        if "max_episode_steps" in parameters:
            if self.max_episode_steps is None:
                raise ValueError(f"{entry_point.__name__} has a built-in time limit, and this server serves none")
            kwargs.setdefault("max_episode_steps", self.max_episode_steps)
        elif self.max_episode_steps is not None and name == "gymnasium":
            raise ValueError(f"{entry_point.__name__} takes no max_episode_steps ({self.max_episode_steps} asked)")
        if "autoreset_mode" in parameters:
            kwargs["autoreset_mode"] = mode
        return kwargs

    def make(self, name: str, num_envs: int, mode: Any, render_mode: str | None = None) -> VectorHost:
        """Build backend ``name`` with ``num_envs`` sub-envs in autoreset ``mode``.

        Args:
            name: one of :data:`~openenv_gym.protocol.vector.VECTOR_BACKENDS`.
            num_envs: the number of sub-envs.
            mode: Gymnasium's ``AutoresetMode`` or the wire's (the same values).
            render_mode: the vector env's ``render_mode`` (one of its entry's ``render_modes``).

        Raises:
            ValueError: the backend cannot serve this env in this mode, or renders nothing (the
                message says why).
        """
        mode = AutoresetMode(getattr(mode, "value", mode))
        entry_point = self._entry_point(name)
        kwargs = self._kwargs(name, entry_point, mode, render_mode)
        if name == "envpool":
            env = _EnvPoolVector(self._envpool_task(), num_envs, kwargs)
        else:
            env = entry_point(num_envs=num_envs, **kwargs)
        served = env.metadata.get("autoreset_mode")
        if served is not None and AutoresetMode(served) is not mode:
            env.close()
            raise ValueError(f"{type(env).__name__} autoresets {AutoresetMode(served).value}, not {mode.value}")
        blocking = not type(env).__module__.startswith(_MICROSECOND_ENVS)
        return VectorHost(env, blocking)

    # What /schema says --------------------------------------------------------------------------

    def describe(self) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """The backends offered (spaces, autoreset modes, entry point) and why the others are not.

        Gymnasium's, ALE's and openenv-gym's own were built (one sub-env in each autoreset mode)
        to find this out.
        EnvPool is not imported here (that alone takes over a second): when installed, it is
        offered with its one autoreset mode and no spaces, which :meth:`describe_one` adds.
        """
        if self._description is None:
            offered: dict[str, dict[str, Any]] = {}
            unavailable: dict[str, str] = {}
            for name in ("gymnasium", "ale", "openenv_gym"):
                try:
                    offered[name] = self.describe_one(name)
                except Exception as exc:  # any reason it cannot be built is a reason not to offer it
                    unavailable[name] = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            if importlib.util.find_spec("envpool") is None:
                unavailable["envpool"] = "EnvPool is not installed (pip install envpool)"
            else:
                entry_point = f"envpool.make_gymnasium({self._envpool_task()!r})"
                offered["envpool"] = {
                    "entry_point": entry_point,
                    "autoreset_modes": [AutoresetMode.NEXT_STEP.value],
                    "render_modes": [],
                }
            self._description = offered, unavailable
        return self._description

    def describe_one(self, name: str) -> dict[str, Any]:
        """Backend ``name``'s entry in ``/schema["vector_backends"]``, spaces included.

        Raises:
            ValueError: it cannot serve this env (the message says why).
        """
        entry_point = self._entry_point(name)
        if entry_point in self._probes:  # ALE's backend and Gymnasium's are the same class for ALE ids
            return self._probes[entry_point]
        modes, failures, spaces = [], [], None
        render: dict[str, Any] = {"render_modes": []}
        for mode in AutoresetMode:
            try:
                host = self.make(name, 1, mode)
            except (ValueError, TypeError) as exc:
                failures.append(f"{mode.value}: {exc}")
                continue
            try:
                spaces = spaces or {
                    "observation_space": space_to_json(host.single_observation_space),
                    "action_space": space_to_json(host.single_action_space),
                }
                if self._renders(name, entry_point):  # what a vector session may ask with &render_mode=
                    metadata = getattr(host.env, "metadata", {})
                    render = {
                        "render_modes": session_render_modes(metadata),
                        "render_fps": metadata.get("render_fps"),
                    }
            finally:
                host.close()
            modes.append(mode.value)
        if spaces is None:
            raise ValueError("; ".join(failures))
        label = f"{entry_point.__module__}:{entry_point.__qualname__}"
        if name == "envpool":
            label = f"envpool.make_gymnasium({self._envpool_task()!r})"
        self._probes[entry_point] = {"entry_point": label, "autoreset_modes": modes, **render, **spaces}
        return self._probes[entry_point]
