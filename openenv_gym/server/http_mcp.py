"""`HttpMcp`: MCP's JSON-RPC over HTTP (``POST /mcp``), as openenv-core's server answers it.

``tools/list`` and ``tools/call`` without a session run on a fresh environment (reset first, so a
task env has a task) that is closed after the answer. OpenEnv's session methods keep one
environment across calls, as its production-mode client does: ``openenv/session/create`` makes and
resets one (our extension: its result also carries the reset's observation, the task's prompt), a
``session_id`` in the params of a tool method names it, and ``openenv/session/close`` closes it; a
session idle for the server's idle timeout is closed too. Each session, and each stateless call's
environment, holds one of the server's session slots.

Every answer is HTTP 200 with a JSON-RPC response, errors included, as OpenEnv's are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from ..protocol import jsonrpc
from ..protocol.frames import observation_fields
from ..protocol.jsonrpc import JsonRpcCode
from ..protocol.tools import CallToolRequest, ListToolsRequest
from .session import _accepted_kwargs
from .tools import run_tool
from .worker import Worker

if TYPE_CHECKING:
    from .env_server import EnvServer
    from .environment import Environment

__all__ = ["CLOSE_SESSION", "CREATE_SESSION", "HttpMcp"]

logger = logging.getLogger(__name__)

CREATE_SESSION = "openenv/session/create"
CLOSE_SESSION = "openenv/session/close"
_REQUEST_KEYS = {"jsonrpc", "method", "params", "id"}


@dataclasses.dataclass
class _McpSession:
    """One ``openenv/session/create``'s environment, the thread it runs in, and its episode's end."""

    env: Environment[Any, Any, Any]
    worker: Worker
    last_active: float
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    ended: bool = False
    #: A ``/ws?session_id=`` connection plays this session's episodes (attached_session.py), and
    #: whether a close asked meanwhile waits for it to go.
    attached: bool = False
    closing: bool = False


class HttpMcp:
    """The ``POST /mcp`` route of ``server``; :meth:`answer` gives the JSON-RPC response for a body."""

    def __init__(self, server: EnvServer) -> None:
        self._server = server
        self._sessions: dict[str, _McpSession] = {}
        self._reaper: asyncio.Task[None] | None = None

    @property
    def open_sessions(self) -> int:
        """Sessions made by ``openenv/session/create`` and not closed yet."""
        return len(self._sessions)

    async def answer(self, body: bytes) -> dict[str, Any]:
        """The JSON-RPC response to the request ``body`` holds."""
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):  # a batch, too: OpenEnv serves none
            return jsonrpc.error_response(None, JsonRpcCode.PARSE_ERROR, "Parse error")
        problem = _invalid(data)
        if problem is not None:  # its id is not read either, as OpenEnv's server answers
            return jsonrpc.error_response(None, JsonRpcCode.INVALID_REQUEST, f"Invalid request: {problem}")
        request_id = data.get("id")
        method, params = data["method"], dict(data.get("params") or {})
        if method == CREATE_SESSION:
            return await self._create(request_id, params)
        if method == CLOSE_SESSION:
            return await self._close_named(request_id, params)
        session_id = params.pop("session_id", None)
        if session_id is None:
            return await self._stateless(request_id, {**data, "params": params})
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            return jsonrpc.error_response(request_id, JsonRpcCode.INVALID_PARAMS, f"Unknown session_id: {session_id}")
        return await self._in_session(session, {**data, "params": params})

    # Without a session ---------------------------------------------------------------------------

    async def _stateless(self, request_id: Any, data: dict[str, Any]) -> dict[str, Any]:
        _, request = jsonrpc.parse_request(data)
        if isinstance(request, jsonrpc.JsonRpcError):
            return request.response(request_id)
        server = self._server
        async with server.stateless_slot() as held:
            if not held:
                return self._at_capacity(request_id)
            worker = Worker()
            try:
                env = await worker.call(True, server.factory)
            except Exception as exc:
                worker.shutdown()
                logger.exception("making an environment for POST /mcp failed")
                return jsonrpc.error_response(request_id, JsonRpcCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            try:
                if not env.tools:
                    return _no_tools(request_id)
                if isinstance(request, ListToolsRequest):
                    return _tools(request_id, env)
                await worker.call(True, env.reset)  # a task env picks its task at reset
                return (await _call_and_end(request_id, env, request, worker))[0]
            except Exception as exc:
                return jsonrpc.error_response(request_id, JsonRpcCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            finally:
                await worker.close_env(env)
                worker.shutdown()

    # Sessions ------------------------------------------------------------------------------------

    async def _create(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        server = self._server
        if not server.take_slot():
            return self._at_capacity(request_id)
        worker = Worker()
        try:
            env = await worker.call(True, server.factory)
        except Exception as exc:
            await server.release_slot()
            worker.shutdown()
            logger.exception("making an environment for openenv/session/create failed")
            factory = getattr(server.factory, "__name__", repr(server.factory))
            return jsonrpc.error_response(
                request_id, JsonRpcCode.SERVER_ERROR, f"{type(exc).__name__}: {exc}", {"factory_name": factory}
            )
        try:
            # Our extension: the session starts with a reset (the params are its keyword arguments:
            # seed, options), and the result carries the observation, so the client sees its task.
            observation = await worker.call(True, env.reset, **_accepted_kwargs(env.reset, params))
            frame = env.reset_frame(observation)
        except Exception as exc:
            await worker.close_env(env)
            worker.shutdown()
            await server.release_slot()
            return jsonrpc.error_response(
                request_id, JsonRpcCode.INTERNAL_ERROR, f"reset failed: {type(exc).__name__}: {exc}"
            )
        session_id = str(uuid.uuid4())
        self._sessions[session_id] = _McpSession(env, worker, asyncio.get_running_loop().time())
        self._start_reaping()
        return jsonrpc.result_response(
            request_id, {"session_id": session_id, "observation": observation_fields(frame.observation)}
        )

    async def _close_named(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("session_id")
        if session_id is None:
            return jsonrpc.error_response(
                request_id, JsonRpcCode.INVALID_PARAMS, "Invalid params - 'session_id' is required"
            )
        if not isinstance(session_id, str) or session_id not in self._sessions:
            return jsonrpc.error_response(request_id, JsonRpcCode.INVALID_PARAMS, f"Unknown session_id: {session_id}")
        if self._sessions[session_id].attached:  # as OpenEnv's: closed once its WebSocket goes
            self._sessions[session_id].closing = True
            return jsonrpc.result_response(request_id, {"session_id": session_id, "closed": False, "closing": True})
        await self._close(session_id)
        return jsonrpc.result_response(request_id, {"session_id": session_id, "closed": True})

    def attach(self, session_id: str) -> _McpSession:
        """The session a ``/ws?session_id=`` connection plays, marked attached until :meth:`detach`.

        Raises:
            ValueError: no such session, or another connection plays it.
        """
        session = self._sessions.get(session_id)
        if session is None or session.closing:
            raise ValueError(f"Unknown session_id: {session_id}")
        if session.attached:
            raise ValueError(f"Session {session_id} already has an attached WebSocket")
        session.attached = True
        return session

    async def detach(self, session: _McpSession) -> None:
        """Its WebSocket went: the session lives on (its idle time counted anew), or closes if asked to."""
        session.attached = False
        session.last_active = asyncio.get_running_loop().time()
        session_id = next((key for key, value in self._sessions.items() if value is session), None)
        if session_id is not None and session.closing:
            await self._close(session_id)

    async def _in_session(self, session: _McpSession, data: dict[str, Any]) -> dict[str, Any]:
        request_id, request = jsonrpc.parse_request(data)
        if isinstance(request, jsonrpc.JsonRpcError):
            return request.response(request_id)
        async with session.lock:  # one call at a time, as on a WebSocket
            session.last_active = asyncio.get_running_loop().time()
            if not session.env.tools:
                return _no_tools(request_id)
            if isinstance(request, ListToolsRequest):
                return _tools(request_id, session.env)
            if session.ended:
                return jsonrpc.error_response(
                    request_id,
                    JsonRpcCode.INVALID_REQUEST,
                    f"the episode has ended: {CLOSE_SESSION} this session and {CREATE_SESSION} another"
                    " (on a /mcp WebSocket: open another)",
                )
            answer, done = await _call_and_end(request_id, session.env, request, session.worker)
            session.ended = done
            session.last_active = asyncio.get_running_loop().time()
            return answer

    async def _close(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:  # closed meanwhile: by its WebSocket's end while the server stops
            return
        async with session.lock:
            await session.worker.close_env(session.env)
            session.worker.shutdown()
        await self._server.release_slot()

    async def close_all(self) -> None:
        """Close every session (the server is stopping)."""
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
        for session_id in list(self._sessions):
            await self._close(session_id)

    def _start_reaping(self) -> None:
        if self._server.idle_timeout is None or self._reaper is not None:
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        """Close sessions idle for the server's idle timeout, while any is open."""
        idle = self._server.idle_timeout
        assert idle is not None
        loop = asyncio.get_running_loop()
        try:
            while self._sessions:
                await asyncio.sleep(min(idle / 4, 5.0))
                now = loop.time()
                for session_id, session in list(self._sessions.items()):
                    if not session.lock.locked() and not session.attached and now - session.last_active > idle:
                        logger.info("closing MCP session %s: idle for over %g s", session_id, idle)
                        await self._close(session_id)
        finally:
            self._reaper = None

    def _at_capacity(self, request_id: Any) -> dict[str, Any]:
        refusal = self._server.capacity_refusal()
        data = {key: refusal.details[key] for key in ("active_sessions", "max_sessions")}
        return jsonrpc.error_response(request_id, JsonRpcCode.SERVER_ERROR, refusal.message, data)


