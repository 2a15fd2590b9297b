"""Providers: where environment servers run (a local process by default, a Docker container, a Docker
Swarm service, a Ray cluster, or an existing URL)."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_exports
from .base import Provider
from .url import URLProvider

if TYPE_CHECKING:
    from .docker import DockerProvider
    from .docker.swarm import SwarmProvider
    from .process import ProcessProvider
    from .ray_provider import RayProvider

__all__ = [
    "DockerProvider",
    "ProcessProvider",
    "Provider",
    "RayProvider",
    "SwarmProvider",
    "URLProvider",
    "make_provider",
    "make_providers",
    "provider_class",
    "provider_options",
    "start_options",
]

_PROVIDERS: dict[str, str] = {
    "process": ".process:ProcessProvider",
    "docker": ".docker:DockerProvider",
    "swarm": ".docker.swarm:SwarmProvider",
    "url": ".url:URLProvider",
    "ray": ".ray_provider:RayProvider",
}


def provider_class(name: str) -> type[Provider]:
    """The provider class registered under ``name``.

    Raises:
        ValueError: no provider has that name.
    """
    try:
        module, _, attr = _PROVIDERS[name].partition(":")
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; expected one of {sorted(_PROVIDERS)}") from None
    return getattr(importlib.import_module(module, __name__), attr)


def _build(name: str, build: Any, **kwargs: Any) -> Any:
    try:
        return build(**kwargs)
    except TypeError as exc:  # most often an option meant for another provider
        raise TypeError(f"provider={name!r}: {exc}") from exc


def make_provider(name: str, **kwargs: Any) -> Provider:
    """Build the provider registered under ``name`` (``"process"``, ``"docker"``, ``"swarm"``, ``"ray"`` or ``"url"``).

    Raises:
        ValueError: no provider has that name.
        TypeError: an option that provider does not take.
    """
    return _build(name, provider_class(name), **kwargs)


def make_providers(name: str, count: int, **kwargs: Any) -> list[Provider]:
    """Build ``count`` providers of kind ``name`` for the servers of one run (see ``Provider.group``)."""
    cls = provider_class(name)
    return _build(name, functools.partial(cls.group, count), **kwargs)


# Options the env or vector env sets itself on the providers it builds.
_SET_BY_THE_ENV = frozenset(
    {"target", "env_kwargs", "max_episode_steps", "max_sessions", "startup_timeout", "accept_pickled_factories"}
)


def provider_options(name: str) -> frozenset[str]:
    """The options a provider takes from the user (the keyword parameters of its constructor)."""
    parameters = inspect.signature(provider_class(name).__init__).parameters
    return frozenset(
        key
        for key, parameter in parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not key.startswith("_") and key not in _SET_BY_THE_ENV
    )


def start_options(
    provider: Any,
    provider_kwargs: dict[str, Any] | None,
    options: dict[str, Any],
    token: str | None,
    env_kwargs: dict[str, Any] | None,
    *,
    starts: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sort the keyword arguments of ``gym.make``/``gym.make_vec`` beyond the env's own.

    As with a local ``gym.make(id, **kwargs)``, an argument goes to the environment, except the
    options of the provider that starts its servers (``memory=`` for Docker, ``ray_address=``
    for Ray; see each provider), which go to the provider, merged with ``provider_kwargs`` and
    the caller's ``token`` (which the servers started must require). ``env_kwargs={...}`` passes
    an env argument whose name a provider option takes.

    Args:
        provider: the provider's name, or a provider built by the caller.
        starts: whether a server is started (not one given by ``base_url``, nor a built provider).

    Returns:
        The provider's options and the env's keyword arguments.

    Raises:
        TypeError: arguments that cannot reach an env, since no server is started.
        ValueError: an argument given twice (loose and in ``env_kwargs``; the token twice).
    """
    env_kwargs = dict(env_kwargs or {})
    if options and not starts:
        where = "the provider given" if not isinstance(provider, str) else "a running server (base_url=)"
        raise TypeError(
            f"unexpected keyword arguments {sorted(options)}: {where} makes its env itself, so env arguments "
            "cannot be passed here; give them to whatever starts that server"
        )
    taken = provider_options(provider) if options else frozenset()
    merged = dict(provider_kwargs or {})
    for key, value in options.items():
        target = merged if key in taken else env_kwargs
        if key in target:
            raise ValueError(
                f"{key!r} is given twice: as a keyword argument and in {'provider' if target is merged else 'env'}_kwargs"
            )
        target[key] = value
    if token is not None:
        if "token" in merged:
            raise ValueError("pass the token once: token= or the provider's token option")
        merged["token"] = token
    return merged, env_kwargs


# A provider's module loads when it is first used: the process provider's (the default) is not
# needed to attach to a running server, and Docker's and Ray's import the docker SDK or Ray.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ProcessProvider": ".process",
        "DockerProvider": ".docker",
        "SwarmProvider": ".docker.swarm",
        "RayProvider": ".ray_provider",
    },
)
