"""Spare sandboxes: a per-process pool of started, idle sandbox workers, for sandboxes that start to take.

Starting a sandbox is bubblewrap, its tmpfs mounts, its cgroup and a fresh Python worker: about
60 ms on a 2-core machine, which a Git-v0 ``fork(8)`` pays 8 times at once. A
:class:`~openenv_gym.sandbox.Sandbox` made with ``spares=N`` asks the pool of its kind (its
:class:`SpareKey`: everything that makes two sandboxes' workers interchangeable) to keep ``N``
workers started and idle; its :meth:`~openenv_gym.sandbox.Sandbox.start` then takes one (each is
handed out once) instead of starting its own, and the pool's thread starts another in the
background. A spare has never run anything; a workspace sandbox's has imported what loading a
workspace needs (the worker's ``{"warm": true}``), off the caller's path.

One pool per key and process, each with one daemon thread that refills it to its target (the
largest asked for), one spare at a time, never in a caller's way: once nothing has been taken
for :data:`QUIET` seconds (takes come in bursts, whose work needs the cores), or once the pool
has been short for :data:`QUIET_AT_MOST` (takes that never pause). Nothing of this exists until
a sandbox asks for spares.

Cleanup: a spare is a started sandbox like any, with its own finalizer; at a normal exit
:func:`close_all` (registered with :mod:`atexit`) stops the threads first, so none starts a spare
after, then kills every idle spare and removes its cgroup and mounts. On SIGKILL the spares die
with the process as every worker does (bubblewrap's ``--die-with-parent``). A spare whose worker
died while idle is discarded (closed) when the pool next looks, never handed out. A forked child
forgets its parent's pools: their spares are the parent's.
"""

from __future__ import annotations

import atexit
import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .limits import Limits

if TYPE_CHECKING:
    from .sandbox import Mechanism, Sandbox

__all__ = ["SpareKey", "SparePool", "close_all", "spare_pool"]

THREAD_NAME = "openenv-gym-sandbox-spares"
_FIRST_RETRY = 1.0  # seconds before the thread tries again after a spare failed to start; doubled each time
_LAST_RETRY = 30.0
_JOIN_TIMEOUT = 30.0  # seconds close() waits for a spare being started (bounded by its startup_timeout)
#: Seconds without a take before the thread refills: spares are taken in bursts (a fork takes 8 at
#: once), and starting their successors meanwhile would take the cores the takers' work needs.
QUIET = 0.25
#: Seconds the pool stays short at most, however often spares are taken (a steady stream of
#: resets): then the thread refills without waiting for a quiet moment.
QUIET_AT_MOST = 1.0


@dataclasses.dataclass(frozen=True)
class SpareKey:
    """What makes two sandboxes' workers interchangeable: a spare of one key serves any sandbox of that key.

    Not the start-up timeout: a worker that has started is the same whatever time it was given.
    """

    mechanism: Mechanism
    python: str
    limits: Limits
    hidden_paths: tuple[str, ...]
    workspace: bool
    ipc_objects: bool


