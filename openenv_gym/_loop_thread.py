"""An asyncio event loop in a daemon thread, for synchronous callers of the asynchronous envs.

Synchronous frameworks (TRL's trainer calls each tool as a plain function) drive
:class:`~openenv_gym.async_pool.AsyncEnvPool` sessions through it: the sessions live on one
loop that keeps running between calls (pings, close handshakes), whatever thread calls, and
even when the caller itself runs inside another event loop (a notebook's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """A private event loop running in a daemon thread; :meth:`run` waits for a coroutine on it."""

    def __init__(self, name: str = "openenv-gym-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def alive(self) -> bool:
        """Whether the loop's thread still runs."""
        return self._thread.is_alive()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the loop and return its result (or raise its exception).

        Raises:
            TimeoutError: no result within ``timeout`` seconds; the coroutine is cancelled.
            RuntimeError: the loop is stopped, or called from the loop's own thread (it would wait
                for itself).
        """
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("LoopThread.run called from its own loop: it would wait for itself")
        if not self.alive:
            coroutine.close()
            raise RuntimeError("the event loop thread is stopped")
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        # Wait, then take the result: a TimeoutError raised by the coroutine itself must reach
        # the caller as it is, not be taken for this wait running out.
        done, _ = concurrent.futures.wait([future], timeout)
        if not done:
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g} s")
        return future.result()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> bool:
        """Start ``coroutine`` on the loop without waiting for it; ``False`` (and it is dropped) if the loop is stopped.

        Safe from any thread, a garbage collector's finalizer included.
        """
        if not self.alive or self.loop.is_closed():
            coroutine.close()
            return False
        try:
            asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except RuntimeError:  # the loop closed in between
            coroutine.close()
            return False
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread; idempotent."""
        if self.alive:
            self.loop.call_soon_threadsafe(self.loop.stop)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout)
        if not self.alive and not self.loop.is_closed():
            self.loop.close()
