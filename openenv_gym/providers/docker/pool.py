"""A warm pool of env-server containers, kept ready between uses within one process.

A :class:`~openenv_gym.providers.docker.DockerProvider` made with ``pool=True``
takes a ready container of the same kind (image, command, limits) from here instead of starting
one, and gives it back on ``stop()`` instead of removing it, if its server still answers.
``make_vec(..., provider="docker", provider_kwargs={"pool": True})`` twice in a row therefore
starts containers once. Pooled containers are removed at interpreter exit (and, if the process
is SIGKILLed, by the reaper: they carry the same owner labels).
"""

from __future__ import annotations

import atexit
import dataclasses
import secrets
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_POOLED", "PooledContainer", "clear", "pooled", "put", "take", "token"]

MAX_POOLED = 256  # containers kept per process; more are removed when given back


@dataclasses.dataclass(frozen=True)
class PooledContainer:
    """A started container whose server answered ``/health`` when it was given back."""

    container_id: str
    url: str
    socket_root: str | None


_lock = threading.Lock()
_pool: dict[tuple[Any, ...], list[PooledContainer]] = {}
_remove: Callable[[PooledContainer], None] | None = None
_token: str | None = None


def token() -> str:
    """The token of this process's pooled servers that were given none: one for the pool's life, so
    a container given back serves the next provider of its kind (the pool is this process's alone)."""
    global _token
    with _lock:
        if _token is None:
            _token = secrets.token_urlsafe(32)
        return _token


def take(key: tuple[Any, ...]) -> PooledContainer | None:
    """A pooled container of kind ``key``, or ``None``."""
    with _lock:
        items = _pool.get(key)
        return items.pop() if items else None


def put(key: tuple[Any, ...], item: PooledContainer, remove: Callable[[PooledContainer], None]) -> bool:
    """Keep ``item`` for the next provider of kind ``key``; ``False`` if the pool is full."""
    global _remove
    with _lock:
        if sum(map(len, _pool.values())) >= MAX_POOLED:
            return False
        _pool.setdefault(key, []).append(item)
        _remove = remove
    return True


def pooled() -> int:
    """How many containers wait in the pool."""
    with _lock:
        return sum(map(len, _pool.values()))


def clear() -> None:
    """Remove every pooled container."""
    with _lock:
        items = [item for items in _pool.values() for item in items]
        _pool.clear()
        remove = _remove
    if remove is not None:
        for item in items:
            remove(item)


atexit.register(clear)
