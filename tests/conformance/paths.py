"""Every path that claims Gymnasium's (or Stable-Baselines3's) contract, as a named factory.

A path builds a vector env (or an env) of one of :mod:`tests.conformance.envs`' ids; the
contract tests take a ``vector_path``, ``single_path`` or ``sb3_path`` argument and run on each
(``conftest.py`` parametrizes them), against Gymnasium's own ``SyncVectorEnv`` or ``gym.make`` of
the same id as the reference. A path added here inherits the whole contract.

The make_vec paths attach to servers a module starts once (:class:`Servers`, one per id);
``from_env_fns`` starts its own, as it must (it sends pickles only to servers it starts).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv

import openenv_gym
from openenv_gym._loop_thread import LoopThread
from openenv_gym.providers import ProcessProvider
from openenv_gym.vector import RemoteVectorEnv
from tests.utils import UNIT

from . import envs as conformance_envs

MODULE = conformance_envs.__name__


def served(env_id: str) -> str:
    """What a server runs for ``env_id``: Gymnasium's ``module:Id`` form, so the server registers it."""
    return f"{MODULE}:{env_id}"


class Servers:
    """The servers of one test module, one per env id, started on first use and stopped at the end."""

    def __init__(self) -> None:
        self._providers: dict[str, ProcessProvider] = {}
        self._urls: dict[str, str] = {}

    def url(self, env_id: str) -> str:
        if env_id not in self._urls:
            provider = ProcessProvider(target=served(env_id), startup_timeout=60 * UNIT)
            self._urls[env_id] = provider.start()
            self._providers[env_id] = provider
        return self._urls[env_id]

    def close(self) -> None:
        for provider in self._providers.values():
            provider.stop()
        self._providers.clear()
        self._urls.clear()


