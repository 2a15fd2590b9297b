"""`SnapshotStore`: the env states a server keeps for its sessions, bounded per session and freed with it.

A plain session's ``snapshot`` frame asks its env for its state (``Environment.snapshot()``,
bytes) and keeps it here under a fresh, unguessable id, with the observation frame to answer a
``restore`` with and whether the episode had ended. Any session of the server may restore an
id (a fork is new sessions restoring their parent's); only its owner releases it, and all of a
session's go when it closes. Each session may hold at most ``max_count`` snapshots and
``max_bytes`` of them, and the whole server ``max_total_bytes``: a snapshot counts what keeping
it holds (:attr:`Kept.held_bytes`), the observation frame kept with it as well as its state,
since an env's observation (an image's JSON, say) may take far more than its state.

Portable snapshots are the same three things sealed with the server's key
(:func:`openenv_gym.protocol.snapshot.seal`), with the name of the env they are of.
"""

from __future__ import annotations

import dataclasses
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ProtocolError
from ..protocol import ErrorCode
from ..protocol.snapshot import seal, unseal

__all__ = ["KEPT_OVERHEAD", "Kept", "SessionSnapshots", "SnapshotStore"]

#: What keeping a snapshot costs beyond its state and frame: the record, its id, and the entries
#: the store and its session keep for it (about 300 bytes with CPython 3.11, rounded up).
KEPT_OVERHEAD = 512


@dataclasses.dataclass(frozen=True)
class Kept:
    """One kept state: the env's bytes, the observation frame (text) to restore with, whether the
    episode had ended, and the render mode its env was made in (a restore into another is refused)."""

    state: bytes
    frame: str
    ended: bool
    render_mode: str | None = None

    @property
    def held_bytes(self) -> int:
        """The memory keeping it holds: the state's, the frame's and the record's (see the module)."""
        return sys.getsizeof(self.state) + sys.getsizeof(self.frame) + KEPT_OVERHEAD


class SnapshotStore:
    """Every snapshot one server keeps, by id.

    Args:
        key: the key portable snapshots are sealed with.
        env: the name of the env served: a portable snapshot of another env is refused.
        max_count, max_bytes: what one session may hold at once.
        max_frame_bytes: the largest frame the server takes: a portable snapshot must fit in a restore.
        support: what the server publishes as ``/schema["snapshot"]`` (awaited: the server
            probes its env once, when first described).
        max_total_bytes: what every session together may hold at once.
    """

    def __init__(
        self,
        key: bytes,
        env: str,
        max_count: int,
        max_bytes: int,
        support: Callable[[], Awaitable[dict[str, Any]]],
        max_frame_bytes: int = 2**63,
        max_total_bytes: int = 2**63,
    ) -> None:
        self.key = key
        self.env = env
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.max_frame_bytes = max_frame_bytes
        self.max_total_bytes = max_total_bytes
        #: Bytes every session's snapshots hold now (:attr:`Kept.held_bytes`, summed).
        self.held_bytes = 0
        self._support = support
        self._supported: dict[str, Any] | None = None  # what support() said: it never changes
        self._kept: dict[str, Kept] = {}

    async def check_supported(self) -> None:
        """Raise unless this server's env may be snapshotted.

        Raises:
            ProtocolError: SNAPSHOT_UNSUPPORTED: its probe failed (the reason it gave).
        """
        if self._supported is None:
            self._supported = await self._support()
        support = self._supported
        if not support.get("supported"):
            raise ProtocolError(
                ErrorCode.SNAPSHOT_UNSUPPORTED.value, f"this env cannot be snapshotted: {support.get('reason')}"
            )

    def __len__(self) -> int:
        return len(self._kept)

    def session(self) -> SessionSnapshots:
        """A new session's view: what it keeps, counted against its own limits."""
        return SessionSnapshots(self)

    def find(self, snapshot_id: str) -> Kept:
        """The state kept under ``snapshot_id``, by any session.

        Raises:
            ProtocolError: SNAPSHOT_UNKNOWN: released, its session closed, or never taken here.
        """
        kept = self._kept.get(snapshot_id)
        if kept is None:
            raise ProtocolError(
                ErrorCode.SNAPSHOT_UNKNOWN.value,
                f"restore: this server keeps no snapshot {snapshot_id!r} (released, or the session that took it "
                "closed; a snapshot of another server travels as portable bytes: snapshot(portable=True))",
            )
        return kept

    def seal(self, kept: Kept) -> bytes:
        """``kept`` as portable bytes, sealed with this server's key."""
        header = {"env": self.env, "frame": kept.frame, "ended": kept.ended, "render_mode": kept.render_mode}
        return seal(self.key, header, kept.state)

    def unseal(self, blob: bytes) -> Kept:
        """The state in portable bytes this server (or one sharing its key) sealed, for this env.

        Raises:
            ProtocolError: SNAPSHOT_REFUSED: not sealed with this key, or a snapshot of another env.
        """
        header, state = unseal(self.key, blob)
        if header.get("env") != self.env:
            raise ProtocolError(
                ErrorCode.SNAPSHOT_REFUSED.value,
                f"restore: this portable snapshot is of {header.get('env')!r}, and this server serves {self.env!r}",
            )
        return Kept(state, str(header["frame"]), bool(header["ended"]), header.get("render_mode"))

    def resolve(self, snapshot_id: str | None, portable: bytes | None, render_mode: str | None) -> Kept:
        """The state a restore names (a kept id, or sealed bytes), for a session of ``render_mode``.

        Raises:
            ProtocolError: SNAPSHOT_UNKNOWN (see :meth:`find`), SNAPSHOT_REFUSED (see :meth:`unseal`;
                or the state is of an env made in another render mode).
        """
        kept = self.unseal(portable) if portable is not None else self.find(str(snapshot_id))
        if kept.render_mode != render_mode:
            raise ProtocolError(
                ErrorCode.SNAPSHOT_REFUSED.value,
                f"restore: the snapshot is of an env made with render_mode={kept.render_mode}, this session's "
                f"has render_mode={render_mode}",
            )
        return kept

    def _add(self, kept: Kept, size: int) -> str:
        snapshot_id = "s-" + secrets.token_urlsafe(12)
        self._kept[snapshot_id] = kept
        self.held_bytes += size
        return snapshot_id

    def _drop(self, snapshot_id: str, size: int) -> None:
        if self._kept.pop(snapshot_id, None) is not None:
            self.held_bytes -= size


