"""`ShmSteps`: how a session's steps move to shared memory: its offer, then its channel.

A vector session and a plain session of a Gymnasium env each keep one. ``shm_open`` on the
WebSocket gets an offer (or the reason there is none); once the client takes it, a
:class:`~openenv_gym.server.shm_channel.ShmChannel` answers the steps from the segment and
every other call of the env runs in its thread (the session's runner), so the env is still
only ever called from one thread. Should that thread fail, its session alone ends: its
WebSocket is closed (1011), and the env is closed as for any session's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

from ..protocol.shm import ShmLayout, refused
from .session import _execution_error

if TYPE_CHECKING:  # the channel (numpy) loads with the first offer: a server of Echo runs without it
    from .session import Session
    from .shm_channel import ShmChannel, ShmOfferPending, StepFn
    from .worker import Worker

__all__ = ["ShmSteps"]

logger = logging.getLogger(__name__)

#: The close code of a session whose channel failed (the server's internal error).
CLOSE_CHANNEL_FAILED = 1011


class ShmSteps:
    """One session's shared-memory offer, then its channel (``call``: the step's name in errors)."""

    def __init__(self, call: str) -> None:
        self.call = call
        #: The channel, once a client took the offer.
        self.channel: ShmChannel | None = None
        self._offer: ShmOfferPending | None = None
        self._ending: asyncio.Task[None] | None = None  # the close of a session whose channel failed

    def withdraw(self) -> None:
        """Withdraw an offer still waiting (one not taken before the session's next request is void)."""
        if self._offer is not None:
            self._offer.withdraw()
            self._offer = None

    def offer(self, session: Session, layout: ShmLayout | str, step: StepFn) -> str:
        """Answer ``shm_open``: an offer of a segment of ``layout`` whose steps ``step`` answers,
        or the refusal saying why there is none (``layout`` may be that reason)."""
        if self.channel is not None:
            return refused("this session's steps already go through shared memory").serialize()
        if not hasattr(os, "memfd_create"):
            return refused("this server's system has no memfd_create").serialize()
        if isinstance(layout, str):
            return refused(layout).serialize()
        from .shm_channel import ShmOfferPending

        pending = ShmOfferPending(layout)
        self._offer = pending
        pending.task = asyncio.get_running_loop().create_task(self._attach(session, pending, step))
        return pending.frame().serialize()

    async def _attach(self, session: Session, pending: ShmOfferPending, step: StepFn) -> None:
        """Wait for the client to take ``pending``; then its segment serves the steps."""
        from .shm_channel import SHM_ACCEPT_TIMEOUT, ShmChannel

        connection = await pending.taken(SHM_ACCEPT_TIMEOUT)
        if connection is None or self._offer is not pending or not session.live:
            if connection is not None:
                connection.close()
            return
        self._offer = None
        loop = asyncio.get_running_loop()

        def failed(exc: BaseException) -> None:  # in the channel's thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server has stopped
                loop.call_soon_threadsafe(self._channel_failed, session, exc)

        channel = ShmChannel(
            pending.layout, step, lambda exc: _execution_error(self.call, exc, session.send_tracebacks), failed
        )
        self.channel = channel
        session.runner = channel.run  # the env's calls run in the channel's thread from now on
        try:
            channel.start(connection)
        except OSError:
            logger.info("the client left before taking the shared-memory segment", exc_info=True)
            connection.close()

    def _channel_failed(self, session: Session, exc: BaseException) -> None:
        """End ``session``, whose channel's thread died of ``exc`` (logged there): its connection
        is closed, so the session ends as any other does (its env closed, its slot given back)."""
        reason = f"the session's shared-memory channel failed: {type(exc).__name__}"
        self._ending = asyncio.get_running_loop().create_task(
            session.connection.close(CLOSE_CHANNEL_FAILED, reason[:120])
        )

    async def close(self, worker: Worker, env: Any) -> bool:
        """As the session closes: withdraw the offer, answer no more steps (the client's next one
        fails as a lost connection, not on a closed env), close ``env`` (if any) where its calls
        ran, with its timeout, then stop the channel. False if the env's close overran it."""
        self.withdraw()
        channel, self.channel = self.channel, None
        if channel is not None:
            channel.hang_up()
        try:
            return await worker.close_env(env, channel.run if channel else None) if env is not None else True
        finally:
            if channel is not None:
                await asyncio.to_thread(channel.stop)
