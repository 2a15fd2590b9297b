"""`Session`: one WebSocket connection, one environment instance, frames in and frames out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import traceback
from collections.abc import Callable
from typing import Any

import pydantic
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..protocol import (
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    ResetFrame,
    ServerSession,
    StateFrame,
    StateRequest,
    StepFrame,
)
from .environment import Environment

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
    the event loop. ``busy`` and ``last_active`` let the server reap idle sessions.
    """

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
        self.size = 1  # environments this session holds, for the server's capacity count
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-gym-session")

    def _blocking(self) -> bool:
        source = self.env if self.env is not None else self.factory
        return bool(getattr(source, "blocking", True))

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the session's worker thread, or on the loop for non-blocking environments."""
        if not self._blocking():
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

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
        """Answer frames until the client closes the session or the connection ends."""
        loop = asyncio.get_running_loop()
        try:
            async for message in self.connection:
                self.busy = True
                reply = await self.handle(message)
                if reply is not None:
                    await self.connection.send(reply)
                self.busy = False
                self.last_active = loop.time()
                if reply is None:  # a close frame
                    break
        except ConnectionClosed:
            pass

    async def handle(self, message: str | bytes) -> str | bytes | None:
        """Carry out one message and return the reply, or ``None`` after a close frame."""
        assert self.env is not None, "handle() before open()"
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, StepFrame):
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
                return self.env.observation_frame(observation).serialize()
            except Exception as exc:
                return _execution_error("step", exc, self.send_tracebacks).serialize()
        if isinstance(request, ResetFrame):
            try:
                kwargs = _accepted_kwargs(self.env.reset, request.kwargs)
                observation = await self._call(self.env.reset, **kwargs)
                reply = self.env.observation_frame(observation).serialize()
            except Exception as exc:
                return _execution_error("reset", exc, self.send_tracebacks).serialize()
            self.protocol.reset_succeeded()
            return reply
        if isinstance(request, StateRequest):
            try:
                return StateFrame(self.env.state_data()).serialize()
            except Exception as exc:
                return _execution_error("state", exc, self.send_tracebacks).serialize()
        assert isinstance(request, CloseFrame)
        return None

    async def close(self) -> bool:
        """Close the environment (once, with a timeout) and release the worker thread.

        Returns false if the environment's ``close()`` overran :data:`CLOSE_TIMEOUT`: its thread
        may then still be running, and the process should not wait for it at exit.
        """
        self.protocol.close()
        env, self.env = self.env, None
        in_time = await self._close_env(env) if env is not None else True
        self._executor.shutdown(wait=False)
        return in_time

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