class SparePool:
    """Up to :attr:`target` started spares of one :class:`SpareKey`, refilled by a thread of its own.

    Thread-safe: :meth:`take` hands each spare out once, however many threads take at once.

    Args:
        key: the sandboxes this pool serves.
        start_spare: starts one spare (in the pool's thread); raises if it cannot.
    """

    def __init__(self, key: SpareKey, start_spare: Callable[[], Sandbox]) -> None:
        self.key = key
        self._start_spare = start_spare
        self._idle: list[Sandbox] = []
        self._target = 0
        self._closed = False
        self._last_take = -math.inf
        self._short_since: float | None = None  # when a take left the pool short, until it is full again
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def target(self) -> int:
        """How many spares the pool keeps started."""
        return self._target

    def want(self, count: int) -> None:
        """Keep at least ``count`` spares (the largest count asked for wins); start the refilling thread if needed."""
        with self._changed:
            if self._closed or count <= self._target:
                return
            self._target = count
            if self._thread is None:
                self._thread = threading.Thread(target=self._refill, name=THREAD_NAME, daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def take(self) -> Sandbox | None:
        """A running spare, now this caller's alone (the pool starts another); ``None`` if none is ready."""
        with self._changed:
            dead = self._prune()
            spare = self._idle.pop() if self._idle else None
            self._last_take = time.monotonic()
            if self._short_since is None:
                self._short_since = self._last_take
            self._changed.notify_all()  # below target now (or already): the thread refills, once the burst is over
        for corpse in dead:
            corpse.close()
        return spare

    def idle(self) -> list[Sandbox]:
        """The spares ready now (a copy; some may have died since they were started)."""
        with self._changed:
            return list(self._idle)

    def close(self) -> None:
        """Stop refilling and kill every idle spare. Idempotent; spares already taken are their takers'."""
        with self._changed:
            self._closed = True
            idle, self._idle = self._idle, []
            thread = self._thread
            self._changed.notify_all()
        # The thread is waited for first: a spare it is starting is then closed by it, not left behind.
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN_TIMEOUT)
        for spare in idle:
            spare.close()

    def _disown(self) -> None:
        """In a forked child: forget the parent's spares (not killed: they are the parent's) and refill nothing."""
        self._changed = threading.Condition()  # the parent's may have been held at the fork
        self._idle, self._closed, self._thread = [], True, None

    def _prune(self) -> list[Sandbox]:
        """Remove the idle spares whose worker died (holding the lock); return them, to close outside it."""
        dead = [spare for spare in self._idle if not spare.running]
        if dead:
            self._idle = [spare for spare in self._idle if spare.running]
        return dead

    def _refill(self) -> None:
        """The pool's thread: start spares, one at a time, while there are fewer than the target."""
        retry = _FIRST_RETRY
        while True:
            with self._changed:
                while True:
                    dead = self._prune()
                    if dead or self._closed:
                        break
                    if len(self._idle) < self._target:
                        now = time.monotonic()
                        short_since = now if self._short_since is None else self._short_since
                        wait = min(QUIET - (now - self._last_take), QUIET_AT_MOST - (now - short_since))
                        if wait <= 0:
                            break
                        self._changed.wait(wait)
                    else:
                        self._short_since = None
                        self._changed.wait()
                closed = self._closed
            for corpse in dead:
                corpse.close()
            if closed:
                return
            try:
                spare = self._start_spare()
            except Exception:  # no sandbox can start now (the caller's own start raises why): wait, then retry
                with self._changed:
                    self._changed.wait_for(lambda: self._closed, retry)
                retry = min(2 * retry, _LAST_RETRY)
                continue
            retry = _FIRST_RETRY
            with self._changed:
                closed = self._closed
                if not closed:
                    self._idle.append(spare)
            if closed:
                spare.close()
                return


_pools: dict[SpareKey, SparePool] = {}
_pools_lock = threading.Lock()
_exit_registered = False


def spare_pool(key: SpareKey, start_spare: Callable[[], Sandbox]) -> SparePool:
    """This process's pool for ``key``, made (with ``start_spare``, else unused) if there is none."""
    global _exit_registered
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = SparePool(key, start_spare)
            if not _exit_registered:
                atexit.register(close_all)
                _exit_registered = True
    return pool


def close_all() -> None:
    """Close every pool of this process (at exit; tests): its thread stopped, its idle spares killed.

    A sandbox that asks for spares afterwards gets a new pool.
    """
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def _forget_pools() -> None:
    """In a forked child: its parent's spares are the parent's (their pipes too), and it has none of its threads."""
    global _pools, _pools_lock
    for pool in _pools.values():  # a sandbox of the child may still hold one
        pool._disown()
    _pools, _pools_lock = {}, threading.Lock()  # the parent's lock may have been held at the fork


os.register_at_fork(after_in_child=_forget_pools)
