"""`AsyncBatchClient`: one batch session (``/ws/batch``), K sub-environments per frame."""

from __future__ import annotations

import urllib.parse
from typing import Any

from .batch_protocol import (
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
from .client import AsyncEnvClient
from .protocol import ClientSession, MessageType

__all__ = ["AsyncBatchClient"]


class AsyncBatchClient(AsyncEnvClient):
    """Reset and step ``envs`` sub-environments on one server with one frame each.

    Args:
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        envs: how many sub-environments the session holds.
        autoreset_mode: Gymnasium's autoreset mode, applied on the server.
        codec: ``"json"``, or ``"binary"`` to offer :data:`~openenv_gym.batch_protocol.BINARY_SUBPROTOCOL`
            (the server answers Box observations as raw bytes; others stay JSON).
        **kwargs: as for :class:`~openenv_gym.client.AsyncEnvClient`.
    """

    def __init__(
        self, base_url: str, envs: int, autoreset_mode: AutoresetMode, codec: str = "json", **kwargs: Any
    ) -> None:
        if codec not in ("json", "binary"):
            raise ValueError(f"codec must be 'json' or 'binary', got {codec!r}")
        super().__init__(base_url, **kwargs)
        self.subprotocols = [BINARY_SUBPROTOCOL] if codec == "binary" else None
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        parts = urllib.parse.urlsplit(self.url)
        path = parts.path[: -len("/ws")] + BATCH_PATH
        self.url = urllib.parse.urlunsplit(parts._replace(path=path, query=batch_query(envs, autoreset_mode)))

    def _new_protocol(self) -> ClientSession:
        replies: dict[MessageType, type] = {
            MessageType.BATCH_RESET: BatchResultFrame,
            MessageType.BATCH_STEP: BatchResultFrame,
            MessageType.BATCH_CALL: BatchValuesFrame,
        }
        return ClientSession(parse_batch_server_frame, replies)

    async def reset_batch(
        self,
        seeds: list[int | None] | None = None,
        options: dict[str, Any] | None = None,
        mask: list[bool] | None = None,
    ) -> BatchResultFrame:
        """Reset the sub-envs ``mask`` selects (all if ``None``); connects first if needed."""
        await self.connect()
        frame = BatchResetFrame(seeds, options, mask)
        result: BatchResultFrame = await self._request(
            "batch_reset", lambda: self._session.send(MessageType.BATCH_RESET, frame)
        )
        result.check(self.envs)
        return result

    async def step_batch(self, actions: list[dict[str, Any]]) -> BatchResultFrame:
        """Step every sub-env with its action's wire object."""
        frame = BatchStepFrame(actions)
        result: BatchResultFrame = await self._request(
            "batch_step", lambda: self._session.send(MessageType.BATCH_STEP, frame)
        )
        result.check(self.envs)
        return result

    async def call_batch(self, frame: BatchCallFrame) -> list[Any]:
        """Get, set or call an attribute of every sub-env; one value per sub-env."""
        result: BatchValuesFrame = await self._request(
            "batch_call", lambda: self._session.send(MessageType.BATCH_CALL, frame)
        )
        if len(result.values) != self.envs:
            raise ValueError(f"batch_values has {len(result.values)} values for {self.envs} sub-envs")
        return result.values
