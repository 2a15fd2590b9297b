"""The thread that starts every sandbox worker of the process, so a worker outlives its caller's thread.

bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) fires when the *thread* that started it
ends, not the process: a worker started from a short-lived thread (a server session's worker
thread, replaced after a tool call overran its limit) would be killed with it, and the run then
in it lost. So :func:`in_spawner` starts workers in one thread that lives as long as the process
(made on first use; a forked child makes its own, having none of its parent's threads).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_spawner"]

_T = TypeVar("_T")
_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def in_spawner(start: Callable[[], _T]) -> _T:
    """``start()`` (which starts a worker), called in the thread that lives as long as the process."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-gym-sandbox-spawner")
        spawner = _spawner
    return spawner.submit(start).result()


def _forget_spawner() -> None:
    """In a forked child, which has none of its parent's threads: start a spawner of its own when needed."""
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()  # the parent's lock may have been held at the fork


os.register_at_fork(after_in_child=_forget_spawner)
