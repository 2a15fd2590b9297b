"""`AttachedHandler`: a ``/ws?session_id=ID`` connection that plays the environment of OpenEnv's HTTP
MCP session ``ID``, as OpenEnv 0.10's server lets it.

OpenEnv 0.10's ``MCPToolClient`` (production mode) makes an HTTP MCP session
(``openenv/session/create``), connects ``/ws?session_id=`` to it, resets and reads state over the
WebSocket and calls tools over ``POST /mcp`` with that ``session_id``: both must reach one
environment, or the task the reset shows is not the task the tools work on. The connection holds
no session slot of its own (the HTTP session holds it) and does not close the env when it goes
(``openenv/session/close`` does; one asked while the socket is attached waits for it). Every call
runs in the HTTP session's thread, so the two routes take turns; an episode ended on either route
is ended for both, and a reset on the WebSocket starts the next one for both.
Snapshots and shared memory are refused here: they would keep state the other route cannot see.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ..protocol import ErrorCode, SessionState
from ..protocol.shm import refused
from .plain_session import PlainHandler

if TYPE_CHECKING:
    from .environment import Environment
    from .http_mcp import HttpMcp, _McpSession
    from .session import Session
    from .worker import Worker

__all__ = ["AttachedHandler", "attached_handler"]


def attached_handler(mcp: HttpMcp, path: str, query: str, factory: Callable[..., Any]) -> AttachedHandler | None:
    """The handler of a ``/ws?session_id=ID`` connection (``None`` for any other).

    Raises:
        ProtocolError: SESSION_ERROR: no HTTP MCP session ``ID`` is open, or another connection plays it.
    """
    session_id = urllib.parse.parse_qs(query).get("session_id", [""])[0]
    if path != "/ws" or not session_id:
        return None
    try:
        return AttachedHandler(mcp, mcp.attach(session_id), factory)
    except ValueError as exc:
        raise ProtocolError(ErrorCode.SESSION_ERROR.value, str(exc)) from exc


class AttachedHandler(PlainHandler):
    """A plain session's frames on the environment of ``shared``, an HTTP MCP session of ``mcp``."""

    size = 0  # the HTTP session holds the slot

    def __init__(self, mcp: HttpMcp, shared: _McpSession, factory: Callable[..., Any]) -> None:
        super().__init__(factory, None)
        self._sessions = mcp
        self._shared = shared
        self._session: Session | None = None
        self._own_worker: Worker | None = None

    async def open(self, session: Session) -> None:
        # The env runs in the HTTP session's thread, whichever route calls it: one call at a time.
        self._session, self._own_worker, session.worker = session, session.worker, self._shared.worker
        self.env = self._shared.env
        if not self._shared.ended:  # the session's create reset it: its episode goes on here
            self.protocol.reset_succeeded()
        return None

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        if self._shared.ended:  # ended by a tool call over HTTP
            self.protocol.stepped(True, False)
        reply = await super().handle(session, message)
        if self.protocol.state is SessionState.ENDED:
            self._shared.ended = True
        elif self.protocol.state is SessionState.READY:  # a reset here starts the next episode for both
            self._shared.ended = False
        return reply

    def _offer_shm(self, session: Session, env: Environment[Any, Any, Any]) -> str:
        return refused("a WebSocket attached to an HTTP MCP session takes no shared memory").serialize()

    async def close(self, worker: Worker) -> bool:
        """Give the connection its own thread back (the session shuts that one down) and the HTTP
        session its env: it closes when ``openenv/session/close`` asks."""
        self.protocol.close()
        self.env = None
        if self._session is not None and self._own_worker is not None:
            self._session.worker = self._own_worker
        await self._sessions.detach(self._shared)
        return True