def _invalid(data: dict[str, Any]) -> str | None:
    """What makes ``data`` no JSON-RPC 2.0 request OpenEnv reads, if anything."""
    if data.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(data.get("method"), str):
        return "method must be a string"
    if "params" in data and not isinstance(data["params"], dict):
        return "params must be an object"
    extra = set(data) - _REQUEST_KEYS
    if extra:
        return f"unexpected keys {sorted(extra)}"
    if (
        "id" in data
        and data["id"] is not None
        and (isinstance(data["id"], bool) or not isinstance(data["id"], (str, int)))
    ):
        return "id must be a string, an integer or null"
    return None


def _no_tools(request_id: Any) -> dict[str, Any]:
    return jsonrpc.error_response(request_id, JsonRpcCode.INTERNAL_ERROR, "Environment does not support MCP")


def _tools(request_id: Any, env: Environment[Any, Any, Any]) -> dict[str, Any]:
    return jsonrpc.result_response(request_id, jsonrpc.list_tools_result(env.tool_descriptions()))


async def _call_and_end(
    request_id: Any, env: Environment[Any, Any, Any], request: CallToolRequest, worker: Worker
) -> tuple[dict[str, Any], bool]:
    """The response to a call, and whether it ended the episode."""
    outcome = await run_tool(env, request, worker.run_bounded, env.max_tool_result_bytes)
    return jsonrpc.call_response(request_id, outcome.result, outcome.error), outcome.done or outcome.truncated