class SessionSnapshots:
    """The snapshots one session took, and its limits (made by :meth:`SnapshotStore.session`)."""

    def __init__(self, store: SnapshotStore) -> None:
        self.store = store
        self._sizes: dict[str, int] = {}
        #: Bytes held now.
        self.held_bytes = 0

    @property
    def held(self) -> int:
        """Snapshots held now."""
        return len(self._sizes)

    def keep(self, kept: Kept) -> str:
        """Keep ``kept``; returns its id.

        Raises:
            ProtocolError: SNAPSHOT_LIMIT: the session holds as many snapshots, or bytes, as allowed,
                or the server's sessions together hold as many bytes as it allows.
        """
        store, size = self.store, kept.held_bytes
        if self.held >= store.max_count:
            raise self._limit(f"this session holds {self.held} snapshots, the most the server allows")
        if self.held_bytes + size > store.max_bytes:
            raise self._limit(
                f"this snapshot ({size} bytes with its observation) would bring the session's to "
                f"{self.held_bytes + size} bytes, over the server's {store.max_bytes}"
            )
        if store.held_bytes + size > store.max_total_bytes:
            raise self._limit(
                f"this snapshot ({size} bytes with its observation) would bring the snapshots of all this server's "
                f"sessions to {store.held_bytes + size} bytes, over its {store.max_total_bytes} for them all"
            )
        snapshot_id = store._add(kept, size)
        self._sizes[snapshot_id] = size
        self.held_bytes += size
        return snapshot_id

    def travelling(self, kept: Kept) -> bytes:
        """``kept`` sealed as portable bytes, if a restore frame can carry them.

        Raises:
            ProtocolError: SNAPSHOT_LIMIT: base64 in a restore frame, they would pass the server's
                largest frame (``--max-frame-bytes``).
        """
        sealed = self.store.seal(kept)
        on_the_wire = 4 * -(-len(sealed) // 3) + 256  # base64, and the frame around it
        if on_the_wire > self.store.max_frame_bytes:
            raise self._limit(
                f"this state travels as {on_the_wire} bytes, over the {self.store.max_frame_bytes} a frame may hold: "
                "take it without portable=True (it stays on the server)"
            )
        return sealed

    @staticmethod
    def _limit(why: str) -> ProtocolError:
        return ProtocolError(
            ErrorCode.SNAPSHOT_LIMIT.value,
            f"snapshot: {why}: release() the ones no longer needed (serve --max-snapshots, --max-snapshot-bytes, "
            "--max-server-snapshot-bytes set the limits)",
        )

    def release(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """Drop those of ``ids`` this session holds; returns them (others are left: not its own, or gone)."""
        released = tuple(snapshot_id for snapshot_id in dict.fromkeys(ids) if snapshot_id in self._sizes)
        for snapshot_id in released:
            size = self._sizes.pop(snapshot_id)
            self.held_bytes -= size
            self.store._drop(snapshot_id, size)
        return released

    def release_reply(self, ids: tuple[str, ...]) -> str:
        """:meth:`release` ``ids``, and the ``snapshot`` frame that answers a ``release``."""
        from ..protocol.snapshot import SnapshotFrame

        released = self.release(ids)
        return SnapshotFrame(released=released, held=self.held, held_bytes=self.held_bytes).serialize()

    def close(self) -> None:
        """Drop every snapshot of the session (it closed, however it ended)."""
        self.release(tuple(self._sizes))
