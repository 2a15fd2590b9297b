"""`ModelEndpoint`: the model API a harness env's agent calls, served on loopback; each call it makes
waits there until the env answers it.

The agent is pointed at :attr:`ModelEndpoint.base_url` (``http://127.0.0.1:PORT/v1``, any key) and
posts to it in its own dialect (chat completions, Responses, Anthropic Messages: see
:mod:`openenv_gym.protocol.model_calls`). Each request is read into a
:class:`~openenv_gym.protocol.model_calls.ModelCall` and queued; the env takes it with
:meth:`~ModelEndpoint.next_call` (a step's observation) and answers it with
:meth:`~ModelEndpoint.reply` (a step's action), written back as the agent asked: one JSON body, or
server-sent events when it asked to stream. A call the env leaves unanswered for ``reply_timeout``
seconds is answered with a 504 in the agent's dialect, which says so.

The server runs on its own event loop thread (:class:`~openenv_gym._loop_thread.LoopThread`), so a
synchronous env waits for calls without blocking the agent's requests. HTTP is read and written with
h11 over asyncio streams, keep-alive included (the SDKs keep their connection open between calls).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import queue
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import h11

from .._loop_thread import LoopThread
from ..errors import ModelCallError
from ..protocol.model_calls import Dialect, ModelCall, Reply, answer, dialect_of, error_body, read_model_call

__all__ = ["DEFAULT_REPLY_TIMEOUT", "MAX_REQUEST_BYTES", "ModelEndpoint", "PendingCall"]

logger = logging.getLogger(__name__)

#: Seconds a call waits for the env's reply before it is answered with a 504.
DEFAULT_REPLY_TIMEOUT = 600.0
#: The largest request body read (an agent's whole history is in each call).
MAX_REQUEST_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 64 * 1024
_START_TIMEOUT = 30.0


@dataclass
class PendingCall:
    """A call the agent made and waits on: the env answers it once with :meth:`ModelEndpoint.reply`."""

    call: ModelCall
    #: Resolved on the endpoint's loop with the answer's media type and chunks.
    answered: asyncio.Future[tuple[str, list[bytes]]] = field(repr=False)
    #: Set when the wait ran out (the agent got a 504): a reply comes too late.
    expired: bool = False


class ModelEndpoint:
    """A loopback HTTP server that plays the model API for one agent process.

    Args:
        reply_timeout: seconds a call waits for the env's reply before the agent is answered 504.
        unix_socket: a path to serve on as well, a Unix socket (an agent in a sandbox without
            network reaches it through a bind mount).

    Example:
        >>> endpoint = ModelEndpoint()
        >>> endpoint.base_url.startswith("http://127.0.0.1:")
        True
        >>> endpoint.next_call(timeout=0.01) is None  # no agent has called
        True
        >>> endpoint.close()
    """

    def __init__(self, reply_timeout: float = DEFAULT_REPLY_TIMEOUT, unix_socket: str | None = None) -> None:
        if reply_timeout <= 0:
            raise ValueError(f"reply_timeout must be positive, got {reply_timeout}")
        self.reply_timeout = reply_timeout
        self._calls: queue.Queue[PendingCall] = queue.Queue()
        self._loop = LoopThread(name="openenv-gym-model-endpoint")
        self._connections: set[asyncio.Task[None]] = set()
        self._closed = False
        self._servers: list[asyncio.Server] = []
        try:
            self._servers.append(self._loop.run(asyncio.start_server(self._serve, "127.0.0.1", 0), _START_TIMEOUT))
            if unix_socket is not None:
                self._servers.append(
                    self._loop.run(asyncio.start_unix_server(self._serve, unix_socket), _START_TIMEOUT)
                )
        except BaseException:
            self.close()
            raise
        self.port: int = self._servers[0].sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        """The URL an OpenAI-style client takes as its base (``.../v1``); Anthropic's SDK takes it
        without ``/v1`` (:attr:`root_url`)."""
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    # --- the env's side ------------------------------------------------------------------------

    def next_call(self, timeout: float | None) -> PendingCall | None:
        """The agent's next call, waiting up to ``timeout`` seconds (``None``: for ever); ``None`` if none came."""
        try:
            return self._calls.get(timeout=timeout)
        except queue.Empty:
            return None

    def reply(self, pending: PendingCall, action: Reply | str | Mapping[str, Any]) -> None:
        """Answer ``pending`` with ``action`` (an assistant message or text), in the agent's dialect.

        Raises:
            ModelCallError: the action is no reply (the call still waits for one), or the call was
                already answered, timed out or the endpoint is closed.
        """
        media, chunks = answer(pending.call, action)  # raises before anything is sent
        if pending.expired:
            raise ModelCallError(
                f"the agent's call waited more than {self.reply_timeout:g} s for a reply and was answered 504",
                pending.call.dialect.value,
            )
        if self._closed or not self._loop.alive:
            raise ModelCallError("the model endpoint is closed", pending.call.dialect.value)

        def resolve() -> None:
            if not pending.answered.done():
                pending.answered.set_result((media, chunks))

        if pending.answered.done():
            raise ModelCallError("the call was already answered", pending.call.dialect.value)
        self._loop.loop.call_soon_threadsafe(resolve)

    def close(self) -> None:
        """Stop serving: open connections are dropped (the agent sees its call fail); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._loop.alive:
            with contextlib.suppress(TimeoutError, RuntimeError, concurrent.futures.CancelledError):
                self._loop.run(self._shut(), _START_TIMEOUT)
        self._loop.stop()

    def __enter__(self) -> ModelEndpoint:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _shut(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    # --- the agent's side ----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await _Connection(self, reader, writer).run()
        except (ConnectionError, asyncio.IncompleteReadError, h11.ProtocolError) as exc:
            logger.debug("model endpoint: connection dropped (%s)", exc)
        except asyncio.CancelledError:
            # Closed: the connection ends here. Left cancelled, the task would have asyncio's stream
            # callback log a traceback for it.
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _answer(self, path: str, body: bytes) -> tuple[int, str, list[bytes]]:
        """The status, media type and chunks that answer a POST to ``path``."""
        try:
            dialect = dialect_of(path)
        except ModelCallError as exc:
            return _error(404, Dialect.CHAT_COMPLETIONS, str(exc), "not_found_error")
        try:
            call = read_model_call(path, body)
        except ModelCallError as exc:
            return _error(400, dialect, str(exc))
        pending = PendingCall(call, asyncio.get_running_loop().create_future())
        self._calls.put(pending)
        try:
            media, chunks = await asyncio.wait_for(asyncio.shield(pending.answered), self.reply_timeout)
        except TimeoutError:
            pending.expired = True
            message = f"the environment gave no reply to this call within {self.reply_timeout:g} s"
            return _error(504, dialect, message, "timeout_error")
        return 200, media, chunks


class _Connection:
    """One agent connection: its requests in turn, each answered before the next is read (HTTP/1.1)."""

    def __init__(self, endpoint: ModelEndpoint, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.endpoint = endpoint
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.SERVER)

    async def run(self) -> None:
        while True:
            request = await self._next_event()
            if not isinstance(request, h11.Request):
                return  # the agent closed the connection
            body = bytearray()
            while True:
                event = await self._next_event()
                if isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > MAX_REQUEST_BYTES:
                        await self._send(
                            413, "application/json", [_json(error_body(Dialect.CHAT_COMPLETIONS, "too large"))]
                        )
                        return
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return
            path = request.target.decode("latin-1")
            if request.method == b"POST":
                status, media, chunks = await self.endpoint._answer(path, bytes(body))
            elif request.method == b"GET" and path.split("?", 1)[0].rstrip("/").endswith("/models"):
                status, media, chunks = 200, "application/json", [_json({"object": "list", "data": []})]
            else:
                status, media, chunks = _error(
                    404, Dialect.CHAT_COMPLETIONS, f"no model API at {path!r:.200}", "not_found_error"
                )
            await self._send(status, media, chunks)
            if self.h11.our_state is h11.MUST_CLOSE or self.h11.their_state is h11.MUST_CLOSE:
                return
            self.h11.start_next_cycle()

    async def _next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.reader.read(_READ_CHUNK))
                continue
            return event

    async def _send(self, status: int, media: str, chunks: list[bytes]) -> None:
        """The answer: the JSON body with its length, or the events in chunks as they are written."""
        headers = [("content-type", media), ("cache-control", "no-cache")]
        streamed = media != "application/json"
        if not streamed:
            headers.append(("content-length", str(sum(len(chunk) for chunk in chunks))))
        self.writer.write(self.h11.send(h11.Response(status_code=status, headers=headers)))
        for chunk in chunks:
            self.writer.write(self.h11.send(h11.Data(data=chunk)))
            if streamed:
                await self.writer.drain()
        self.writer.write(self.h11.send(h11.EndOfMessage()))
        await self.writer.drain()


def _json(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def _error(
    status: int, dialect: Dialect, message: str, kind: str = "invalid_request_error"
) -> tuple[int, str, list[bytes]]:
    return status, "application/json", [_json(error_body(dialect, message, kind))]
