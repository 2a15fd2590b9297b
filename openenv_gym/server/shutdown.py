"""A server's stop: every connection told why it ends, and no client or call waited on for long.

websockets' own close waits up to its ``close_timeout`` (10 s) for each client to answer the
close frame, and a client between two calls (ours reads its socket only every few seconds while
idle) does not: the owner's ``close()`` of an env whose server another env shares would wait that
long, and an ``openenv-gym serve`` stopped with a client attached too. Here the frame says why
(:mod:`openenv_gym.protocol.closing`: the client raises
:class:`~openenv_gym.errors.ServerClosedError` at its next call, having read the frame from its
socket), and a client gets :data:`CLOSE_GRACE` to answer it before its connection is cut.

A session in the middle of a call (a long step) cannot close its environment before the call
returns, and its reply has nowhere to go once its connection is closed: a server process that is
stopping (:func:`stop_unless_busy`) waits for such calls :data:`BUSY_GRACE` only, then exits
without their environments' ``close()`` (what the process held goes with it). An
:class:`~openenv_gym.server.EnvServer` stopped in a process that goes on waits for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection
from typing import Protocol

from websockets.asyncio.server import Server

from ..protocol.closing import SERVER_CLOSED_CODE, SERVER_CLOSED_REASON

__all__ = ["BUSY_GRACE", "CLOSE_GRACE", "close_server", "stop_unless_busy"]

# Seconds a client has to answer the close frame: a reading client answers at once on loopback,
# and the frame is in an idle client's socket anyway when the connection is cut.
CLOSE_GRACE = 0.25
# Seconds the stop waits for calls in progress once nothing else is left to close.
BUSY_GRACE = 0.5
_POLL = 0.05


class _Session(Protocol):
    busy: bool


async def close_server(server: Server, grace: float = CLOSE_GRACE) -> None:
    """Stop accepting connections, close every open one with :data:`SERVER_CLOSED_REASON`, and
    return once each is closed (answered, or cut after ``grace`` seconds) and its handler returned
    (a session's handler closes its environment)."""
    server.server.close()  # no newcomer from here on, so each connection below gets the short grace
    for connection in server.all_connections:
        connection.close_timeout = grace
    server.close(close_connections=True, code=SERVER_CLOSED_CODE, reason=SERVER_CLOSED_REASON)
    await server.wait_closed()


async def stop_unless_busy(stop: Awaitable[None], sessions: Collection[_Session]) -> bool:
    """Await ``stop`` (a server's) until it is done, or until only ``sessions`` in a call have been
    left for :data:`BUSY_GRACE`; true if it is done. A process that is about to exit calls it: the
    stop goes on, and the process exits without waiting for those calls."""
    stopping = asyncio.ensure_future(stop)
    loop = asyncio.get_running_loop()
    only_busy_since: float | None = None
    while True:
        done, _ = await asyncio.wait({stopping}, timeout=_POLL)
        if done:
            stopping.result()
            return True
        if not sessions or not all(session.busy for session in sessions):
            only_busy_since = None
        elif only_busy_since is None:
            only_busy_since = loop.time()
        elif loop.time() - only_busy_since >= BUSY_GRACE:
            return False
