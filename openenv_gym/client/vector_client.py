"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env; its kind, `VectorKind`."""

from __future__ import annotations

from typing import Any

from websockets.typing import Subprotocol

from ..errors import ProtocolError
from ..protocol import ClientSession, ErrorCode, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode, BatchCallFrame, BatchValuesFrame, batch_query
from ..protocol.shm import ShmOffer, ShmOpenFrame
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from . import _holding as holding
from ._session import Delegated, remote_error
from .batch_client import batch_url, codec_subprotocols
from .session_kind import Opening
from .step_transport import TRANSPORTS, StepTransport
from .sync_connection import SyncConnection

__all__ = ["TRANSPORTS", "VectorClient", "VectorKind", "VectorReply"]

#: What a vector session answers, besides an error frame.
VectorReply = VectorResultFrame | BatchValuesFrame | RenderFrame | ShmOffer

_REPLIES: dict[MessageType, type] = {
    MessageType.VECTOR_RESET: VectorResultFrame,
    MessageType.VECTOR_STEP: VectorResultFrame,
    MessageType.RENDER: RenderFrame,
    MessageType.SHM_OPEN: ShmOffer,
    MessageType.BATCH_CALL: BatchValuesFrame,
}


class VectorKind:
    """The logic of a vector session: ``envs`` sub-envs as one server-side vector env, opened at
    ``/ws/batch?query``; its frames (actions packed once the binary codec is agreed), and one
    entry per sub-env in each reply."""

    def __init__(
        self,
        envs: int,
        autoreset_mode: AutoresetMode,
        backend: str,
        query: str,
        subprotocols: list[Subprotocol] | None,
    ) -> None:
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        self.backend = backend
        self.query = query
        self.subprotocols = subprotocols
        self.session: ClientSession[VectorReply | ErrorFrame] = ClientSession(parse_vector_server_frame, _REPLIES)
        self.subprotocol: str | None = None

    def restart(self, subprotocol: str | None) -> None:
        self.session = ClientSession(parse_vector_server_frame, _REPLIES)
        self.subprotocol = subprotocol

    def url(self, address: str) -> str:
        return batch_url(address, self.query)

    def opening(self) -> Opening:
        return None

    def opened(self, reply: VectorReply) -> None:
        pass  # no opening request

    def check(self, reply: VectorReply) -> VectorReply:
        if isinstance(reply, BatchValuesFrame):
            if len(reply.values) != self.envs:
                raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"batch_values must hold {self.envs} values")
        elif not isinstance(reply, ShmOffer):
            reply.check(self.envs)
        return reply

    def close(self) -> str:
        return self.session.send_close()

    def render(self) -> str:
        return self.session.send_render()

    def shm_open(self) -> str:
        return self.session.send(MessageType.SHM_OPEN, ShmOpenFrame())

    def reset(self, frame: VectorResetFrame) -> str:
        return self.session.send(MessageType.VECTOR_RESET, frame)

    def call(self, frame: BatchCallFrame) -> str:
        return self.session.send(MessageType.BATCH_CALL, frame)

    def step(self, frame: VectorStepFrame) -> str | bytes:
        if self.subprotocol is not None:  # the binary codec was offered and agreed: actions travel packed
            return self.session.send_binary(MessageType.VECTOR_STEP, frame)
        return self.session.send(MessageType.VECTOR_STEP, frame)


class VectorClient:
    """Reset or step one server-side vector env of ``envs`` sub-envs, one frame per call.

    Results stay arrays: observations, rewards and flags as the vector env returned them, infos
    as Gymnasium's vector infos. With ``codec="binary"`` the actions travel packed too. It holds a
    :class:`~openenv_gym.client.sync_connection.SyncConnection` (:attr:`connection`) handed a
    :class:`VectorKind` (:attr:`kind`) and a step transport; ``begin``, ``complete`` and ``close``
    are the connection's.

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
        **settings: as for :class:`~openenv_gym.client.SessionTerms`.
    """

    url, address, token, open_timeout, call_timeout, env_id = holding.SESSION_TERMS
    envs, autoreset_mode = holding.BATCH_SHAPE
    #: The server-side vector env.
    backend: Delegated[str] = Delegated("kind.backend")
    link, transport, transport_reason = holding.STEP_TRANSPORT
    connect, __enter__, __exit__, __repr__ = holding.connect, holding.enter, holding.leave, holding.describe
    begin_render, render = holding.begin_render, holding.render
    _round_trip = holding.round_trip_on

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
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        self.kind = kind = VectorKind(envs, autoreset_mode, backend, query, codec_subprotocols(codec))
        steps = StepTransport(transport, envs=envs, offer_request=kind.shm_open)
        self.connection: SyncConnection[VectorReply] = SyncConnection(kind, base_url, steps=steps, **settings)
        self.begin, self.complete, self.close = holding.calls(self.connection)

    def begin_vector_reset(
        self,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
        mask: list[bool] | None = None,
    ) -> None:
        """Send a ``vector_reset`` (connecting first if needed)."""
        self.connect()
        self.begin("vector_reset", self.kind.reset, VectorResetFrame(seed, options, mask))

    def begin_vector_step(self, actions: Any) -> None:
        """Send a ``vector_step`` with the batch of actions (through shared memory, if the session has it)."""
        connection = self.connection
        if connection.link is None:
            connection.begin("vector_step", self.kind.step, VectorStepFrame(actions))
            return
        try:
            connection.begin_shared_step("vector_step", lambda link: link.send(actions))
        except ValueError as exc:  # does not fit the segment: refused as the server refuses it, unasked
            refusal = ErrorFrame(ErrorCode.VALIDATION_ERROR, f"invalid actions for {self.envs} sub-envs: {exc}")
            raise remote_error(refusal, connection.terms.env_id) from exc

    def begin_call(self, frame: BatchCallFrame) -> None:
        """Send a ``batch_call``: the vector env's own ``get_attr``, ``set_attr`` or ``call``."""
        self.connect()
        self.begin("batch_call", self.kind.call, frame)

    def reset_vector(self, *args: Any, **kwargs: Any) -> VectorResultFrame:
        """:meth:`begin_vector_reset` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_reset, VectorResultFrame, *args, **kwargs)

    def step_vector(self, actions: Any) -> VectorResultFrame:
        """:meth:`begin_vector_step` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_step, VectorResultFrame, actions)
