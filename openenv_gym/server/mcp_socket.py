"""MCP's JSON-RPC over a WebSocket at ``/mcp``, as OpenEnv 0.10 serves it beside ``POST /mcp``.

Each connection is one MCP session of the server's :class:`~openenv_gym.server.http_mcp.HttpMcp`,
made (and reset, so a task env has its task) when the socket opens and closed when it closes: its
environment holds one of the server's session slots for the socket's life. Every text frame is a
JSON-RPC request and gets one JSON-RPC response frame, errors included, as ``POST /mcp`` answers
them. The socket's own session needs no ``session_id``: ``tools/list`` and ``tools/call`` run in it;
``openenv/session/create`` answers its id (and, our extension, the observation of its reset: the
task's prompt); ``openenv/session/close`` of its id is refused, as OpenEnv's is, while another id
closes that HTTP session. A server at capacity, or an env that cannot be made or reset, sends one
JSON-RPC error and closes the socket. A socket silent for the server's idle timeout is closed
(1001), as a ``/ws`` session is.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request

from ..protocol import jsonrpc
from ..protocol.jsonrpc import JsonRpcCode
from .http_mcp import CLOSE_SESSION, CREATE_SESSION, _invalid

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from .http_mcp import HttpMcp

__all__ = ["MCP_SOCKET_PATH", "is_mcp_socket", "serve_mcp_socket"]

logger = logging.getLogger(__name__)

MCP_SOCKET_PATH = "/mcp"


def is_mcp_socket(path: str, request: Request) -> bool:
    """Whether ``request`` asks for the MCP WebSocket (a ``GET /mcp`` that upgrades); any other
    request of ``/mcp`` is ``POST /mcp``'s."""
    upgrade = request.headers.get("Upgrade", "")
    return path == MCP_SOCKET_PATH and request.method == "GET" and upgrade.lower() == "websocket"


async def serve_mcp_socket(connection: ServerConnection, mcp: HttpMcp, idle_timeout: float | None) -> None:
    """Serve one ``/mcp`` WebSocket: its session's JSON-RPC, until the client closes it, the server
    stops, or it stays silent for ``idle_timeout`` seconds."""
    created = await mcp.answer(_request(CREATE_SESSION))
    if "error" in created:  # nothing to serve: say why, as OpenEnv's server does, and close
        at_capacity = "max_sessions" in (created["error"].get("data") or {})
        await connection.send(json.dumps(created))
        await connection.close(
            CloseCode.TRY_AGAIN_LATER if at_capacity else CloseCode.INTERNAL_ERROR,
            "server at capacity" if at_capacity else "the environment could not be made",
        )
        return
    session = created["result"]
    try:
        while True:
            try:
                message = await asyncio.wait_for(connection.recv(), idle_timeout)
            except TimeoutError:
                assert idle_timeout is not None
                logger.info("closing an MCP WebSocket idle for more than %g s", idle_timeout)
                await connection.close(CloseCode.GOING_AWAY, f"session idle for more than {idle_timeout:g} s")
                return
            body = message.encode() if isinstance(message, str) else message
            await connection.send(json.dumps(await _answer(mcp, session, body)))
    except ConnectionClosed:
        pass  # the client went, or the server is stopping: the session goes with the socket
    finally:
        await mcp.answer(_request(CLOSE_SESSION, {"session_id": session["session_id"]}))


async def _answer(mcp: HttpMcp, session: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The response to one frame, in the socket's ``session`` (its create result)."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or _invalid(data) is not None:
        return await mcp.answer(body)  # the parse or request error POST /mcp gives
    request_id, method, params = data.get("id"), data["method"], dict(data.get("params") or {})
    if method == CREATE_SESSION:  # the socket is its session already
        return jsonrpc.result_response(request_id, session)
    if method == CLOSE_SESSION:
        if params.get("session_id") == session["session_id"]:
            return jsonrpc.error_response(
                request_id,
                JsonRpcCode.INVALID_REQUEST,
                "Cannot close active WebSocket-managed session via MCP method: close the WebSocket",
            )
        return await mcp.answer(body)
    return await mcp.answer(json.dumps({**data, "params": {**params, "session_id": session["session_id"]}}).encode())


def _request(method: str, params: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}, "id": None}).encode()
