"""Deprecated (after 0.1.0, December 2026): ``openenv_gym.protocol.urls``. Server URLs are not the wire: they are :mod:`openenv_gym.urls`."""

from __future__ import annotations

from .._lazy import moved_names
from ..urls import __all__ as _MOVED

__all__: list[str] = []

__getattr__ = moved_names(__name__, "openenv_gym.urls", _MOVED)
