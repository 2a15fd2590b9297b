"""`IdleReaper`: a server's sessions released when their client goes silent or stops reading."""

from __future__ import annotations

import asyncio
import logging

from .session import Session

__all__ = ["CLOSE_IDLE", "IdleReaper"]

logger = logging.getLogger(__name__)

#: The close code of a session reaped as idle (RFC 6455: going away).
CLOSE_IDLE = 1001


class IdleReaper:
    """Releases the environments of ``sessions`` idle past ``idle_timeout``, and of sessions whose client
    has left a reply unread past ``send_timeout`` (``None``: never), checking every quarter of the
    shorter (at most every 5 s)."""

    def __init__(self, sessions: set[Session], idle_timeout: float | None, send_timeout: float | None) -> None:
        self.sessions = sessions
        self.idle_timeout = idle_timeout
        self.send_timeout = send_timeout
        self._closing: set[asyncio.Task[None]] = set()  # close handshakes under way, kept referenced

    @property
    def needed(self) -> bool:
        """Whether there is any timeout to keep."""
        return self.idle_timeout is not None or self.send_timeout is not None

    async def run(self) -> None:
        """Reap until cancelled."""
        loop = asyncio.get_running_loop()
        timeouts = [t for t in (self.idle_timeout, self.send_timeout) if t is not None]
        interval = min(max(min(timeouts) / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            now = loop.time()
            for session in list(self.sessions):
                if session.expired is None:
                    self._reap(session, now, loop)

    def _reap(self, session: Session, now: float, loop: asyncio.AbstractEventLoop) -> None:
        if session.sending_since is not None:  # a send waits on the client: not busy
            if self.send_timeout is not None and session.sending_since < now - self.send_timeout:
                logger.warning("dropping a session whose replies went unread for %g s", self.send_timeout)
                session.expire(f"replies unread for more than {self.send_timeout:g} s")
                # A client that reads nothing would not read a close frame either.
                session.connection.transport.abort()
        elif self.idle_timeout is not None and not session.busy and session.last_active < now - self.idle_timeout:
            logger.info("closing a session idle for more than %g s", self.idle_timeout)
            reason = f"session idle for more than {self.idle_timeout:g} s"
            # The environment is released at once; the close handshake may take up to
            # websockets' close_timeout if the client does not answer.
            session.expire(reason)
            task = loop.create_task(session.connection.close(CLOSE_IDLE, reason))
            self._closing.add(task)  # keep a reference until it is done
            task.add_done_callback(self._closing.discard)
