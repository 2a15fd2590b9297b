"""LoopThread: coroutines from synchronous code, with timeouts that cannot be confused."""

from __future__ import annotations

import asyncio
import re

import pytest

from openenv_gym._loop_thread import LoopThread


def test_runs_coroutines_and_stops():
    """Results come back; stop() joins the thread and closes the loop; later runs refuse."""
    loop = LoopThread()
    assert loop.run(asyncio.sleep(0, result=7), timeout=5) == 7
    loop.stop()
    loop.stop()
    assert loop.loop.is_closed()
    with pytest.raises(RuntimeError, match="the event loop thread is stopped"):
        loop.run(asyncio.sleep(0), timeout=5)


def test_timeout_cancels_the_coroutine():
    """A coroutine slower than the timeout raises TimeoutError and is cancelled."""
    loop = LoopThread()
    cancelled = []

    async def slow():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    try:
        with pytest.raises(TimeoutError, match=re.escape("no result within 0.1 s")):
            loop.run(slow(), timeout=0.1)
        loop.run(asyncio.sleep(0.05), timeout=5)
        assert cancelled == [True]
    finally:
        loop.stop()


def test_a_timeout_error_from_the_coroutine_is_its_own():
    """A TimeoutError raised by the coroutine reaches the caller unchanged, not as our own timeout."""

    class Mine(TimeoutError):
        pass

    async def fails():
        raise Mine("inner")

    loop = LoopThread()
    try:
        with pytest.raises(Mine, match="inner"):
            loop.run(fails(), timeout=5)
    finally:
        loop.stop()
