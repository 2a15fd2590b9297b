"""`Session`: one WebSocket connection, one environment instance, frames in and frames out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import secrets
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..errors import ProtocolError
from ..protocol import (
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    McpFrame,
    ObservationFrame,
    RenderFrame,
    RenderRequest,
    ResetFrame,
    ServerSession,
    SessionState,
    StateFrame,
    StateRequest,
    StepFrame,
    jsonrpc,
)
from ..protocol._json import utf8
from ..protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode
from ..protocol.tools import CallToolRequest, ListToolsRequest, parse_tool_action
from .environment import Environment
from .tools import ToolOutcome, run_tool

if TYPE_CHECKING:
    from .watch import Watcher

__all__ = ["Session", "factory_error"]

logger = logging.getLogger(__name__)


def factory_error(factory: Callable[..., Any], exc: BaseException, with_traceback: bool = False) -> ErrorFrame:
    """The ``FACTORY_ERROR`` frame that says why ``factory`` could not make an environment."""
    details: dict[str, Any] = {"factory_name": getattr(factory, "__name__", repr(factory))}
    if with_traceback:
        details["traceback"] = "".join(traceback.format_exception(exc))
    return ErrorFrame(ErrorCode.FACTORY_ERROR, f"{type(exc).__name__}: {exc}", details)


# An environment's close() gets this long before the session gives up waiting on it.
CLOSE_TIMEOUT = 10.0


@functools.lru_cache(maxsize=256)
def _parameters_of(function: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword names ``function`` accepts, or None if it takes ``**kwargs``."""
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return frozenset(parameters)


