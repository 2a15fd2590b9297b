"""The wire protocol, as pure functions and state machines with no I/O: OpenEnv's ``/ws`` frames and
session rules (:mod:`.frames`, :mod:`.session`), our batch sessions and binary codec (:mod:`.batch`),
tool calls and MCP's JSON-RPC (:mod:`.tools`, :mod:`.jsonrpc`), server URLs (:mod:`.urls`), and the start-up lines a server writes for whoever started it
(:mod:`.startup`). Nothing here imports gymnasium, a socket or a process."""

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
