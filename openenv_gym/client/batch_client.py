"""`BatchClient`: one batch session (``/ws/batch``), K sub-environments per frame; its kind, `BatchKind`."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from websockets.typing import Subprotocol

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
    Mask,
    Seeds,
    batch_query,
    parse_batch_server_frame,
)
from ..protocol.snapshot import (
    BatchRestoreRequest,
    BatchSnapshotFrame,
    BatchSnapshotRequest,
    ReleaseRequest,
    SnapshotFrame,
)
from .session_kind import SessionKind
from .sync_connection import SyncConnection

__all__ = ["BatchClient", "BatchKind", "BatchReply", "BlockClient", "BlockKind", "batch_url", "codec_subprotocols"]

ReplyT = TypeVar("ReplyT")
FrameT = TypeVar("FrameT")

#: What a batch session answers, besides an error frame.
BatchReply = BatchResultFrame | BatchValuesFrame | RenderFrame | BatchSnapshotFrame | SnapshotFrame

_REPLIES: dict[MessageType, type] = {
    MessageType.BATCH_RESET: BatchResultFrame,
    MessageType.BATCH_STEP: BatchResultFrame,
    MessageType.BATCH_CALL: BatchValuesFrame,
    MessageType.RENDER: RenderFrame,
    MessageType.SNAPSHOT: BatchSnapshotFrame,
    MessageType.RESTORE: BatchResultFrame,
    MessageType.RELEASE: SnapshotFrame,
}


def batch_url(address: str, query: str) -> str:
    """The ``/ws/batch?query`` URL of the server whose ``/ws`` URL is ``address``."""
    parts = urllib.parse.urlsplit(address)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path[: -len("/ws")] + BATCH_PATH, query=query))


def codec_subprotocols(codec: str) -> list[Subprotocol] | None:
    """The subprotocols a batch or vector session offers for ``codec`` (``"json"`` or ``"binary"``).

    Raises:
        ValueError: another codec.
    """
    if codec not in ("json", "binary"):
        raise ValueError(f"codec must be 'json' or 'binary', got {codec!r}")
    return [Subprotocol(BINARY_SUBPROTOCOL)] if codec == "binary" else None


class BlockKind(SessionKind[ReplyT]):
    """What batch and vector sessions share: ``envs`` sub-envs, opened at ``/ws/batch?query``.

    Args:
        envs: how many sub-envs the session holds.
        autoreset_mode: the autoreset mode the server applies.
        query: the query string that opens the session (see :func:`~openenv_gym.protocol.batch.batch_query`).
        subprotocols: the codec offered (see :func:`codec_subprotocols`).
    """

    def __init__(
        self, envs: int, autoreset_mode: AutoresetMode, query: str, subprotocols: list[Subprotocol] | None
    ) -> None:
        self.subprotocols = subprotocols
        super().__init__()
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        self.query = query

    def url(self, address: str) -> str:
        return batch_url(address, self.query)

    def render(self) -> str:
        return self.session.send_render()


class BatchKind(BlockKind[BatchReply]):
    """The logic of a batch session: its frames, and one entry per sub-env in each reply."""

    def new_session(self) -> ClientSession[BatchReply | ErrorFrame]:
        return ClientSession(parse_batch_server_frame, _REPLIES)

    def check(self, reply: BatchReply) -> BatchReply:
        if isinstance(reply, (BatchResultFrame, RenderFrame)):
            reply.check(self.envs)
        elif isinstance(reply, BatchValuesFrame) and len(reply.values) != self.envs:
            raise ValueError(f"batch_values has {len(reply.values)} values for {self.envs} sub-envs")
        return reply

    def reset(self, frame: BatchResetFrame) -> str:
        return self.session.send(MessageType.BATCH_RESET, frame)

    def step(self, frame: BatchStepFrame) -> str:
        return self.session.send(MessageType.BATCH_STEP, frame)

    def call(self, frame: BatchCallFrame) -> str:
        return self.session.send(MessageType.BATCH_CALL, frame)

    def snapshot(self, frame: BatchSnapshotRequest) -> str:
        return self.session.send(MessageType.SNAPSHOT, frame)

    def restore(self, frame: BatchRestoreRequest) -> str:
        return self.session.send(MessageType.RESTORE, frame)

    def release(self, frame: ReleaseRequest) -> str:
        return self.session.send(MessageType.RELEASE, frame)


class BlockClient(SyncConnection[ReplyT]):
    """What the batch and vector clients share: a connection handed a :class:`BlockKind`."""

    kind: BlockKind[ReplyT]

    @property
    def envs(self) -> int:
        """How many sub-environments the session holds."""
        return self.kind.envs

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """The autoreset mode the server applies."""
        return self.kind.autoreset_mode

    def begin_render(self) -> None:
        """Send a render request; :meth:`complete` reads every sub-env's frame."""
        self.begin("render", self.kind.render)

    def render(self) -> Any:
        """Every sub-env's frame (or the vector env's), as :meth:`begin_render` and :meth:`complete` read it."""
        return self._round_trip(self.begin_render, RenderFrame).frame

    def _round_trip(self, begin: Callable[..., None], reply: type[FrameT], *args: Any, **kwargs: Any) -> FrameT:
        """``begin(*args, **kwargs)`` and :meth:`complete` in one call, its reply of type ``reply``."""
        with self._lock:
            begin(*args, **kwargs)
            result = self.complete()
        assert isinstance(result, reply)  # the session takes no other reply to that request
        return result