def _accepted_kwargs(method: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keep the keyword arguments ``method`` accepts, as OpenEnv does for reset data."""
    accepted = _parameters_of(getattr(method, "__func__", method))
    if accepted is None:
        return kwargs
    return {key: value for key, value in kwargs.items() if key in accepted}


def _execution_error(call: str, exc: BaseException, with_traceback: bool) -> ErrorFrame:
    details = {"traceback": "".join(traceback.format_exception(exc))} if with_traceback else {}
    return ErrorFrame(ErrorCode.EXECUTION_ERROR, f"{call} failed: {type(exc).__name__}: {exc}", details)


class Session:
    """Serve one connection: create the environment, answer frames in order, always close it.

    The environment runs in the session's own worker thread when it is ``blocking``, otherwise on
    the event loop. ``busy`` and ``last_active`` let the server reap idle sessions; ``id``, the
    counts and ``watchers`` serve the web page's list of sessions and its watch mode.
    """

    #: What ``/web/sessions`` calls this kind of session.
    kind = "plain"

    def __init__(
        self,
        connection: ServerConnection,
        factory: Callable[[], Environment[Any, Any, Any]],
        *,
        send_tracebacks: bool = True,
    ) -> None:
        self.connection = connection
        self.factory = factory
        self.send_tracebacks = send_tracebacks
        self.env: Environment[Any, Any, Any] | None = None
        self.protocol = ServerSession()
        self.busy = False
        self.last_active = asyncio.get_running_loop().time()
        #: Since when the reply being sent has waited for the client to take it (None: no reply
        #: waiting); a send is not ``busy``: it waits on the client, not on the environment.
        self.sending_since: float | None = None
        #: Why the server ended the session (:meth:`expire`), or None.
        self.expired: str | None = None
        self._serving: asyncio.Task[None] | None = None
        self.size = 1  # environments this session holds, for the server's capacity count
        self.id = secrets.token_hex(6)
        self.started = self.last_active
        self.steps = 0
        self.episodes = 0
        #: The render mode the session's env was made with (``/ws?render_mode=``), if any.
        self.render_mode: str | None = None
        #: How a batch or vector session's sub-envs reset (``None`` for a plain session).
        self.autoreset_mode: AutoresetMode | None = None
        request = connection.request
        self.from_browser = request is not None and request.headers.get("Origin") is not None
        self.watchers: set[Watcher] = set()
        self._executor = self._new_executor()
        # Tool calls that overran their limit: their threads may still be running.
        self._abandoned: list[asyncio.Future[Any]] = []

    @staticmethod
    def _new_executor() -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-gym-session")

    def _blocking(self) -> bool:
        source = self.env if self.env is not None else self.factory
        return bool(getattr(source, "blocking", True))

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the session's worker thread, or on the loop for non-blocking environments."""
        if not self._blocking():
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    async def _run_bounded(self, call: Callable[[], Any], timeout: float) -> Any:
        """Run a sync tool call in the worker thread, giving up on it after ``timeout`` seconds.

        Tools always run off the event loop, so that their limit holds even in a non-blocking
        environment. A call that overruns keeps its thread (Python cannot stop one), so the
        session moves on to a fresh worker and remembers the old one for :meth:`close`.

        Raises:
            TimeoutError: the call overran.
        """
        future = asyncio.get_running_loop().run_in_executor(self._executor, call)
        done, _ = await asyncio.wait({future}, timeout=timeout)
        if done:
            return future.result()
        logger.warning("a tool call overran its %g s limit; its thread is left to finish on its own", timeout)
        self._abandoned.append(future)
        self._executor.shutdown(wait=False)
        self._executor = self._new_executor()
        raise TimeoutError

    async def _call_tool(self, request: CallToolRequest) -> ToolOutcome:
        assert self.env is not None
        return await run_tool(self.env, request, self._run_bounded, self.env.max_tool_result_bytes)

    async def _tool_frame(self, request: ListToolsRequest | CallToolRequest) -> ObservationFrame:
        assert self.env is not None
        if isinstance(request, ListToolsRequest):
            return self.env.tools_frame()
        return self.env.tool_frame(await self._call_tool(request))

    async def _mcp(self, message: dict[str, Any]) -> McpFrame:
        """Answer one MCP JSON-RPC request (``tools/list``, ``tools/call``)."""
        assert self.env is not None
        request_id, request = jsonrpc.parse_request(message)
        if isinstance(request, jsonrpc.JsonRpcError):
            return McpFrame(request.response(request_id))
        if isinstance(request, ListToolsRequest):
            tools = [tool.describe() for tool in self.env.tools.values()]
            return McpFrame(jsonrpc.result_response(request_id, jsonrpc.list_tools_result(tools)))
        if self.protocol.state is SessionState.OPEN:
            return McpFrame(
                jsonrpc.error_response(
                    request_id, jsonrpc.JsonRpcCode.INVALID_REQUEST, "tools/call before reset: send a reset frame first"
                )
            )
        outcome = await self._call_tool(request)
        return McpFrame(jsonrpc.call_response(request_id, outcome.result, outcome.error))

    async def open(self) -> ErrorFrame | None:
        """Create the environment; return the ``FACTORY_ERROR`` frame to send if that failed."""
        self.busy = True  # a slow factory is not idleness
        try:
            await self._create()
        except Exception as exc:
            logger.exception("environment factory failed")
            return factory_error(self.factory, exc, self.send_tracebacks)
        finally:
            self.busy = False
            self.last_active = asyncio.get_running_loop().time()
        return None

    async def _create(self) -> None:
        self.env = await self._call(self.factory)

    async def run(self) -> None:
        """Answer frames until the client closes the session, the connection ends, or the server
        ends the session (:meth:`expire`)."""
        if self.expired is not None:
            return
        self._serving = asyncio.get_running_loop().create_task(self._serve())
        try:
            await self._serving
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.expired is None or (task is not None and task.cancelling()):
                raise  # not expire()'s cancel: the server is stopping

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            async for message in self.connection:
                self.busy = True
                reply = await self.handle(message)
                self.busy = False
                if reply is None:  # a close frame
                    break
                self.sending_since = loop.time()
                await self._send(reply)  # waits while the client's buffers are full
                self.sending_since = None
                self.last_active = loop.time()
        except ConnectionClosed:
            pass

    def expire(self, reason: str) -> None:
        """End the session now, between frames or in a send the client does not read.

        :meth:`run` returns without waiting on the client, so the server releases the
        environment at once; closing the connection is the caller's business. It only ever
        interrupts a wait on the client (a receive or a send), never the environment: the server
        expires only sessions that are not ``busy``.
        """
        if self.expired is None:
            self.expired = reason
            if self._serving is not None:
                self._serving.cancel()

    async def _send(self, reply: str | bytes) -> None:
        if isinstance(reply, str) and not reply.isascii():
            # Encoded here (websockets would, once): a lone surrogate, read from a "\\ud800" escape and
            # echoed, fails strict UTF-8 inside websockets, which then drops the connection.
            await self.connection.send(utf8(reply), text=True)
        else:
            await self.connection.send(reply)

    async def handle(self, message: str | bytes) -> str | bytes | None:
        """Carry out one message and return the reply, or ``None`` after a close frame."""
        assert self.env is not None, "handle() before open()"
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, McpFrame):
            return (await self._mcp(request.data)).serialize()
        if isinstance(request, StepFrame):
            try:
                tool_request = parse_tool_action(request.action)
            except ProtocolError as exc:
                return ErrorFrame.from_exception(exc).serialize()
            if tool_request is not None:
                reply = (await self._tool_frame(tool_request)).serialize()
                self._observed("step", request.action, reply)
                return reply
            try:
                action = self.env.parse_action(request.action)
            except pydantic.ValidationError as exc:
                return ErrorFrame(
                    ErrorCode.VALIDATION_ERROR,
                    f"invalid action: {exc.error_count()} validation error(s)",
                    {"errors": exc.errors(include_url=False, include_context=False, include_input=False)},
                ).serialize()
            except Exception as exc:  # whatever decoding raises, bad input must not end the session
                return ErrorFrame(ErrorCode.VALIDATION_ERROR, f"invalid action: {exc}").serialize()
            try:
                observation = await self._call(self.env.step, action)
                reply = self.env.observation_frame(observation).serialize()
            except Exception as exc:
                return _execution_error("step", exc, self.send_tracebacks).serialize()
            self._observed("step", request.action, reply)
            return reply
        if isinstance(request, ResetFrame):
            try:
                kwargs = _accepted_kwargs(self.env.reset, request.kwargs)
                observation = await self._call(self.env.reset, **kwargs)
                reply = self.env.observation_frame(observation).serialize()
            except Exception as exc:
                return _execution_error("reset", exc, self.send_tracebacks).serialize()
            self.protocol.reset_succeeded()
            self._observed("reset", None, reply)
            return reply
        if isinstance(request, StateRequest):
            try:
                return StateFrame(self.env.state_data()).serialize()
            except Exception as exc:
                return _execution_error("state", exc, self.send_tracebacks).serialize()
        if isinstance(request, RenderRequest):
            return await self._render_reply(self.env.render)
        assert isinstance(request, CloseFrame)
        return None

    def _observed(self, event: str, action: Any, reply: str) -> None:
        """Count a transition and hand it to whoever watches (nothing else when nobody does)."""
        if event == "reset":
            self.episodes += 1
        else:
            self.steps += 1
        for watcher in self.watchers:
            watcher.offer(event, self.steps, action, reply)

    def _frame_of(self, sub_env: int) -> Any:
        """What ``render()`` gives for sub-env ``sub_env`` (a plain session's env is its only one)."""
        assert self.env is not None
        return self.env.render()

    async def render_for_watcher(self, sub_env: int) -> RenderFrame | None:
        """A frame for a watcher, rendered in the session's worker thread (between its steps)."""
        if self.env is None:
            return None
        try:
            frame = await self._call(self._frame_of, sub_env)
        except Exception:
            logger.debug("render() for a watcher failed", exc_info=True)
            return None
        return None if frame is None else RenderFrame(frame)

    def end_watches(self, reason: str) -> None:
        """Tell every watcher the session is closing."""
        for watcher in self.watchers:
            watcher.end(reason)

    async def _render_reply(self, render: Callable[[], Any]) -> str | bytes:
        """The ``render`` frame of what ``render()`` returns (arrays as raw bytes on a binary
        connection), or the ``EXECUTION_ERROR`` frame of what it raised."""
        try:
            frame = RenderFrame(await self._call(render))
            binary = self.connection.subprotocol == BINARY_SUBPROTOCOL
            return frame.serialize_binary() if binary else frame.serialize()
        except Exception as exc:
            return _execution_error("render", exc, self.send_tracebacks).serialize()

    async def close(self) -> bool:
        """Close the environment (once, with a timeout) and release the worker thread.

        Returns false if the environment's ``close()`` overran :data:`CLOSE_TIMEOUT`, or a tool
        call that overran its limit is still running: such a thread may never end, and the
        process should not wait for it at exit.
        """
        self.protocol.close()
        env, self.env = self.env, None
        in_time = await self._close_env(env) if env is not None else True
        self._executor.shutdown(wait=False)
        return in_time and all(future.done() for future in self._abandoned)

    async def _close_env(self, env: Environment[Any, Any, Any]) -> bool:
        """Run ``env.close()`` where its other calls ran; false if it overran its timeout."""
        try:
            if env.blocking:
                loop = asyncio.get_running_loop()
                await asyncio.wait_for(loop.run_in_executor(self._executor, env.close), CLOSE_TIMEOUT)
            else:
                env.close()
        except TimeoutError:
            logger.error("the environment's close() did not return within %g s", CLOSE_TIMEOUT)
            return False
        except Exception:
            logger.exception("closing the environment failed")
        return True
