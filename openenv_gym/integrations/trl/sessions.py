"""The sessions behind one TRL factory class or rollout function: pools on a loop thread, shared by its instances."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from ..._loop_thread import LoopThread
from ...async_env import AsyncRemoteEnv, make_async, spec_options
from ...async_pool import AsyncEnvPool
from ...client import DEFAULT_CALL_TIMEOUT
from ...errors import OpenEnvGymError

__all__ = [
    "CALL_ERRORS",
    "CALL_MARGIN",
    "START_WAIT",
    "Sessions",
    "Slot",
    "discover_tools",
    "run_once",
    "single_env_kwargs",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds a ``reset`` may wait when it starts a pool (servers started, sessions opened); the
#: providers' own ``startup_timeout`` and ``open_timeout`` fail sooner when something is wrong.
START_WAIT = 600.0
#: Seconds added to the client's call timeout, so that its own ``RequestTimeoutError`` comes first.
CALL_MARGIN = 30.0
#: Arguments of ``AsyncEnvPool`` that ``gym.make`` (and so ``make_async``) does not take.
POOL_ONLY = ("servers", "sessions_per_server", "acquire_timeout", "base_urls")

#: What a call on a session may raise: the env's error frame, or the session lost (``env.failed`` set).
CALL_ERRORS = (OpenEnvGymError, TimeoutError)


class Slot:
    """The session an instance holds; apart from it, so that its finalizer can hand it back."""

    env: AsyncRemoteEnv | None = None


class Sessions:
    """The pools, event-loop thread and live instances behind one factory class or rollout function."""

    def __init__(self, env_id: str, pool_size: int | None, make_kwargs: dict[str, Any]) -> None:
        if pool_size is not None and pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        options, _ = spec_options(env_id, make_kwargs)  # refuses an id that is not a remote env
        self.env_id = env_id
        self.pool_size = pool_size
        self.make_kwargs = make_kwargs
        self.call_wait = float(options.get("call_timeout", DEFAULT_CALL_TIMEOUT)) + CALL_MARGIN
        self.instances: weakref.WeakSet[Any] = weakref.WeakSet()
        self.pools: list[AsyncEnvPool] = []
        self.closed = False
        self._loop: LoopThread | None = None
        self._lock = threading.Lock()
        self._growing: asyncio.Lock | None = None  # made on the loop, which it belongs to

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the shared loop (started on first use)."""
        with self._lock:
            if self.closed:
                coroutine.close()
                raise RuntimeError(f"the sessions of {self.env_id} are closed")
            if self._loop is None:
                self._loop = LoopThread(name=f"openenv-gym-trl {self.env_id}")
            loop = self._loop
        return loop.run(coroutine, timeout)

    @property
    def capacity(self) -> int:
        """Sessions of every pool started so far."""
        return sum(pool.size for pool in self.pools)

    @property
    def in_use(self) -> int:
        """Sessions lent out now (none once closed)."""
        return 0 if self.closed else sum(pool.in_use for pool in self.pools)

    async def ensure(self, wanted: int) -> None:
        """Start a pool for the sessions ``wanted`` beyond the pools' capacity (the first: at least ``pool_size``)."""
        if self._growing is None:
            self._growing = asyncio.Lock()
        async with self._growing:
            await self._grow(wanted)

    async def _grow(self, wanted: int) -> None:
        wanted = max(wanted, self.pool_size or 1) if not self.pools else wanted
        missing = wanted - self.capacity
        if missing > 0:
            pool = AsyncEnvPool(self.env_id, size=missing, **self.make_kwargs)
            self.pools.append(pool)  # before it starts: a close() meanwhile stops what it started
            try:
                await pool.start()
            except BaseException:
                self.pools.remove(pool)  # a failed start stops what it started; the next reset tries again
                raise

    async def acquire(self, wanted: int) -> AsyncRemoteEnv:
        """A session as an episode env, from a pool with one free, after growing to ``wanted`` sessions."""
        if self._growing is None:
            self._growing = asyncio.Lock()
        async with self._growing:  # one at a time: the free session one sees is the one it takes
            await self._grow(wanted)
            for pool in self.pools:
                if pool.idle:
                    return await pool.acquire()
            # Every session is lent: a lost one is being opened again. Do not wait for it.
            await self._grow(self.capacity + 1)
            return await self.pools[-1].acquire()

    def release_soon(self, slot: Slot) -> None:
        """Hand ``slot``'s session back to its pool without waiting (a finalizer's call: any thread)."""
        env, slot.env = slot.env, None
        loop = self._loop
        if env is not None and loop is not None:
            loop.submit(env.aclose())

    def close(self, timeout: float = 120.0) -> None:
        """Close every session and stop every server; idempotent. Runs at interpreter exit too."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            loop, self._loop = self._loop, None
        if loop is None:
            return
        pools = list(self.pools)

        async def close_all() -> None:
            results = await asyncio.gather(*(pool.aclose() for pool in pools), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    logger.warning("closing a pool of %s failed: %r", self.env_id, result)

        try:
            loop.run(close_all(), timeout)
        except Exception:
            logger.exception("closing the sessions of %s failed", self.env_id)
        finally:
            loop.stop()


def run_once(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coroutine`` on a loop thread of its own, stopped afterwards (works inside a running loop too)."""
    loop = LoopThread(name="openenv-gym-trl setup")
    try:
        return loop.run(coroutine, timeout)
    finally:
        loop.stop()


def single_env_kwargs(make_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``make_kwargs`` for one ``make_async`` env: the pool's own arguments left out."""
    kwargs = {key: value for key, value in make_kwargs.items() if key not in POOL_ONLY}
    base_urls = make_kwargs.get("base_urls")
    if base_urls:
        kwargs["base_url"] = base_urls[0]
    return kwargs


async def discover_tools(env_id: str, make_kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    env = await make_async(env_id, **single_env_kwargs(make_kwargs))
    try:
        return env.tools
    finally:
        await env.aclose()
