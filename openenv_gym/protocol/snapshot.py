"""Snapshot, restore and release frames (our extension of ``/ws``), and sealed portable snapshots (no I/O).

A client asks the server to keep the env's current state (``snapshot``), to put the env back
into a state it kept (``restore``), and to drop states it no longer needs (``release``)::

    -> {"type": "snapshot", "data": {"portable": false}}
    <- {"type": "snapshot", "data": {"id": "s-...", "bytes": 1234, "held": 1, "held_bytes": 1234}}
    -> {"type": "restore", "data": {"id": "s-..."}}
    <- {"type": "observation", "data": {...}}          # the observation of the restored state
    -> {"type": "release", "data": {"ids": ["s-..."]}}
    <- {"type": "snapshot", "data": {"released": ["s-..."], "held": 0, "held_bytes": 0}}

A server says in ``/schema["snapshot"]`` whether (and how) it snapshots before a client asks.
An id names a state the server keeps: any session of that server may restore it (a fork opens
new sessions and restores the parent's id), until its owner releases it or closes. With
``"portable": true`` the reply also carries the state as bytes (base64), *sealed*: signed by
the server with a key only servers hold (:func:`seal`), so a server restores bytes only another
server with the same key made. The bytes hold a pickle, and unpickling runs code: the seal is
what keeps a client from sending one of its own.

On a batch session (``/ws/batch``) the same frames name sub-envs by index; a restore answers
with a ``batch_result`` as a masked ``batch_reset`` does (every sub-env's observation, the
restored ones' infos)::

    -> {"type": "snapshot", "data": {"envs": [0, 2], "portable": false}}
    <- {"type": "snapshot", "data": {"snapshots": [{"id": "s-...", "bytes": 1234}, ...], "held": 2, ...}}
    -> {"type": "restore", "data": {"envs": [0, 2], "ids": ["s-...", "s-..."]}}     # or "portable": [...]
    <- {"type": "batch_result", "data": {"observations": [...], "infos": [...]}}
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import struct
from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError
from ._json import data_object, dumps, invalid
from .codes import ErrorCode

__all__ = [
    "BatchRestoreRequest",
    "BatchSnapshotFrame",
    "BatchSnapshotRequest",
    "ReleaseRequest",
    "RestoreRequest",
    "SnapshotFrame",
    "SnapshotRequest",
    "parse_batch_snapshot_frame",
    "parse_batch_snapshot_request",
    "parse_snapshot_frame",
    "parse_snapshot_request",
    "seal",
    "unseal",
]

#: The first bytes of a sealed snapshot (format version 1).
SEAL_MAGIC = b"OGS1"
_MAC_BYTES = hashlib.sha256().digest_size
_HEADER_LENGTH = struct.Struct(">I")


@dataclass(frozen=True)
class SnapshotRequest:
    """Keep the env's current state; with ``portable``, send it back as sealed bytes too."""

    portable: bool = False

    def serialize(self) -> str:
        return dumps({"type": "snapshot", "data": {"portable": self.portable}})

    def __str__(self) -> str:
        return "snapshot" + (" (portable)" if self.portable else "")


@dataclass(frozen=True)
class RestoreRequest:
    """Put the env back into a kept state (``id``) or into sealed bytes (``portable``): one of the two."""

    id: str | None = None
    portable: bytes | None = None

    def serialize(self) -> str:
        if self.portable is not None:
            return dumps({"type": "restore", "data": {"portable": base64.b64encode(self.portable).decode()}})
        return dumps({"type": "restore", "data": {"id": self.id}})

    def __str__(self) -> str:
        return f"restore {self.id}" if self.portable is None else f"restore ({len(self.portable)} portable bytes)"


@dataclass(frozen=True)
class ReleaseRequest:
    """Drop kept states; ids the server does not hold (already released) are ignored."""

    ids: tuple[str, ...]

    def serialize(self) -> str:
        return dumps({"type": "release", "data": {"ids": list(self.ids)}})

    def __str__(self) -> str:
        return f"release {len(self.ids)}"


@dataclass(frozen=True)
class SnapshotFrame:
    """The reply to ``snapshot`` (``id``, its ``size`` and, if asked, its ``portable`` bytes) and to
    ``release`` (the ids ``released``); both say what the session now holds."""

    id: str | None = None
    size: int = 0
    portable: bytes | None = None
    released: tuple[str, ...] = ()
    held: int = 0
    held_bytes: int = 0

    def serialize(self) -> str:
        data: dict[str, Any] = {"held": self.held, "held_bytes": self.held_bytes}
        if self.id is not None:
            data.update(id=self.id, bytes=self.size)
        if self.portable is not None:
            data["portable"] = base64.b64encode(self.portable).decode()
        if self.released:
            data["released"] = list(self.released)
        return dumps({"type": "snapshot", "data": data})

    def __str__(self) -> str:
        if self.id is not None:
            return f"snapshot {self.id} ({self.size} bytes)"
        return f"released {len(self.released)}"


