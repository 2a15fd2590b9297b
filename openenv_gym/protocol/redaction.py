"""Deprecated (after 0.1.0, December 2026): ``openenv_gym.protocol.redaction``. Keeping secrets out of logs is not the wire: it is :mod:`openenv_gym.redaction`."""

from __future__ import annotations

from .._lazy import moved_names
from ..redaction import __all__ as _MOVED

__all__: list[str] = []

__getattr__ = moved_names(__name__, "openenv_gym.redaction", _MOVED)
