"""Providers: where environment servers run (a local process by default, or an existing URL)."""

from __future__ import annotations

from typing import Any

from .base import Provider
from .process import ProcessProvider
from .url import URLProvider

__all__ = ["ProcessProvider", "Provider", "URLProvider", "make_provider"]

_PROVIDERS: dict[str, type[Provider]] = {"process": ProcessProvider, "url": URLProvider}


def make_provider(name: str, **kwargs: Any) -> Provider:
    """Build the provider registered under ``name`` (``"process"`` or ``"url"``).

    Raises:
        ValueError: no provider has that name.
    """
    try:
        cls = _PROVIDERS[name]
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; expected one of {sorted(_PROVIDERS)}") from None
    return cls(**kwargs)
