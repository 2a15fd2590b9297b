"""`VectorClient`: one vector session (``/ws/batch?backend=...``), a server-side vector env."""

from __future__ import annotations

from typing import Any

from ..protocol import ClientSession, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import AutoresetMode
from ..protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame, parse_vector_server_frame
from .batch_client import BatchClient

__all__ = ["VectorClient"]


class VectorClient(BatchClient):
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
        **kwargs: as for :class:`~openenv_gym.client.sync_client.EnvClient`.
    """

    def __init__(
        self,
        base_url: str,
        envs: int,
        autoreset_mode: AutoresetMode,
        backend: str,
        codec: str = "json",
        *,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_url, envs, autoreset_mode, codec, backend=backend, render_mode=render_mode, **kwargs)
        self.backend = backend
        self._binary = codec == "binary"

    def _new_protocol(self) -> ClientSession[VectorResultFrame | RenderFrame | ErrorFrame]:  # type: ignore[override]
        return ClientSession(
            parse_vector_server_frame,
            {
                MessageType.VECTOR_RESET: VectorResultFrame,
                MessageType.VECTOR_STEP: VectorResultFrame,
                MessageType.RENDER: RenderFrame,
            },
        )

    def begin_vector_reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, mask: list[bool] | None = None
    ) -> None:
        """Send a ``vector_reset`` (connecting first if needed)."""
        self.connect()
        frame = VectorResetFrame(seed, options, mask)
        self.begin("vector_reset", lambda: self._session.send(MessageType.VECTOR_RESET, frame))

    def begin_vector_step(self, actions: Any) -> None:
        """Send a ``vector_step`` with the batch of actions."""
        frame = VectorStepFrame(actions)
        if self._binary and self._ws is not None and self._ws.subprotocol is not None:
            self.begin("vector_step", lambda: self._session.send_binary(MessageType.VECTOR_STEP, frame))
        else:
            self.begin("vector_step", lambda: self._session.send(MessageType.VECTOR_STEP, frame))

    def complete(self, timeout: float | None = None) -> VectorResultFrame | RenderFrame:  # type: ignore[override]
        """The reply to the request in flight, checked to hold one entry per sub-env."""
        result: VectorResultFrame | RenderFrame = super(BatchClient, self).complete(timeout)
        result.check(self.envs)
        return result

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
