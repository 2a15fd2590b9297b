"""openenv-gym: remote, containerized OpenEnv environments as first-class Gymnasium environments.

Importing the package registers the ``openenv/...`` ids with Gymnasium::

    import gymnasium as gym, openenv_gym
    env = gym.make("openenv/CartPole-v1")   # a local env server starts; you get a gymnasium.Env

``gym.make("openenv_gym:openenv/CartPole-v1")`` works without importing it first.
"""

from __future__ import annotations

from .client import AsyncEnvClient
from .env import RemoteEnv
from .errors import (
    CapacityReachedError,
    ClientError,
    ConnectionLostError,
    OpenEnvGymError,
    ProtocolError,
    ProviderError,
    RemoteError,
    RequestTimeoutError,
    ServerConnectError,
    ServerStartError,
    SpaceCodecError,
    UnsupportedSpaceError,
)
from .sync_client import EnvClient
from .registry import CatalogEntry, builtin_entries, catalog, register, register_plugins

__all__ = [
    "AsyncEnvClient",
    "CapacityReachedError",
    "CatalogEntry",
    "ClientError",
    "ConnectionLostError",
    "EnvClient",
    "OpenEnvGymError",
    "ProtocolError",
    "ProviderError",
    "RemoteEnv",
    "RemoteError",
    "RequestTimeoutError",
    "ServerConnectError",
    "ServerStartError",
    "SpaceCodecError",
    "UnsupportedSpaceError",
    "__version__",
    "catalog",
    "register",
]

__version__ = "0.1.0"

for _entry in builtin_entries():
    register(_entry)
register_plugins()
del _entry
