"""openenv-gym: remote, containerized OpenEnv environments as first-class Gymnasium environments.

Importing the package registers the ``openenv/...`` ids with Gymnasium::

    import gymnasium as gym, openenv_gym
    env = gym.make("openenv/CartPole-v1")   # a local env server starts; you get a gymnasium.Env

``gym.make("openenv_gym:openenv/CartPole-v1")`` works without importing it first. The package
stays light to import: gymnasium and numpy load only when something needs them, so a server
process hosting a plain ``Environment`` never pays for them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any

from . import errors
from ._lazy import call_after_import
from .errors import *  # noqa: F403  (the whole error tree: errors.__all__)

if TYPE_CHECKING:
    from . import hub
    from .async_env import AsyncRemoteEnv, make_async
    from .async_pool import AsyncEnvPool
    from .client import AsyncEnvClient, EnvClient
    from .env import ClosedEnvError, RemoteEnv
    from .registry import CatalogEntry, catalog, register
    from .task_catalog import TaskCatalog, tasks
    from .wrappers import make_sb3_vec_env

__all__ = [
    "AsyncEnvClient",
    "AsyncEnvPool",
    "AsyncRemoteEnv",
    "CatalogEntry",
    "ClosedEnvError",
    "EnvClient",
    "RemoteEnv",
    "TaskCatalog",
    "__version__",
    "catalog",
    "hub",
    "make_async",
    "make_sb3_vec_env",
    "register",
    "tasks",
]
__all__ += errors.__all__

try:  # one source of the version: the package's metadata (pyproject.toml)
    __version__ = importlib.metadata.version("openenv-gym")
except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0.0.0+unknown"

# Names that import gymnasium, resolved on first use (PEP 562).
_LAZY = {
    "AsyncEnvPool": "openenv_gym.async_pool",
    "AsyncRemoteEnv": "openenv_gym.async_env",
    "make_async": "openenv_gym.async_env",
    "ClosedEnvError": "openenv_gym.env",
    "RemoteEnv": "openenv_gym.env",
    "CatalogEntry": "openenv_gym.registry",
    "catalog": "openenv_gym.registry",
    "register": "openenv_gym.registry",
    "make_sb3_vec_env": "openenv_gym.wrappers",
    "TaskCatalog": "openenv_gym.task_catalog",
    "tasks": "openenv_gym.task_catalog",
}


# The clients, resolved on first use too: a server process never needs them.
_LAZY_CLIENTS = {"AsyncEnvClient", "EnvClient"}


def __getattr__(name: str) -> Any:
    if name in _LAZY_CLIENTS:
        return getattr(importlib.import_module("openenv_gym.client"), name)
    if name == "hub":  # pydantic and huggingface_hub load on first use
        importlib.import_module("gymnasium")
        return importlib.import_module("openenv_gym.hub")
    if name in _LAZY:
        # gymnasium first: its import registers the catalog, which imports the registry whole; a
        # registry imported first would meet that hook half-initialised.
        importlib.import_module("gymnasium")
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'openenv_gym' has no attribute {name!r}")


def _register_catalog() -> None:
    from .registry import builtin_entries, register, register_hub_id, register_plugins

    for entry in builtin_entries():
        register(entry)
    register_hub_id()
    register_plugins()


call_after_import("gymnasium", _register_catalog)
