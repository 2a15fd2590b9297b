"""`Worker`: the thread a session's environment runs in, its bounded tool calls, and closing it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["CLOSE_TIMEOUT", "Worker"]

logger = logging.getLogger(__name__)

# An environment's close() gets this long before the session gives up waiting on it.
CLOSE_TIMEOUT = 10.0


def _new_executor() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-gym-session")


class Worker:
    """One session's thread: its environment's calls run there in order (or on the loop when they
    do not block), so an environment is only ever called from one thread."""

    def __init__(self) -> None:
        self._executor = _new_executor()
        # Tool calls that overran their limit: their threads may still be running.
        self._abandoned: list[asyncio.Future[Any]] = []

    async def call(self, blocking: bool, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the thread, or on the loop when ``blocking`` is false."""
        if not blocking:
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    async def run_bounded(self, call: Callable[[], Any], timeout: float) -> Any:
        """Run a sync tool call in the thread, giving up on it after ``timeout`` seconds.

        Tools always run off the event loop, so that their limit holds even in a non-blocking
        environment. A call that overruns keeps its thread (Python cannot stop one), so the
        session moves on to a fresh thread and remembers the old one for :meth:`shutdown`.

        Raises:
            TimeoutError: the call overran.
        """
        future = asyncio.get_running_loop().run_in_executor(self._executor, call)
        done, _ = await asyncio.wait({future}, timeout=timeout)
        if done:
            return future.result()
        logger.warning("a tool call overran its %g s limit; its thread is left to finish on its own", timeout)
        self._abandoned.append(future)
        self._executor.shutdown(wait=False)
        self._executor = _new_executor()
        raise TimeoutError

    async def close_env(self, env: Any, run: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None) -> bool:
        """Run ``env.close()`` where its other calls ran (this thread, or ``run``'s, which runs a call
        where the env moved to); false if it overran :data:`CLOSE_TIMEOUT`."""
        try:
            if run is not None:
                await asyncio.wait_for(run(env.close), CLOSE_TIMEOUT)
            elif getattr(env, "blocking", True):
                loop = asyncio.get_running_loop()
                await asyncio.wait_for(loop.run_in_executor(self._executor, env.close), CLOSE_TIMEOUT)
            else:
                env.close()
        except TimeoutError:
            logger.error("the environment's close() did not return within %g s", CLOSE_TIMEOUT)
            return False
        except Exception:
            logger.exception("closing the environment failed")
        return True

    def shutdown(self) -> bool:
        """Release the thread; false if a tool call that overran its limit is still running."""
        self._executor.shutdown(wait=False)
        return all(future.done() for future in self._abandoned)
