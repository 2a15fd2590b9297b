"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env; its kind, `VectorKind`."""

from __future__ import annotations

from typing import Any

from websockets.typing import Subprotocol

from ..protocol import ClientSession, ErrorCode, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode, batch_query
from ..protocol.shm import ShmOffer, ShmOpenFrame
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from ._session import remote_error
from .batch_client import BlockClient, BlockKind, codec_subprotocols
from .shm_connection import TRANSPORTS, ShmConnection

__all__ = ["TRANSPORTS", "VectorClient", "VectorKind", "VectorReply"]

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


class VectorClient(BlockClient[VectorReply], ShmConnection[VectorReply]):
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
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        super().__init__(
            VectorKind(envs, autoreset_mode, backend, query, codec_subprotocols(codec)),
            base_url,
            transport=transport,
            **settings,
        )

    def _shm_open(self) -> str:
        return self.kind.shm_open()

    @property
    def _shm_envs(self) -> int:
        return self.envs

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
        try:
            self._begin_link_step("vector_step", lambda link: link.send(actions))
        except ValueError as exc:  # does not fit the segment: refused as the server refuses it, unasked
            refusal = ErrorFrame(ErrorCode.VALIDATION_ERROR, f"invalid actions for {self.envs} sub-envs: {exc}")
            raise remote_error(refusal, self.env_id) from exc

    def reset_vector(self, *args: Any, **kwargs: Any) -> VectorResultFrame:
        """:meth:`begin_vector_reset` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_reset, VectorResultFrame, *args, **kwargs)

    def step_vector(self, actions: Any) -> VectorResultFrame:
        """:meth:`begin_vector_step` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_step, VectorResultFrame, actions)
