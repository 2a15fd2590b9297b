"""OpenEnv 0.10's turn-based harness socket, ``/harness``, served for a harness env.

A server whose env runs an agent (one with ``run_turn``, as :class:`~envs.harness.HarnessEnvironment`
has) and whose operator names a model API (``serve --harness-model-url``) opens it; elsewhere it is
a 404 that says why. Each connection makes its own env, holding one of the server's session slots
while it is open, and answers ``session_started``. Each ``{"type": "message", "content"}`` frame is a
turn: the agent works on the text, each of its model calls asked of the operator's model
(:class:`~openenv_gym.server.chat_model.ChatModel`), and the turn's events are sent as they happen,
``turn_complete`` last (:mod:`openenv_gym.protocol.harness_turns`). A frame that is no turn gets a
``protocol_error`` and the socket stays open; a turn that fails ends with an ``error`` event and the
session closes, as OpenEnv's server does. A socket silent for the server's idle timeout is closed
(1001); the env is closed (its agent killed) whenever the socket goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from ..errors import ModelCallError, ProtocolError
from ..protocol import ErrorFrame
from ..protocol.harness_turns import (
    Model,
    protocol_error,
    read_turn,
    session_started,
    turn_event,
)
from .chat_model import ChatModel
from .session import factory_error

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from .env_server import EnvServer

__all__ = ["MODEL_KEY_ENV_VAR", "TurnHarness", "harness_refusal", "serve_harness_socket"]

logger = logging.getLogger(__name__)

#: Where the operator's model API key is read from when ``harness_model_key`` is not given.
MODEL_KEY_ENV_VAR = "OPENENV_GYM_HARNESS_MODEL_KEY"
#: Seconds a socket's close waits for its turn's thread once the env is closed (its agent killed).
_TURN_STOP_TIMEOUT = 30.0


@runtime_checkable
class TurnHarness(Protocol):
    """An env that runs an agent turn by turn: what ``/harness`` serves."""

    @property
    def harness_name(self) -> str: ...

    def run_turn(self, prompt: str, model: Model) -> Iterator[dict[str, Any]]: ...


def harness_refusal(harness: str | None, model_url: str | None) -> str | None:
    """Why this server has no ``/harness`` (its env's agent is ``harness``, ``None`` for an env that
    runs none), or ``None`` when it serves it."""
    if harness is None:
        return "no route /harness: this server's env runs no agent harness"
    if model_url is None:
        return "/harness is off: serve --harness-model-url URL names the model its turns ask"
    return None


async def serve_harness_socket(connection: ServerConnection, server: EnvServer) -> None:
    """Serve one ``/harness`` WebSocket until the client closes it, a turn fails, the server stops,
    or it stays silent for the server's idle timeout."""
    options = server.options
    assert options.harness_model_url is not None  # the route is open only then
    if not server.take_slot():
        await _refuse(connection, server.capacity_refusal(), CloseCode.TRY_AGAIN_LATER)
        return
    try:
        env = await asyncio.to_thread(server.factory)
        if not isinstance(env, TurnHarness):  # /metadata said it was: a factory that makes either
            await asyncio.to_thread(env.close)
            raise TypeError(f"{type(env).__name__} runs no agent harness (it has no run_turn)")
    except Exception as exc:
        await server.release_slot()
        logger.exception("a /harness session's environment could not be made")
        await _refuse(connection, factory_error(server.factory, exc, server.send_tracebacks), CloseCode.INTERNAL_ERROR)
        return
    key = options.harness_model_key or os.environ.get(MODEL_KEY_ENV_VAR)
    model = ChatModel(options.harness_model_url, options.harness_model, key)
    turn: asyncio.Future[None] | None = None
    try:
        await connection.send(json.dumps(session_started(str(uuid.uuid4()), env.harness_name)))
        while True:
            try:
                message = await asyncio.wait_for(connection.recv(), server.idle_timeout)
            except TimeoutError:
                await connection.close(CloseCode.GOING_AWAY, f"session idle for more than {server.idle_timeout:g} s")
                return
            try:
                prompt = read_turn(message)
            except ProtocolError as error:
                await connection.send(json.dumps(protocol_error(error)))
                continue
            events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
            turn = asyncio.ensure_future(
                asyncio.to_thread(_run_turn, env, prompt, model, asyncio.get_running_loop(), events)
            )
            last = None
            while (event := await _next_event(events, connection)) is not None:
                await connection.send(json.dumps(event))
                last = event
            if last is None or last["type"] != "turn_complete":
                break  # the turn failed, or the socket closed: the agent's state is unknown, the session ends
            await turn
    except ConnectionClosed:
        pass  # the client went, or the server is stopping: the session goes with the socket
    finally:
        await asyncio.to_thread(env.close)  # kills the agent: a turn still running ends with it
        if turn is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(turn), _TURN_STOP_TIMEOUT)
        await server.release_slot()
        await connection.close()


async def _next_event(
    events: asyncio.Queue[dict[str, Any] | None], connection: ServerConnection
) -> dict[str, Any] | None:
    """The turn's next event; ``None`` once it has ended, or the socket has closed meanwhile (the
    turn sends nothing while the agent works, so the client's leaving is seen here)."""
    getter = asyncio.ensure_future(events.get())
    closed = asyncio.ensure_future(connection.wait_closed())
    try:
        await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
        if not getter.done():
            getter.cancel()
    return getter.result() if getter.done() and not getter.cancelled() else None


def _run_turn(
    env: TurnHarness,
    prompt: str,
    model: Model,
    loop: asyncio.AbstractEventLoop,
    events: asyncio.Queue[dict[str, Any] | None],
) -> None:
    """Run one turn on this thread, handing each event to the socket's loop, ``None`` last."""
    try:
        for event in env.run_turn(prompt, model):
            loop.call_soon_threadsafe(events.put_nowait, event)
    except Exception as exc:
        logger.warning("a /harness turn failed: %s: %s", type(exc).__name__, exc)
        # The model API's own failure is the operator's to see; anything else may carry the agent's
        # output or the server's paths, so it is named only.
        reason = str(exc) if isinstance(exc, ModelCallError) else type(exc).__name__
        loop.call_soon_threadsafe(
            events.put_nowait, turn_event("error", message=f"harness turn failed: {reason}", recoverable=False)
        )
    finally:
        loop.call_soon_threadsafe(events.put_nowait, None)


async def _refuse(connection: ServerConnection, frame: ErrorFrame, code: CloseCode) -> None:
    with contextlib.suppress(ConnectionClosed):
        await connection.send(frame.serialize())
        await connection.close(code, frame.message[:120])
