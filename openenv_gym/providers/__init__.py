"""Providers: where environment servers run (a local process by default, a Docker container, or an existing URL)."""

from __future__ import annotations

import importlib
from typing import Any

from .base import Provider
from .process import ProcessProvider
from .url import URLProvider

__all__ = ["DockerProvider", "ProcessProvider", "Provider", "URLProvider", "make_provider"]

_PROVIDERS: dict[str, str] = {
    "process": ".process:ProcessProvider",
    "docker": ".docker_provider:DockerProvider",
    "url": ".url:URLProvider",
}


def make_provider(name: str, **kwargs: Any) -> Provider:
    """Build the provider registered under ``name`` (``"process"``, ``"docker"`` or ``"url"``).

    Raises:
        ValueError: no provider has that name.
    """
    try:
        module, _, attr = _PROVIDERS[name].partition(":")
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; expected one of {sorted(_PROVIDERS)}") from None
    cls: type[Provider] = getattr(importlib.import_module(module, __name__), attr)
    return cls(**kwargs)


def __getattr__(name: str) -> Any:
    if name == "DockerProvider":  # imports the docker SDK: only when asked for
        from .docker_provider import DockerProvider

        return DockerProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
