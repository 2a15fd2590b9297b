"""`BatchClient`: one batch session (``/ws/batch``), K sub-environments per frame."""

from __future__ import annotations

import urllib.parse
from typing import Any

from ..protocol import ClientSession, ErrorFrame, MessageType, RenderFrame
from ..protocol.batch import (
    BATCH_PATH,
    BINARY_SUBPROTOCOL,
    AutoresetMode,
    BatchCallFrame,
    BatchResetFrame,
    BatchResultFrame,
    BatchStepFrame,
    BatchValuesFrame,
    batch_query,
    parse_batch_server_frame,
)
from .sync_client import EnvClient

__all__ = ["BatchClient"]

_REPLIES: dict[MessageType, type] = {
    MessageType.BATCH_RESET: BatchResultFrame,
    MessageType.BATCH_STEP: BatchResultFrame,
    MessageType.BATCH_CALL: BatchValuesFrame,
    MessageType.RENDER: RenderFrame,
}


class BatchClient(EnvClient):
    """Reset, step or query ``envs`` sub-environments on one server with one frame each.

    Each call is split in two, :meth:`begin_batch_step` (and its siblings) then :meth:`complete`, so a
    vector env can send to all its servers before it reads any reply; ``reset_batch``,
    ``step_batch`` and ``call_batch`` do both at once.

    Args:
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        envs: how many sub-environments the session holds.
        autoreset_mode: Gymnasium's autoreset mode, applied on the server.
        codec: ``"json"``, or ``"binary"`` to offer :data:`~openenv_gym.protocol.batch.BINARY_SUBPROTOCOL`
            (the server answers Box observations as raw bytes; others stay JSON).
        backend: a server-side vector env to serve the sub-envs (see
            :class:`~openenv_gym.client.vector_client.VectorClient`, which speaks to it).
        render_mode: have the sub-envs made in this render mode; :meth:`begin_render` then asks
            for their frames (raw bytes with ``codec="binary"``, inline JSON otherwise).
        **kwargs: as for :class:`~openenv_gym.client.sync_client.EnvClient`.
    """

    def __init__(
        self,
        base_url: str,
        envs: int,
        autoreset_mode: AutoresetMode,
        codec: str = "json",
        *,
        backend: str | None = None,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        if codec not in ("json", "binary"):
            raise ValueError(f"codec must be 'json' or 'binary', got {codec!r}")
        super().__init__(base_url, **kwargs)
        self.subprotocols = [BINARY_SUBPROTOCOL] if codec == "binary" else None
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        parts = urllib.parse.urlsplit(self.url)
        path = parts.path[: -len("/ws")] + BATCH_PATH
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        self.url = urllib.parse.urlunsplit(parts._replace(path=path, query=query))

    def _new_protocol(self) -> ClientSession[BatchResultFrame | BatchValuesFrame | RenderFrame | ErrorFrame]:
        return ClientSession(parse_batch_server_frame, _REPLIES)

    def begin_batch_reset(
        self,
        seeds: list[int | None] | None = None,
        options: dict[str, Any] | None = None,
        mask: list[bool] | None = None,
    ) -> None:
        """Send a ``batch_reset`` for the sub-envs ``mask`` selects (all if ``None``); connects if needed."""
        self.connect()
        frame = BatchResetFrame(seeds, options, mask)
        self.begin("batch_reset", lambda: self._session.send(MessageType.BATCH_RESET, frame))

    def begin_batch_step(self, actions: list[dict[str, Any]]) -> None:
        """Send a ``batch_step`` with every sub-env's action wire object."""
        frame = BatchStepFrame(actions)
        self.begin("batch_step", lambda: self._session.send(MessageType.BATCH_STEP, frame))

    def begin_batch_call(self, frame: BatchCallFrame) -> None:
        """Send a ``batch_call`` (get, set or call an attribute of every sub-env)."""
        self.begin("batch_call", lambda: self._session.send(MessageType.BATCH_CALL, frame))

    def complete(self, timeout: float | None = None) -> BatchResultFrame | BatchValuesFrame | RenderFrame:
        """The reply to the request in flight, checked to hold one entry per sub-env."""
        result: BatchResultFrame | BatchValuesFrame | RenderFrame = super().complete(timeout)
        if isinstance(result, (BatchResultFrame, RenderFrame)):
            result.check(self.envs)
        elif len(result.values) != self.envs:
            raise ValueError(f"batch_values has {len(result.values)} values for {self.envs} sub-envs")
        return result

    def reset_batch(self, *args: Any, **kwargs: Any) -> BatchResultFrame:
        """:meth:`begin_batch_reset` and :meth:`complete` in one call."""
        with self._lock:
            self.begin_batch_reset(*args, **kwargs)
            result = self.complete()
        assert isinstance(result, BatchResultFrame)  # the session took no other reply to a batch_reset
        return result

    def step_batch(self, actions: list[dict[str, Any]]) -> BatchResultFrame:
        """:meth:`begin_batch_step` and :meth:`complete` in one call."""
        with self._lock:
            self.begin_batch_step(actions)
            result = self.complete()
        assert isinstance(result, BatchResultFrame)  # the session took no other reply to a batch_step
        return result

    def call_batch(self, frame: BatchCallFrame) -> list[Any]:
        """:meth:`begin_batch_call` and :meth:`complete` in one call; one value per sub-env."""
        with self._lock:
            self.begin_batch_call(frame)
            result = self.complete()
        assert isinstance(result, BatchValuesFrame)  # the session took no other reply to a batch_call
        return result.values
