"""`BatchClient`: one batch session (``/ws/batch``), K sub-environments per frame; its kind, `BatchKind`.

The client holds a connection handed the kind and makes the kind's calls on it; the vector client
(:mod:`openenv_gym.client.vector_client`) shares :func:`batch_url`, :func:`codec_subprotocols` and
:func:`round_trip`, not a base class.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Protocol

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
from . import _holding as holding
from ._holding import round_trip
from .session_kind import Opening
from .sync_connection import SyncConnection

__all__ = ["BatchClient", "BatchKind", "BatchOpening", "BatchReply", "batch_url", "codec_subprotocols", "round_trip"]

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


class BatchOpening(Protocol):
    """A request a batch session sends as it opens, before any call, and the check of its answer,
    as ``from_env_fns``' ``batch_make`` (the sub-envs made from pickled factories, their spaces checked)."""

    #: The request's message type (answered with a ``batch_values`` frame).
    call: MessageType
    #: Whether the sub-envs are the caller's own (``from_env_fns``'), as AsyncVectorEnv's workers'
    #: are: their actions go as sent (a binary session packs its steps, keeping their dtypes), and
    #: the exception a sub-env raises comes back pickled and is raised as it was.
    callers_own_envs: bool

    def frame(self) -> Any:
        """The request (a protocol frame), made for each connection."""
        ...

    def check(self, reply: BatchValuesFrame) -> None:
        """Raise if the answer (one value per sub-env) is not what the session needs."""
        ...


class BatchKind:
    """The logic of a batch session: ``envs`` sub-envs, opened at ``/ws/batch?query``; its frames,
    and one entry per sub-env in each reply.

    Args:
        envs: how many sub-envs the session holds.
        autoreset_mode: the autoreset mode the server applies.
        query: the query string that opens the session (see :func:`~openenv_gym.protocol.batch.batch_query`).
        subprotocols: the codec offered (see :func:`codec_subprotocols`).
        opening: a request sent as the session opens (see :class:`BatchOpening`), or None.
    """

    def __init__(
        self,
        envs: int,
        autoreset_mode: AutoresetMode,
        query: str,
        subprotocols: list[Subprotocol] | None,
        opening: BatchOpening | None = None,
    ) -> None:
        self.envs = envs
        self.autoreset_mode = autoreset_mode
        self.query = query
        self.subprotocols = subprotocols
        self.opening_request = opening
        #: See :attr:`BatchOpening.callers_own_envs`.
        self.callers_own_envs = opening is not None and opening.callers_own_envs
        self._packs_steps = subprotocols is not None and self.callers_own_envs
        self._replies = _REPLIES if opening is None else {**_REPLIES, opening.call: BatchValuesFrame}
        self.session: ClientSession[BatchReply | ErrorFrame] = self._new_session()
        self.subprotocol: str | None = None

    def _new_session(self) -> ClientSession[BatchReply | ErrorFrame]:
        return ClientSession(parse_batch_server_frame, self._replies)

    def restart(self, subprotocol: str | None) -> None:
        self.session = self._new_session()
        self.subprotocol = subprotocol

    def url(self, address: str) -> str:
        return batch_url(address, self.query)

    def opening(self) -> Opening:
        opening = self.opening_request
        if opening is None:
            return None
        return opening.call.value, lambda: self.session.send(opening.call, opening.frame())

    def opened(self, reply: BatchReply) -> None:
        assert self.opening_request is not None and isinstance(reply, BatchValuesFrame)  # the only reply to it
        self.opening_request.check(reply)

    def check(self, reply: BatchReply) -> BatchReply:
        if isinstance(reply, (BatchResultFrame, RenderFrame)):
            reply.check(self.envs)
        elif isinstance(reply, BatchValuesFrame) and len(reply.values) != self.envs:
            raise ValueError(f"batch_values has {len(reply.values)} values for {self.envs} sub-envs")
        return reply

    def close(self) -> str:
        return self.session.send_close()

    def render(self) -> str:
        return self.session.send_render()

    def reset(self, frame: BatchResetFrame) -> str:
        return self.session.send(MessageType.BATCH_RESET, frame)

    def step(self, frame: BatchStepFrame) -> str | bytes:
        if self._packs_steps and self.subprotocol is not None:  # offered and agreed: the actions keep their dtypes
            return self.session.send_binary(MessageType.BATCH_STEP, frame)
        return self.session.send(MessageType.BATCH_STEP, frame)

    def call(self, frame: BatchCallFrame) -> str:
        return self.session.send(MessageType.BATCH_CALL, frame)

    def snapshot(self, frame: BatchSnapshotRequest) -> str:
        return self.session.send(MessageType.SNAPSHOT, frame)

    def restore(self, frame: BatchRestoreRequest) -> str:
        return self.session.send(MessageType.RESTORE, frame)

    def release(self, frame: ReleaseRequest) -> str:
        return self.session.send(MessageType.RELEASE, frame)


class BatchClient:
    """Reset, step or query ``envs`` sub-environments on one server with one frame each.

    Each call is split in two, :meth:`begin_batch_step` (and its siblings) then :meth:`complete`, so a
    vector env can send to all its servers before it reads any reply; ``reset_batch``,
    ``step_batch`` and ``call_batch`` do both at once. :meth:`complete` checks that a reply
    holds one entry per sub-env. It holds a :class:`~openenv_gym.client.sync_connection.SyncConnection`
    (:attr:`connection`) handed a :class:`BatchKind` (:attr:`kind`); ``begin``, ``complete`` and
    ``close`` are the connection's.

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
        **settings: as for :class:`~openenv_gym.client.SessionTerms`.
    """

    url, address, token, open_timeout, call_timeout, env_id = holding.SESSION_TERMS
    envs, autoreset_mode = holding.BATCH_SHAPE
    connect, __enter__, __exit__, __repr__ = holding.connect, holding.enter, holding.leave, holding.describe
    begin_render, render = holding.begin_render, holding.render
    _round_trip = holding.round_trip_on

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
        self._hold(BatchKind(envs, autoreset_mode, query, codec_subprotocols(codec)), base_url, settings)

    @classmethod
    def of(cls, kind: BatchKind, base_url: str, **settings: Any) -> BatchClient:
        """A batch client handed a kind of the caller's (one with an opening: see :class:`BatchOpening`)."""
        client = cls.__new__(cls)
        client._hold(kind, base_url, settings)
        return client

    def _hold(self, kind: BatchKind, base_url: str, settings: dict[str, Any]) -> None:
        self.kind = kind
        self.connection: SyncConnection[BatchReply] = SyncConnection(kind, base_url, **settings)
        self.begin, self.complete, self.close = holding.calls(self.connection)

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
