"""`Session`: one WebSocket connection served by the handler of its kind, frames in and frames out.

The session is the connection loop every kind shares: it reads frames in order, runs its
environment's calls in its :class:`~openenv_gym.server.worker.Worker` thread, tells the server
when it is busy or idle or waiting on the client, hands transitions to its watchers, and always
closes. What a frame means is its :class:`SessionHandler`'s: a plain session's
(:mod:`~openenv_gym.server.plain_session`), a batch session's
(:mod:`~openenv_gym.server.batch_session`, :mod:`~openenv_gym.server.pickled_factories`) or a
vector session's (:mod:`~openenv_gym.server.vector_session`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..protocol import ErrorCode, ErrorFrame, ObservationFrame, RenderFrame
from ..protocol._json import utf8
from ..protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode
from ..protocol.raised import exception_details
from .worker import CLOSE_TIMEOUT, Worker

if TYPE_CHECKING:
    from .watch import Watcher

__all__ = ["CLOSE_TIMEOUT", "Session", "SessionHandler", "factory_error"]

logger = logging.getLogger(__name__)


def factory_error(factory: Callable[..., Any], exc: BaseException, with_traceback: bool = False) -> ErrorFrame:
    """The ``FACTORY_ERROR`` frame that says why ``factory`` could not make an environment."""
    details: dict[str, Any] = {"factory_name": getattr(factory, "__name__", repr(factory))}
    if with_traceback:
        details["traceback"] = "".join(traceback.format_exception(exc))
    return ErrorFrame(ErrorCode.FACTORY_ERROR, f"{type(exc).__name__}: {exc}", details)


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
    details: dict[str, Any] = {"traceback": "".join(traceback.format_exception(exc))} if with_traceback else {}
    details |= exception_details(exc)  # so a vector env raises it as its own type (protocol/raised.py)
    return ErrorFrame(ErrorCode.EXECUTION_ERROR, f"{call} failed: {type(exc).__name__}: {exc}", details)


class SessionHandler(Protocol):
    """What one kind of session does with its frames; the :class:`Session` runs it."""

    #: What ``/web/sessions`` calls this kind of session.
    kind: str
    #: Environments the session holds, for the server's capacity count.
    size: int
    #: How a batch or vector session's sub-envs reset (``None`` for a plain session).
    autoreset_mode: AutoresetMode | None

    @property
    def blocking(self) -> bool:
        """Whether its environments' calls must run in the worker thread."""
        ...

    @property
    def live(self) -> bool:
        """Whether its environments exist (a watcher may look at them)."""
        ...

    async def open(self, session: Session) -> ErrorFrame | None:
        """Make the environments; the frame to send if that failed."""
        ...

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        """Carry out one message and return the reply, or ``None`` after a close frame."""
        ...

    def frame_of(self, sub_env: int) -> Any:
        """What ``render()`` gives for sub-env ``sub_env`` (called in the worker thread)."""
        ...

    async def close(self, worker: Worker) -> bool:
        """Close the environments (each with its timeout); false if one overran it."""
        ...


async def make_environments(
    session: Session, create: Callable[[], Any], factory: Callable[..., Any]
) -> ErrorFrame | None:
    """Await ``create()``; the ``FACTORY_ERROR`` frame of ``factory`` if it raised."""
    try:
        await create()
    except Exception as exc:
        logger.exception("environment factory failed")
        return factory_error(factory, exc, session.send_tracebacks)
    return None


