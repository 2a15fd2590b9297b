"""Providers: where environment servers run (a local process by default, a Docker container, a Ray
cluster, or an existing URL)."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from .base import Provider
from .process import ProcessProvider
from .url import URLProvider

__all__ = ["DockerProvider", "ProcessProvider", "Provider", "RayProvider", "URLProvider", "make_provider", "make_providers", "start_options"]

_PROVIDERS: dict[str, str] = {
    "process": ".process:ProcessProvider",
    "docker": ".docker_provider:DockerProvider",
    "url": ".url:URLProvider",
    "ray": ".ray_provider:RayProvider",
}


def _provider_class(name: str) -> type[Provider]:
    try:
        module, _, attr = _PROVIDERS[name].partition(":")
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; expected one of {sorted(_PROVIDERS)}") from None
    return getattr(importlib.import_module(module, __name__), attr)  # type: ignore[no-any-return]


def _build(name: str, build: Any, **kwargs: Any) -> Any:
    try:
        return build(**kwargs)
    except TypeError as exc:  # most often an option meant for another provider
        raise TypeError(f"provider={name!r}: {exc}") from exc


def make_provider(name: str, **kwargs: Any) -> Provider:
    """Build the provider registered under ``name`` (``"process"``, ``"docker"``, ``"ray"`` or ``"url"``).

    Raises:
        ValueError: no provider has that name.
        TypeError: an option that provider does not take.
    """
    return _build(name, _provider_class(name), **kwargs)  # type: ignore[no-any-return]


def make_providers(name: str, count: int, **kwargs: Any) -> list[Provider]:
    """Build ``count`` providers of kind ``name`` for the servers of one run (see ``Provider.group``)."""
    cls = _provider_class(name)
    return _build(name, functools.partial(cls.group, count), **kwargs)  # type: ignore[no-any-return]


def start_options(
    provider_kwargs: dict[str, Any] | None, options: dict[str, Any], token: str | None, *, starts: bool
) -> dict[str, Any]:
    """The options of the provider an env starts: ``provider_kwargs`` and further keyword arguments
    (``options``) merged, with the caller's ``token`` (which the servers started must require).

    Raises:
        TypeError: ``options`` were given, but the env starts no server (``starts`` is false).
        ValueError: the token is given twice, as ``token`` and among the options.
    """
    if options and not starts:
        raise TypeError(f"unexpected keyword arguments {sorted(options)} (options of a provider to start)")
    merged = {**(provider_kwargs or {}), **options}
    if token is not None:
        if "token" in merged:
            raise ValueError("pass the token once: token= or the provider's token option")
        merged["token"] = token
    return merged


def __getattr__(name: str) -> Any:
    # These import the docker SDK or Ray: only when asked for.
    if name == "DockerProvider":
        from .docker_provider import DockerProvider

        return DockerProvider
    if name == "RayProvider":
        from .ray_provider import RayProvider

        return RayProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
