"""`LoopThread`: an asyncio event loop in a daemon thread, for driving async code from synchronous tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """Run coroutines on a private event loop that lives in its own daemon thread.

    Synchronous callers (``gymnasium.Env.step``) submit coroutines and wait for their results
    with a timeout, so a connection's background work (pings, close handshakes) keeps going
    between calls, and callers may themselves be inside another running event loop.
    """

    def __init__(self, name: str = "openenv-gym-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``coroutine`` on the loop and return its result.

        Raises:
            TimeoutError: the coroutine did not finish within ``timeout`` seconds; it is cancelled.
            RuntimeError: the loop thread is stopped.
        """
        if not self._thread.is_alive():
            coroutine.close()
            raise RuntimeError("the event loop thread is stopped")
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        # Wait first, then take the result: a TimeoutError raised *by* the coroutine must reach
        # the caller as itself, not be mistaken for our own wait running out.
        done, _ = concurrent.futures.wait([future], timeout)
        if not done:
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g} s")
        return future.result()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread; idempotent."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout)
        if not self._thread.is_alive() and not self.loop.is_closed():
            self.loop.close()
