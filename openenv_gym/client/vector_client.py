"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env; its kind, `VectorKind`."""

from __future__ import annotations

from typing import Any

from websockets.typing import Subprotocol

from ..protocol import ClientSession, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode, batch_query
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from .batch_client import BlockClient, BlockKind, codec_subprotocols

__all__ = ["VectorClient", "VectorKind", "VectorReply"]

#: What a vector session answers, besides an error frame.
VectorReply = VectorResultFrame | RenderFrame

_REPLIES: dict[MessageType, type] = {
    MessageType.VECTOR_RESET: VectorResultFrame,
    MessageType.VECTOR_STEP: VectorResultFrame,
    MessageType.RENDER: RenderFrame,
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
        reply.check(self.envs)
        return reply

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
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        super().__init__(
            VectorKind(envs, autoreset_mode, backend, query, codec_subprotocols(codec)), base_url, **settings
        )

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
        """Send a ``vector_step`` with the batch of actions."""
        self.begin("vector_step", self.kind.step, VectorStepFrame(actions))

    def reset_vector(self, *args: Any, **kwargs: Any) -> VectorResultFrame:
        """:meth:`begin_vector_reset` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_reset, VectorResultFrame, *args, **kwargs)

    def step_vector(self, actions: Any) -> VectorResultFrame:
        """:meth:`begin_vector_step` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_vector_step, VectorResultFrame, actions)
