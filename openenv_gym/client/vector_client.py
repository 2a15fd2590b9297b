"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env; its kind, `VectorKind`."""

from __future__ import annotations

from typing import Any

from ..protocol import ClientSession, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode, batch_query
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from .batch_client import batch_url, codec_subprotocols
from .session_kind import SessionKind
from .sync_connection import SyncConnection

__all__ = ["VectorClient", "VectorKind", "VectorReply"]

#: What a vector session answers, besides an error frame.
VectorReply = VectorResultFrame | RenderFrame

_REPLIES: dict[MessageType, type] = {
    MessageType.VECTOR_RESET: VectorResultFrame,
    MessageType.VECTOR_STEP: VectorResultFrame,
    MessageType.RENDER: RenderFrame,
}


class VectorKind(SessionKind[VectorReply]):
    """The logic of a vector session: its query, its frames (actions packed once the binary codec
    is agreed), and one entry per sub-env in each reply. Args as for :class:`VectorClient`."""

    def __init__(
        self,
        envs: int,
        autoreset_mode: AutoresetMode,
        backend: str,
        codec: str = "json",
        *,
        render_mode: str | None = None,
    ) -> None:
        self.subprotocols = codec_subprotocols(codec)
        super().__init__()
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        self.backend = backend
        self.query = batch_query(envs, autoreset_mode, backend, render_mode)

    def new_session(self) -> ClientSession[VectorReply | ErrorFrame]:
        return ClientSession(parse_vector_server_frame, _REPLIES)

    def url(self, address: str) -> str:
        return batch_url(address, self.query)

    def check(self, reply: VectorReply) -> VectorReply:
        reply.check(self.envs)
        return reply

    def reset(self, frame: VectorResetFrame) -> str:
        return self.session.send(MessageType.VECTOR_RESET, frame)

    def step(self, frame: VectorStepFrame) -> str | bytes:
        if self.subprotocol is not None:  # the binary codec was offered and agreed: actions travel packed
            return self.session.send_binary(MessageType.VECTOR_STEP, frame)
        return self.session.send(MessageType.VECTOR_STEP, frame)

    def render(self) -> str:
        return self.session.send_render()


class VectorClient(SyncConnection[VectorReply]):
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
        super().__init__(
            VectorKind(envs, autoreset_mode, backend, codec, render_mode=render_mode), base_url, **settings
        )

    @property
    def envs(self) -> int:
        """How many sub-envs the vector env holds."""
        return self.kind.envs

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """The vector env's autoreset mode."""
        return self.kind.autoreset_mode

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

    def begin_render(self) -> None:
        """Send a render request; :meth:`complete` reads the vector env's frames."""
        self.begin("render", self.kind.render)

    def reset_vector(self, *args: Any, **kwargs: Any) -> VectorResultFrame:
        """:meth:`begin_vector_reset` and :meth:`complete` in one call."""
        with self._lock:
            self.begin_vector_reset(*args, **kwargs)
            result = self.complete()
        assert isinstance(result, VectorResultFrame)  # the session took no other reply to a vector_reset
        return result

    def step_vector(self, actions: Any) -> VectorResultFrame:
        """:meth:`begin_vector_step` and :meth:`complete` in one call."""
        with self._lock:
            self.begin_vector_step(actions)
            result = self.complete()
        assert isinstance(result, VectorResultFrame)  # the session took no other reply to a vector_step
        return result