class BatchClient(BlockClient[BatchReply]):
    """Reset, step or query ``envs`` sub-environments on one server with one frame each.

    Each call is split in two, :meth:`begin_batch_step` (and its siblings) then :meth:`complete`, so a
    vector env can send to all its servers before it reads any reply; ``reset_batch``,
    ``step_batch`` and ``call_batch`` do both at once. :meth:`complete` checks that a reply
    holds one entry per sub-env.

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
        **settings: as for :class:`~openenv_gym.client.SessionClient`.
    """

    kind: BatchKind

    def __init__(
        self,
        base_url: str,
        envs: int,
        autoreset_mode: AutoresetMode,
        codec: str = "json",
        *,
        backend: str | None = None,
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        query = batch_query(envs, autoreset_mode, backend, render_mode)
        super().__init__(BatchKind(envs, autoreset_mode, query, codec_subprotocols(codec)), base_url, **settings)

    def begin_batch_reset(
        self, seeds: Seeds | None = None, options: dict[str, Any] | None = None, mask: Mask | None = None
    ) -> None:
        """Send a ``batch_reset`` for the sub-envs ``mask`` selects (all if ``None``); connects if needed."""
        self.connect()
        self.begin("batch_reset", self.kind.reset, BatchResetFrame(seeds, options, mask))

    def begin_batch_step(self, actions: list[dict[str, Any]]) -> None:
        """Send a ``batch_step`` with every sub-env's action wire object."""
        self.begin("batch_step", self.kind.step, BatchStepFrame(actions))

    def begin_batch_call(self, frame: BatchCallFrame) -> None:
        """Send a ``batch_call`` (get, set or call an attribute of every sub-env)."""
        self.begin("batch_call", self.kind.call, frame)

    def begin_snapshot(self, envs: tuple[int, ...], portable: bool = False) -> None:
        """Send a ``snapshot`` of sub-envs ``envs`` (indices in this session); the reply is a
        :class:`~openenv_gym.protocol.snapshot.BatchSnapshotFrame`, one snapshot per sub-env."""
        self.begin("snapshot", self.kind.snapshot, BatchSnapshotRequest(envs, portable))

    def begin_restore(
        self, envs: tuple[int, ...], ids: tuple[str, ...] | None = None, portables: tuple[bytes, ...] | None = None
    ) -> None:
        """Send a ``restore`` of sub-envs ``envs`` from kept ``ids`` or sealed ``portables`` (one
        each); the reply is a batch result, as a masked reset's; connects if needed."""
        self.connect()
        self.begin("restore", self.kind.restore, BatchRestoreRequest(envs, ids, portables))

    def release(self, ids: tuple[str, ...]) -> SnapshotFrame:
        """Have the server drop the kept ``ids`` (those this session took; others are left)."""
        return self._round_trip(lambda: self.begin("release", self.kind.release, ReleaseRequest(ids)), SnapshotFrame)

    def reset_batch(self, *args: Any, **kwargs: Any) -> BatchResultFrame:
        """:meth:`begin_batch_reset` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_batch_reset, BatchResultFrame, *args, **kwargs)

    def step_batch(self, actions: list[dict[str, Any]]) -> BatchResultFrame:
        """:meth:`begin_batch_step` and :meth:`complete` in one call."""
        return self._round_trip(self.begin_batch_step, BatchResultFrame, actions)

    def call_batch(self, frame: BatchCallFrame) -> list[Any]:
        """:meth:`begin_batch_call` and :meth:`complete` in one call; one value per sub-env."""
        return self._round_trip(self.begin_batch_call, BatchValuesFrame, frame).values
