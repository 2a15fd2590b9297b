"""`SessionSlots`: how many environments a server holds at once (``max_sessions``), shared by its
WebSocket sessions (a batch session holds several) and the envs of its HTTP requests and HTTP MCP
sessions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from .session import CLOSE_TIMEOUT, Session

__all__ = ["SessionSlots"]


class SessionSlots:
    """The slots of ``max_sessions`` environments, and the sessions holding them.

    A session whose connection ended holds its slots until its environment is closed, so an
    environment that allows one session never has two instances alive; a newcomer that fits once
    the closing ones are gone waits for them (:meth:`wait_for_closing`).
    """

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        #: The open WebSocket sessions.
        self.sessions: set[Session] = set()
        #: Sessions whose connection ended, their environment still closing.
        self.closing: set[Session] = set()
        self._http_envs = 0  # envs of HTTP requests and HTTP MCP sessions, each holding a slot
        self._changed: asyncio.Condition | None = None  # made by start(), on the serving loop

    def start(self) -> None:
        """Make the condition newcomers wait on, on the running loop."""
        self._changed = asyncio.Condition()

    @property
    def active(self) -> int:
        """Environments held by open sessions and by HTTP requests."""
        return sum(session.size for session in self.sessions) + self._http_envs

    def take(self) -> bool:
        """Hold one slot for the env of an HTTP request or of an HTTP MCP session; ``False``: all are
        taken. :meth:`release` gives it back."""
        if self.active >= self.max_sessions:
            return False
        self._http_envs += 1
        return True

    async def release(self) -> None:
        """Give back a slot :meth:`take` held."""
        self._http_envs -= 1
        await self.changed()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[bool]:
        """Hold a slot while the block runs; ``False``: all are taken."""
        if not self.take():
            yield False
            return
        try:
            yield True
        finally:
            await self.release()

    async def changed(self) -> None:
        """Wake the newcomers waiting in :meth:`wait_for_closing`: slots came back, or were taken."""
        assert self._changed is not None
        async with self._changed:
            self._changed.notify_all()

    async def wait_for_closing(self, size: int) -> None:
        """Wait until ``size`` more environments fit, while closing sessions alone stand in the way.

        Their slots come back once their environments are closed (within ``CLOSE_TIMEOUT``):
        a client whose connection was cut reconnects before its old session has let go.
        """

        def settled() -> bool:
            if self.active + size <= self.max_sessions:
                return True
            closing = sum(session.size for session in self.closing)
            return self.active - closing + size > self.max_sessions  # full without them too

        assert self._changed is not None
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(settled), CLOSE_TIMEOUT)
            except TimeoutError:
                pass  # refused as full, then