@dataclass(frozen=True)
class VectorPath:
    """A way to get a Gymnasium ``VectorEnv`` of remote sub-envs."""

    name: str
    make: Callable[..., VectorEnv[Any, Any, Any]]
    arrays_only: bool = False  # as SinglePath's

    def __str__(self) -> str:
        return self.name

    def __call__(
        self,
        servers: Servers,
        env_id: str = conformance_envs.PROBE_ID,
        num_envs: int = 3,
        autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> VectorEnv[Any, Any, Any]:
        return self.make(servers, env_id, num_envs, autoreset_mode, render_mode)


def _from_env_fns(servers: Servers, env_id: str, num_envs: int, mode: AutoresetMode, render_mode: str | None) -> Any:
    factory = functools.partial(gym.make, served(env_id), render_mode=render_mode)
    # As with AsyncVectorEnv, spaces of varying shape need shared_memory=False (the default refuses them).
    shared_memory = env_id not in conformance_envs.VARYING_SHAPE
    return RemoteVectorEnv.from_env_fns(
        [factory] * num_envs, autoreset_mode=mode, servers=1, shared_memory=shared_memory
    )


def _make_vec(**options: Any) -> Callable[..., VectorEnv[Any, Any, Any]]:
    """``gym.make_vec("openenv/Remote-v0", ...)`` over the module's server of the id, its sub-envs
    split over two sessions (the URL given twice), so results are joined from more than one."""

    def make(servers: Servers, env_id: str, num_envs: int, mode: AutoresetMode, render_mode: str | None) -> Any:
        url = servers.url(env_id)
        return gym.make_vec(
            "openenv/Remote-v0",
            num_envs=num_envs,
            base_urls=[url, url],
            autoreset_mode=mode,
            render_mode=render_mode,
            **options,
        )

    return make


VECTOR_PATHS = [
    VectorPath("from_env_fns", _from_env_fns),
    VectorPath("make_vec per-env", _make_vec(vector_backend="per_env")),
    VectorPath("make_vec plain /ws", _make_vec(batched=False)),
    VectorPath("make_vec server-side ws", _make_vec(vector_backend="gymnasium", transport="ws")),
    VectorPath("make_vec server-side shm", _make_vec(vector_backend="gymnasium", transport="shm"), arrays_only=True),
]
#: The vector paths that carry every space, and those that carry arrays of numbers only.
ANY_SPACE_VECTOR_PATHS = [path for path in VECTOR_PATHS if not path.arrays_only]
ARRAYS_ONLY_VECTOR_PATHS = [path for path in VECTOR_PATHS if path.arrays_only]


@dataclass(frozen=True)
class SB3Path:
    """A way to get Stable-Baselines3's ``VecEnv`` of remote sub-envs: ``SB3VecEnv`` over a vector path."""

    name: str
    vector: VectorPath

    def __str__(self) -> str:
        return self.name

    def __call__(self, servers: Servers, env_id: str = conformance_envs.PROBE_ID, num_envs: int = 3, **kwargs: Any):
        from openenv_gym.wrappers import SB3VecEnv

        return SB3VecEnv(self.vector(servers, env_id, num_envs, AutoresetMode.SAME_STEP, **kwargs))


SB3_PATHS = [SB3Path(f"sb3 over {path.name}", path) for path in VECTOR_PATHS[:2]]


class AsyncAsGymEnv(gym.Env[Any, Any]):
    """``AsyncRemoteEnv`` (``make_async``) driven from a loop thread, so that Gymnasium's checker
    and wrappers, which call a ``gymnasium.Env``, can hold its results to the env contract. It
    adds nothing: spaces, results and errors are the async env's own."""

    def __init__(self, url: str, render_mode: str | None = None) -> None:
        self._loop = LoopThread(name="conformance-async")
        self._closed = False
        options = {} if render_mode is None else {"render_mode": render_mode}
        self.env = self._run(openenv_gym.make_async("openenv/Remote-v0", base_url=url, **options))
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.metadata = self.env.metadata
        self.render_mode = self.env.render_mode
        self.spec = self.env.spec

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        if self._closed:  # the async env's own ClosedEnvError, raised before any I/O
            return asyncio.run(coroutine)
        return self._loop.run(coroutine, timeout=60 * UNIT)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self._run(self.env.reset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        return self._run(self.env.step(action))

    def render(self) -> Any:
        return self._run(self.env.render())

    def close(self) -> None:
        if not self._closed:
            self._run(self.env.aclose())
            self._loop.stop()
            self._closed = True


@dataclass(frozen=True)
class SinglePath:
    """A way to get one remote env: ``gym.make`` over either transport, or the async env.
    ``arrays_only``: its steps carry spaces of arrays of numbers only, and it refuses an env of
    other spaces (Dict, Tuple, Sequence...) as it is made, saying which path carries it."""

    name: str
    make: Callable[[str, str | None], gym.Env[Any, Any]]
    arrays_only: bool = False

    def __str__(self) -> str:
        return self.name

    def __call__(
        self, servers: Servers, env_id: str = conformance_envs.PROBE_ID, render_mode: str | None = None
    ) -> gym.Env[Any, Any]:
        return self.make(servers.url(env_id), render_mode)


def _gym_make(transport: str) -> Callable[[str, str | None], gym.Env[Any, Any]]:
    def make(url: str, render_mode: str | None) -> gym.Env[Any, Any]:
        return gym.make("openenv/Remote-v0", base_url=url, transport=transport, render_mode=render_mode)

    return make


SINGLE_PATHS = [
    SinglePath("single ws", _gym_make("ws")),
    SinglePath("single shm", _gym_make("shm"), arrays_only=True),
    SinglePath("async", AsyncAsGymEnv),
]
#: The single paths that carry every space, and those that carry arrays of numbers only.
ANY_SPACE_SINGLE_PATHS = [path for path in SINGLE_PATHS if not path.arrays_only]
ARRAYS_ONLY_SINGLE_PATHS = [path for path in SINGLE_PATHS if path.arrays_only]

#: Every path's name, for the per-path counts.
PATH_NAMES = [path.name for path in (*VECTOR_PATHS, *SB3_PATHS, *SINGLE_PATHS)]


def reference_vector(
    env_id: str = conformance_envs.PROBE_ID,
    num_envs: int = 3,
    autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    render_mode: str | None = None,
) -> VectorEnv[Any, Any, Any]:
    """Gymnasium's own ``SyncVectorEnv`` of the same envs: what every vector path must equal."""
    return gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": autoreset_mode},
        render_mode=render_mode,
    )