class Session:
    """Serve one connection with ``handler``: open it, answer frames in order, always close it.

    ``busy`` and ``last_active`` let the server reap idle sessions; ``id``, the counts and
    ``watchers`` serve the web page's list of sessions and its watch mode.
    """

    def __init__(self, connection: ServerConnection, handler: SessionHandler, *, send_tracebacks: bool = True) -> None:
        self.connection = connection
        self.handler = handler
        self.send_tracebacks = send_tracebacks
        #: The thread the session's environments run in.
        self.worker = Worker()
        #: Where the environments' calls run instead, once a handler moved them to a thread of its
        #: own (a vector session's shared-memory channel).
        self.runner: Callable[..., Awaitable[Any]] | None = None
        self.loop = asyncio.get_running_loop()
        self.busy = False
        self.last_active = asyncio.get_running_loop().time()
        #: Since when the reply being sent has waited for the client to take it (None: no reply
        #: waiting); a send is not ``busy``: it waits on the client, not on the environment.
        self.sending_since: float | None = None
        #: Why the server ended the session (:meth:`expire`), or None.
        self.expired: str | None = None
        self._serving: asyncio.Task[None] | None = None
        self.id = secrets.token_hex(6)
        self.started = self.last_active
        self.steps = 0
        self.episodes = 0
        #: The render mode the session's envs were made with (``render_mode=`` in the query), if any.
        self.render_mode: str | None = None
        request = connection.request
        self.from_browser = request is not None and bool(request.headers.get_all("Origin"))
        self.watchers: set[Watcher] = set()

    @property
    def kind(self) -> str:
        return self.handler.kind

    @property
    def size(self) -> int:
        return self.handler.size

    @property
    def autoreset_mode(self) -> AutoresetMode | None:
        return self.handler.autoreset_mode

    @property
    def live(self) -> bool:
        """Whether the session's environments exist."""
        return self.handler.live

    @property
    def binary(self) -> bool:
        """Whether the client took the binary batch codec."""
        return self.connection.subprotocol == BINARY_SUBPROTOCOL

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the worker thread, or on the loop for environments that do not block."""
        if self.runner is not None:
            return await self.runner(fn, *args, **kwargs)
        return await self.worker.call(self.handler.blocking, fn, *args, **kwargs)

    async def open(self) -> ErrorFrame | None:
        """Open the handler (make the environments); return the frame to send if that failed."""
        self.busy = True  # a slow factory is not idleness
        try:
            return await self.handler.open(self)
        finally:
            self.busy = False
            self.last_active = asyncio.get_running_loop().time()

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
                reply = await self.handler.handle(self, message)
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

    def observed(self, event: str, action: Any, reply: str, frame: ObservationFrame) -> None:
        """Count a plain transition and hand it to whoever watches (nothing else when nobody does):
        ``reply`` is the text its client got, ``frame`` the same reply unserialized."""
        if event == "reset":
            self.episodes += 1
        else:
            self.steps += 1
        for watcher in self.watchers:
            watcher.offer(event, self.steps, action, reply, frame.reward, frame.done, frame.truncated)

    async def render_reply(self, render: Callable[[], Any]) -> str | bytes:
        """The ``render`` frame of what ``render()`` returns (arrays as raw bytes on a binary
        connection), or the ``EXECUTION_ERROR`` frame of what it raised."""
        try:
            frame = RenderFrame(await self.call(render))
            return frame.serialize_binary() if self.binary else frame.serialize()
        except Exception as exc:
            return _execution_error("render", exc, self.send_tracebacks).serialize()

    async def render_for_watcher(self, sub_env: int) -> RenderFrame | None:
        """A frame for a watcher, rendered in the session's worker thread (between its steps)."""
        if not self.live:
            return None
        try:
            frame = await self.call(self.handler.frame_of, sub_env)
        except Exception:
            logger.debug("render() for a watcher failed", exc_info=True)
            return None
        return None if frame is None else RenderFrame(frame)

    def end_watches(self, reason: str) -> None:
        """Tell every watcher the session is closing."""
        for watcher in self.watchers:
            watcher.end(reason)

    async def close(self) -> bool:
        """Close the environments (once, each with a timeout) and release the worker thread.

        Returns false if an environment's ``close()`` overran :data:`CLOSE_TIMEOUT`, or a tool
        call that overran its limit is still running: such a thread may never end, and the
        process should not wait for it at exit.
        """
        in_time = await self.handler.close(self.worker)
        return self.worker.shutdown() and in_time
