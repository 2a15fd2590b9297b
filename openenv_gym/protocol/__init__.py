"""The wire protocol, as pure functions and state machines with no I/O: OpenEnv's ``/ws`` frames and
session rules (:mod:`.frames`, :mod:`.session`), our batch and vector sessions and binary codec
(:mod:`.batch`, :mod:`.vector`, :mod:`.arrays`), pickled sub-env factories (:mod:`.pickled`), and tool
calls and MCP's JSON-RPC (:mod:`.tools`, :mod:`.jsonrpc`). Nothing here imports gymnasium, a socket or
a process.

Only the wire lives here: what travels on a session's connection. What the layers share and is not
wire sits at the package root, and every layer may import it: a server's start-up report and serve
flags (:mod:`openenv_gym.startup`), server URLs (:mod:`openenv_gym.urls`), secrets kept out of logs
(:mod:`openenv_gym.redaction`). Their old paths here (``protocol.startup``, ``protocol.urls``,
``protocol.redaction``, ``protocol.pickled.ACCEPT_FLAG``) still work, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .codes import ErrorCode, MessageType
    from .frames import (
        ClientFrame,
        CloseFrame,
        ErrorFrame,
        McpFrame,
        ObservationFrame,
        RenderFrame,
        RenderRequest,
        ResetFrame,
        ServerFrame,
        StateFrame,
        StateRequest,
        StepFrame,
        parse_client_frame,
        parse_server_frame,
    )
    from .session import ClientSession, ServerSession, SessionState

__all__ = [
    "ClientFrame",
    "ClientSession",
    "CloseFrame",
    "ErrorCode",
    "ErrorFrame",
    "McpFrame",
    "MessageType",
    "ObservationFrame",
    "RenderFrame",
    "RenderRequest",
    "ResetFrame",
    "ServerFrame",
    "ServerSession",
    "SessionState",
    "StateFrame",
    "StateRequest",
    "StepFrame",
    "parse_client_frame",
    "parse_server_frame",
]

# Each name imports its module on first use: importing the package alone loads none of them.
_EXPORTS = {
    "ErrorCode": ".codes",
    "MessageType": ".codes",
    "ClientFrame": ".frames",
    "CloseFrame": ".frames",
    "ErrorFrame": ".frames",
    "McpFrame": ".frames",
    "ObservationFrame": ".frames",
    "RenderFrame": ".frames",
    "RenderRequest": ".frames",
    "ResetFrame": ".frames",
    "ServerFrame": ".frames",
    "StateFrame": ".frames",
    "StateRequest": ".frames",
    "StepFrame": ".frames",
    "parse_client_frame": ".frames",
    "parse_server_frame": ".frames",
    "ClientSession": ".session",
    "ServerSession": ".session",
    "SessionState": ".session",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
