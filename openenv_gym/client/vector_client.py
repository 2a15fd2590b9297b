"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env; its kind, `VectorKind`."""

from __future__ import annotations

import time
import urllib.parse
from typing import Any

from websockets.typing import Subprotocol

from ..errors import ConnectionLostError, ProtocolError, RemoteError
from ..protocol import ClientSession, ErrorCode, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode, batch_query
from ..protocol.shm import ShmOffer, ShmOpenFrame
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from ..urls import is_loopback_host, unix_socket_path
from ._session import remote_error
from .batch_client import BlockClient, BlockKind, codec_subprotocols
from .shm_link import ShmLink

__all__ = ["TRANSPORTS", "VectorClient", "VectorKind", "VectorReply"]

#: What a vector session's steps may travel by: the WebSocket, shared memory (the same host
#: only), or shared memory where the server offers it and can be reached, else the WebSocket.
TRANSPORTS = ("auto", "ws", "shm")

#: What a vector session answers, besides an error frame.
VectorReply = VectorResultFrame | RenderFrame | ShmOffer

_REPLIES: dict[MessageType, type] = {
    MessageType.VECTOR_RESET: VectorResultFrame,
    MessageType.VECTOR_STEP: VectorResultFrame,
    MessageType.RENDER: RenderFrame,
    MessageType.SHM_OPEN: ShmOffer,
}


class VectorKind(BlockKind[VectorReply]):
    """The logic of a vector session: its frames (actions packed once the binary codec is agreed),
    and one entry per sub-env in each reply."""

    def __init__(
        self,
        envs: int,
        autoreset_mode: AutoresetMode,
        backend: str,
        query: str,
        subprotocols: list[Subprotocol] | None,
    ) -> None:
        super().__init__(envs, autoreset_mode, query, subprotocols)
        self.backend = backend

    def new_session(self) -> ClientSession[VectorReply | ErrorFrame]:
        return ClientSession(parse_vector_server_frame, _REPLIES)

    def check(self, reply: VectorReply) -> VectorReply:
        if not isinstance(reply, ShmOffer):
            reply.check(self.envs)
        return reply

    def shm_open(self) -> str:
        return self.session.send(MessageType.SHM_OPEN, ShmOpenFrame())

    def reset(self, frame: VectorResetFrame) -> str:
        return self.session.send(MessageType.VECTOR_RESET, frame)

    def step(self, frame: VectorStepFrame) -> str | bytes:
        if self.subprotocol is not None:  # the binary codec was offered and agreed: actions travel packed
            return self.session.send_binary(MessageType.VECTOR_STEP, frame)
        return self.session.send(MessageType.VECTOR_STEP, frame)


