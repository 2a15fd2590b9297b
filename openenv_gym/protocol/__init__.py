"""The wire protocol, as pure functions and state machines with no I/O: OpenEnv's ``/ws`` frames and
session rules (:mod:`.frames`, :mod:`.session`), our batch sessions and binary codec (:mod:`.batch`),
tool calls and MCP's JSON-RPC (:mod:`.tools`, :mod:`.jsonrpc`), server URLs (:mod:`.urls`), and the start-up lines a server writes for whoever started it
(:mod:`.startup`). Nothing here imports gymnasium, a socket or a process."""

from __future__ import annotations

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