@dataclass(frozen=True)
class BatchSnapshotRequest:
    """Keep the states of the batch session's sub-envs ``envs`` (indices), one snapshot each."""

    envs: tuple[int, ...]
    portable: bool = False

    def serialize(self) -> str:
        return dumps({"type": "snapshot", "data": {"envs": list(self.envs), "portable": self.portable}})

    def __str__(self) -> str:
        return f"snapshot of sub-envs {list(self.envs)}"


@dataclass(frozen=True)
class BatchRestoreRequest:
    """Put sub-envs ``envs`` back into kept states (``ids``) or sealed bytes (``portables``), one each."""

    envs: tuple[int, ...]
    ids: tuple[str, ...] | None = None
    portables: tuple[bytes, ...] | None = None

    def serialize(self) -> str:
        data: dict[str, Any] = {"envs": list(self.envs)}
        if self.portables is not None:
            data["portable"] = [base64.b64encode(blob).decode() for blob in self.portables]
        else:
            data["ids"] = list(self.ids or ())
        return dumps({"type": "restore", "data": data})

    def __str__(self) -> str:
        return f"restore of sub-envs {list(self.envs)}"


@dataclass(frozen=True)
class BatchSnapshotFrame:
    """The reply to a batch ``snapshot``: one :class:`SnapshotFrame` per sub-env asked, in order."""

    snapshots: tuple[SnapshotFrame, ...]
    held: int = 0
    held_bytes: int = 0

    def serialize(self) -> str:
        items = []
        for frame in self.snapshots:
            item: dict[str, Any] = {"id": frame.id, "bytes": frame.size}
            if frame.portable is not None:
                item["portable"] = base64.b64encode(frame.portable).decode()
            items.append(item)
        return dumps(
            {"type": "snapshot", "data": {"snapshots": items, "held": self.held, "held_bytes": self.held_bytes}}
        )

    def __str__(self) -> str:
        return f"snapshot of {len(self.snapshots)} sub-envs"


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise invalid(f"{what} must be a base64 string, got {type(value).__name__}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise invalid(f"{what} is not valid base64: {exc}") from None


def parse_snapshot_request(kind: str, frame: dict[str, Any]) -> SnapshotRequest | RestoreRequest | ReleaseRequest:
    """The request a decoded ``snapshot``, ``restore`` or ``release`` frame holds.

    Raises:
        ProtocolError: VALIDATION_ERROR: a field is missing or of the wrong type.
    """
    data = data_object(frame, kind)
    if kind == "snapshot":
        portable = data.get("portable", False)
        if not isinstance(portable, bool):
            raise invalid("snapshot: portable must be a boolean")
        return SnapshotRequest(portable)
    if kind == "restore":
        snapshot_id, portable = data.get("id"), data.get("portable")
        if (snapshot_id is None) == (portable is None):
            raise invalid("restore: give either id (a snapshot the server keeps) or portable (its sealed bytes)")
        if portable is not None:
            return RestoreRequest(portable=_b64(portable, "restore: portable"))
        if not isinstance(snapshot_id, str):
            raise invalid("restore: id must be a string")
        return RestoreRequest(id=snapshot_id)
    ids = data.get("ids")
    if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
        raise invalid("release: ids must be a list of snapshot ids")
    return ReleaseRequest(tuple(ids))


def _indices(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(type(item) is int and item >= 0 for item in value):
        raise invalid(f"{what}: envs must be a non-empty list of sub-env indices")
    if len(set(value)) != len(value):
        raise invalid(f"{what}: envs names a sub-env twice")
    return tuple(value)


def parse_batch_snapshot_request(
    kind: str, frame: dict[str, Any]
) -> BatchSnapshotRequest | BatchRestoreRequest | ReleaseRequest:
    """The request a decoded batch ``snapshot``, ``restore`` or ``release`` frame holds.

    Raises:
        ProtocolError: VALIDATION_ERROR: a field is missing, of the wrong type or length.
    """
    if kind == "release":
        request = parse_snapshot_request(kind, frame)
        assert isinstance(request, ReleaseRequest)
        return request
    data = data_object(frame, kind)
    envs = _indices(data.get("envs"), kind)
    if kind == "snapshot":
        portable = data.get("portable", False)
        if not isinstance(portable, bool):
            raise invalid("snapshot: portable must be a boolean")
        return BatchSnapshotRequest(envs, portable)
    ids, portables = data.get("ids"), data.get("portable")
    if (ids is None) == (portables is None):
        raise invalid("restore: give either ids (snapshots the server keeps) or portable (their sealed bytes)")
    values = ids if ids is not None else portables
    if not isinstance(values, list) or len(values) != len(envs):
        raise invalid(f"restore: one snapshot per sub-env of envs ({len(envs)})")
    if portables is not None:
        return BatchRestoreRequest(envs, portables=tuple(_b64(item, "restore: portable") for item in values))
    if not all(isinstance(item, str) for item in values):
        raise invalid("restore: ids must be strings")
    return BatchRestoreRequest(envs, ids=tuple(values))


def parse_batch_snapshot_frame(frame: dict[str, Any]) -> BatchSnapshotFrame | SnapshotFrame:
    """A server's ``snapshot`` frame on a batch session: per sub-env (``snapshots``), or a release's reply.

    Raises:
        ProtocolError: a field has the wrong type.
    """
    data = data_object(frame, "snapshot")
    items = data.get("snapshots")
    if items is None:
        return parse_snapshot_frame(frame)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise invalid("a batch snapshot frame's snapshots must be a list of objects")
    summary = parse_snapshot_frame(
        {"type": "snapshot", "data": {key: data.get(key, 0) for key in ("held", "held_bytes")}}
    )
    frames = tuple(parse_snapshot_frame({"type": "snapshot", "data": item}) for item in items)
    if any(item.id is None for item in frames):
        raise invalid("a batch snapshot frame's snapshots each need an id")
    return BatchSnapshotFrame(frames, summary.held, summary.held_bytes)


def parse_snapshot_frame(frame: dict[str, Any]) -> SnapshotFrame:
    """The :class:`SnapshotFrame` a decoded server ``snapshot`` frame holds.

    Raises:
        ProtocolError: a field has the wrong type.
    """
    data = data_object(frame, "snapshot")
    snapshot_id, released = data.get("id"), data.get("released", [])
    numbers = [data.get(key, 0) for key in ("bytes", "held", "held_bytes")]
    if snapshot_id is not None and not isinstance(snapshot_id, str):
        raise invalid("a snapshot frame's id must be a string")
    if not all(type(number) is int for number in numbers):
        raise invalid("a snapshot frame's bytes, held and held_bytes must be integers")
    if not isinstance(released, list) or not all(isinstance(item, str) for item in released):
        raise invalid("a snapshot frame's released must be a list of ids")
    portable = data.get("portable")
    size, held, held_bytes = numbers
    return SnapshotFrame(
        id=snapshot_id,
        size=size,
        portable=None if portable is None else _b64(portable, "a snapshot frame's portable"),
        released=tuple(released),
        held=held,
        held_bytes=held_bytes,
    )


# Sealed portable snapshots ----------------------------------------------------------------------


def seal(key: bytes, header: dict[str, Any], state: bytes) -> bytes:
    """``state`` (an env's snapshot) and ``header`` (what the server needs besides: the env it is of,
    the observation to answer with) as one blob, signed with ``key`` (HMAC-SHA256).

    >>> blob = seal(b"k", {"env": "CartPole-v1"}, b"state")
    >>> unseal(b"k", blob)
    ({'env': 'CartPole-v1'}, b'state')
    """
    body = json.dumps(header, separators=(",", ":")).encode()
    payload = _HEADER_LENGTH.pack(len(body)) + body + state
    return SEAL_MAGIC + hmac.digest(key, payload, "sha256") + payload


def unseal(key: bytes, blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and state of a blob :func:`seal` made with ``key``.

    Raises:
        ProtocolError: SNAPSHOT_REFUSED: not a sealed snapshot, or sealed with another key (made
            by a server that does not share this one's key, or altered on the way).
    """
    start = len(SEAL_MAGIC) + _MAC_BYTES
    if not blob.startswith(SEAL_MAGIC) or len(blob) < start + _HEADER_LENGTH.size:
        raise ProtocolError(ErrorCode.SNAPSHOT_REFUSED.value, "restore: these bytes are not a portable snapshot")
    mac, payload = blob[len(SEAL_MAGIC) : start], blob[start:]
    if not hmac.compare_digest(mac, hmac.digest(key, payload, "sha256")):
        raise ProtocolError(
            ErrorCode.SNAPSHOT_REFUSED.value,
            "restore: this portable snapshot was not sealed with this server's key (a server restores only what a "
            "server sharing its key made: start both with the same OPENENV_GYM_SNAPSHOT_KEY), or it was altered",
        )
    (length,) = _HEADER_LENGTH.unpack_from(payload)
    header = json.loads(payload[_HEADER_LENGTH.size : _HEADER_LENGTH.size + length])
    return header, payload[_HEADER_LENGTH.size + length :]