class VectorClient(BlockClient[VectorReply]):
    """Reset or step one server-side vector env of ``envs`` sub-envs, one frame per call.

    Results stay arrays: observations, rewards and flags as the vector env returned them, infos
    as Gymnasium's vector infos. With ``codec="binary"`` the actions travel packed too.

    Args:
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        envs: how many sub-envs the vector env holds.
        autoreset_mode: the vector env's autoreset mode (one its backend serves).
        backend: the server-side vector env: ``"gymnasium"``, ``"ale"`` or ``"envpool"``.
        codec: ``"binary"`` or ``"json"``.
        transport: how steps travel (resets, render and errors always take the WebSocket):
            ``"ws"``; ``"shm"``, shared memory with a server on this host (the connection fails,
            saying why, if the server cannot offer it); ``"auto"`` (default), shared memory when the
            server is on a loopback address or Unix socket and offers it, else the WebSocket.
            :attr:`transport_reason` says which was taken, and why.
        render_mode: have the vector env made in this render mode (see
            :class:`~openenv_gym.client.batch_client.BatchClient`).
        **settings: as for :class:`~openenv_gym.client.SessionClient`.
    """

    kind: VectorKind

    def __init__(
        self,
        base_url: str,
        envs: int,
        autoreset_mode: AutoresetMode,
        backend: str,
        codec: str = "json",
        *,
        transport: str = "auto",
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        super().__init__(
            VectorKind(envs, autoreset_mode, backend, query, codec_subprotocols(codec)), base_url, **settings
        )
        self.requested_transport = transport
        #: The shared-memory segment the steps go through, while connected with ``shm``.
        self.link: ShmLink | None = None
        #: Why the steps take the transport they take (after :meth:`connect`).
        self.transport_reason = "not connected yet"
        self._link_in_flight = False

    @property
    def transport(self) -> str:
        """``"shm"`` while the steps go through shared memory, else ``"ws"``."""
        return "shm" if self.link is not None else "ws"

    def connect(self) -> VectorClient:
        """Open the session and, unless ``transport="ws"``, move its steps to shared memory (see the class).

        Raises:
            ServerConnectError, RemoteError: as :meth:`SyncConnection.connect`.
            ConnectionLostError: ``transport="shm"`` and the server cannot offer it or be reached
                (the message says why); the connection is closed again.
        """
        with self._lock:
            fresh = self._ws is None
            super().connect()
            if fresh:
                self._take_transport()
        return self

    def _take_transport(self) -> None:
        if self.requested_transport == "ws":
            self.transport_reason = "transport='ws' asked for"
            return
        reason = self._shm_unreachable()
        if reason is None:
            try:
                offer = self._round_trip(lambda: self.begin("shm_open", self.kind.shm_open), ShmOffer)
                self.link = ShmLink.open(offer, self.envs, self.open_timeout)
                self.transport_reason = "shared memory: the server is on this host"
                return
            except RemoteError as exc:  # the server cannot: its message says why
                reason = exc.message
            except (OSError, ProtocolError) as exc:
                reason = f"the server's shared-memory socket cannot be reached from here: {exc}"
        if self.requested_transport == "shm":
            self.close()
            raise ConnectionLostError(self.url, "shm_open", None, f"transport='shm' cannot be served: {reason}")
        self.transport_reason = f"the WebSocket: {reason}"

    def _shm_unreachable(self) -> str | None:
        """Why the server cannot share memory with this process, as far as its address tells; None: it may."""
        if unix_socket_path(self.url) is not None:
            return None
        host = urllib.parse.urlsplit(self.url).hostname
        if not is_loopback_host(host):
            return f"the server is at {host}, not on a loopback address of this host"
        return None

    def _drop(self, why: str) -> None:
        link, self.link = self.link, None
        self._link_in_flight = False
        if link is not None:
            link.close()
        super()._drop(why)

    def _next_message(self) -> Any:
        """The reply to the call in flight: from shared memory for a step there (a frame, already
        read), else the WebSocket's next message. :meth:`complete` maps the failures, as for both."""
        if not self._link_in_flight:
            return super()._next_message()
        assert self.link is not None
        try:
            # The WebSocket is watched too: a connection cut under this client ends the step at once.
            reply = self.link.receive(self._deadline, self._sock, lambda: self._read(self._deadline))
        except ProtocolError as exc:  # a malformed segment: the channel is not to be trusted further
            raise ConnectionLostError(self.url, self._call, None, str(exc)) from exc
        self._link_in_flight = False
        return reply

    def _finish(self, reply: Any) -> Any:
        if isinstance(reply, (str, bytes)):
            return super()._finish(reply)
        if isinstance(reply, ErrorFrame):  # written by the server into the segment
            raise remote_error(reply, self.env_id)
        return reply

    def answered(self) -> bool:
        """Whether a reply to the request in flight has begun to arrive (or the connection is gone)."""
        if self._link_in_flight and self.link is not None:
            return self.link.answered()
        return super().answered()

    def waitable(self) -> Any:
        if self._link_in_flight and self.link is not None:
            return self.link.waitable()
        return super().waitable()

    @property
    def backend(self) -> str:
        """The server-side vector env."""
        return self.kind.backend

    def begin_vector_reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, mask: list[bool] | None = None
    ) -> None:
        """Send a ``vector_reset`` (connecting first if needed)."""
        self.connect()
        self.begin("vector_reset", self.kind.reset, VectorResetFrame(seed, options, mask))

    def begin_vector_step(self, actions: Any) -> None:
        """Send a ``vector_step`` with the batch of actions (through shared memory, if the session has it)."""
        if self.link is None:
            self.begin("vector_step", self.kind.step, VectorStepFrame(actions))
            return
        with self._lock:
            if self._in_flight:
                raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"vector_step while {self._call} is in flight")
            self._call, self._deadline = "vector_step", time.monotonic() + self.call_timeout
            try:
                self.link.send(actions)
            except ValueError as exc:  # does not fit the segment: refused as the server refuses it, unasked
                refusal = ErrorFrame(ErrorCode.VALIDATION_ERROR, f"invalid actions for {self.envs} sub-envs: {exc}")
                raise remote_error(refusal, self.env_id) from exc
            except OSError as exc:
                self._drop("the shared-memory channel failed earlier")
                raise ConnectionLostError(self.url, "vector_step", None, str(exc)) from exc
            self._link_in_flight = self._in_flight = True

    def reset_vector(self, *args: Any, **kwargs: Any) -> VectorResultFrame:
        """:meth:`begin_vector_reset` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_reset, VectorResultFrame, *args, **kwargs)

    def step_vector(self, actions: Any) -> VectorResultFrame:
        """:meth:`begin_vector_step` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_step, VectorResultFrame, actions)
