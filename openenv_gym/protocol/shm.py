"""The shared-memory transport of a session on one host (pure, no I/O).

When a client and its server share a host, a session's steps need no WebSocket: the actions
and the results live in one shared segment the server lays out, and a step is a write and a
wake-up. The WebSocket stays the control channel (the handshake, resets, render, errors,
close). A vector session's segment holds its K sub-envs; a plain ``/ws`` session of a Gymnasium
env (:func:`parse_plain_client_frame`) is laid out as a batch of one, its infos the env's own
``info`` as the WebSocket would carry it. Opening it, on a session that has made its env::

    -> {"type":"shm_open"}
    <- {"type":"shm_offer","data":{"socket":"@openenv-gym-shm-7c1f...",
        "ticket":"<64 hex digits>","layout":{...}}}

The client connects to that Unix socket (``@``: Linux's abstract namespace, so no file is left
behind and another network namespace cannot reach it) and writes the ticket; the server checks
the ticket and that the peer runs as its own user, and answers with one byte and the segment's file descriptor (a
``memfd``, passed with ``SCM_RIGHTS``: the segment has no name anyone else could open, and the
kernel frees it when both sides are gone, however they end). The segment comes sealed
(:func:`segment_seals`): a side that kept the descriptor cannot shrink it under the other's
mapping (whose next touch past the end would be a ``SIGBUS``, killing the process) or grow it,
and the client refuses a segment without those seals. An offer not taken before the
session's next request is withdrawn. From then on a step is:

1. the client writes the actions, then the request number (``request_seq``, any new value);
2. the server copies the actions out (the client may keep writing: what the server checks is
   its own copy), checks them against the action space, steps, writes the results, then
   ``reply_seq = request_seq`` with the status: ``STATUS_OK``, or ``STATUS_ERROR`` with the
   error frame's JSON where the infos go.

Either side may watch the other's number for a moment (a spin, on hosts whose memory order
makes that safe) before it sleeps on the socket; one going to sleep says so in the header
(``client_sleeping``, ``server_sleeping``), and the other then sends a byte to wake it after
its write. Each side puts a full memory fence (:func:`fence`) between writing its flag or number
and reading the other's, so the two cannot both miss; a sleeper still looks again after 1 ms,
2 ms, 4 ms... (up to a second). The socket's end is the other side's death. Rewards keep their
dtype (``reward_dtype``, an index into :data:`REWARD_DTYPES`); infos are
:func:`openenv_gym.protocol.arrays.pack`'s bytes, except a SameStep autoreset's last
observations: when every one Gymnasium's ``infos["final_obs"]`` holds is an observation of the
segment's dtype and shape, they travel as rows of the ``final_obs`` batch with ``final_mask``
saying which (header ``final_obs`` = 1), and the reader rebuilds Gymnasium's object array and
its ``_final_obs`` mask: an object array packed item by item cost more than the step.
"""

from __future__ import annotations

import math
import platform
import secrets
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ._json import data_object, dumps, invalid, load_object
from .codes import ErrorCode, MessageType
from .frames import ClientFrame, ErrorFrame, ServerFrame, parse_client_frame, parse_server_frame

if TYPE_CHECKING:  # numpy loads when a segment is laid out, not with the protocol
    import numpy as np

    from .batch import BatchCallFrame, BatchValuesFrame

__all__ = [
    "FIRST_SLEEP",
    "HEADER",
    "LONGEST_SLEEP",
    "MAX_SEGMENT_BYTES",
    "REWARD_DTYPES",
    "STATUS_ERROR",
    "STATUS_OK",
    "TICKET_BYTES",
    "ShmLayout",
    "ShmOffer",
    "ShmOpenFrame",
    "ShmViews",
    "Spinner",
    "array_kind_ok",
    "fence",
    "new_ticket",
    "parse_plain_client_frame",
    "parse_plain_server_frame",
    "refused",
    "segment_seals",
]

STATUS_OK, STATUS_ERROR = 0, 1
#: The dtypes a reward may have, by the index the header carries (8 bytes hold any of them).
REWARD_DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
#: The ticket a client proves itself with: this many random bytes, as hex.
TICKET_BYTES = 32
#: The largest segment a layout may ask for.
MAX_SEGMENT_BYTES = 2**31
#: The dtypes a segment's arrays may have: fixed-size numbers (no objects, no strings).
_ARRAY_KINDS = frozenset("biuf")
_ALIGN = 64

#: The header's fields: (name, dtype, byte offset). 64 bytes, a cache line.
HEADER = (
    ("request_seq", "<u8", 0),
    ("reply_seq", "<u8", 8),
    ("status", "<u4", 16),
    ("infos_bytes", "<u4", 20),
    ("reward_dtype", "<u4", 24),
    ("client_sleeping", "<u4", 28),
    ("server_sleeping", "<u4", 32),
    ("final_obs", "<u4", 36),
)
_HEADER_BYTES = 64


#: The longest a side watches the other's number before it sleeps on the socket.
SPIN_LIMIT = 300e-6
# Watching a number in memory for the data written before it is safe where stores are seen in
# order (x86's total store order); elsewhere each side sleeps on the socket, whose calls order memory.
_SPIN_SAFE = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


class Spinner:
    """How long one side watches the other's number before sleeping, learnt from its recent waits.

    Sleeping on a socket costs two wake-ups (tens of microseconds here), more than a small
    vector env's step; watching costs a core while it lasts. So a side watches only while the
    other has answered quickly (a smoothed wait under :data:`SPIN_LIMIT`), for about twice that
    long; a slow env, or a trainer thinking between steps, is waited for asleep.

    Example:
        >>> spinner = Spinner(limit=300e-6)
        >>> spinner.record(50e-6)
        >>> 0 < spinner.budget() <= 300e-6
        True
        >>> spinner.record(5e-3); spinner.record(5e-3)
        >>> spinner.budget()
        0.0
    """

    def __init__(self, limit: float = SPIN_LIMIT) -> None:
        self.limit = limit if _SPIN_SAFE else 0.0
        self.typical = 0.0  # smoothed seconds between asking and being answered

    def budget(self) -> float:
        """Seconds to watch before sleeping (0: sleep at once)."""
        if not self.limit or self.typical > self.limit:
            return 0.0
        return min(self.limit, 2 * self.typical + 20e-6)

    def record(self, seconds: float) -> None:
        """Learn from one wait that ended in an answer."""
        self.typical = 0.75 * self.typical + 0.25 * seconds


_FENCE = threading.Lock()


def fence() -> None:
    """A full memory fence: the writes before it are seen by the other side before the reads after it.

    Taking an uncontended lock is an atomic read-modify-write (``lock cmpxchg`` on x86), which
    orders every store before it with every load after it; Python has no fence of its own.
    """
    _FENCE.acquire()
    _FENCE.release()


#: A sleeper's first look again, in seconds (doubled each time, up to :data:`LONGEST_SLEEP`).
FIRST_SLEEP = 1e-3
LONGEST_SLEEP = 1.0


def segment_seals() -> int:
    """The seals (``fcntl.F_SEAL_*``) a segment carries before it is handed over: its size is fixed
    for both sides (``F_SEAL_SHRINK``, ``F_SEAL_GROW``) and no seal can be added or removed
    (``F_SEAL_SEAL``). Writes stay open: they are what the segment is for. Linux only."""
    import fcntl  # the seals' names exist where memfd does

    return fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def new_ticket() -> str:
    """A fresh, unguessable ticket."""
    return secrets.token_hex(TICKET_BYTES)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


@dataclass(frozen=True)
class ShmLayout:
    """Where each array of a vector session's segment lies: the server's choice, sent once.

    Args:
        num_envs: the vector env's size.
        action_dtype, action_shape: one sub-env's action (a fixed-size array: Discrete is ``int64``, ``()``).
        observation_dtype, observation_shape: one sub-env's observation.
        infos_capacity: bytes kept for each reply's packed infos (or an error frame).
    """

    num_envs: int
    action_dtype: str
    action_shape: tuple[int, ...]
    observation_dtype: str
    observation_shape: tuple[int, ...]
    infos_capacity: int

    def _arrays(self) -> list[tuple[str, np.dtype[Any], tuple[int, ...]]]:
        import numpy as np

        n = self.num_envs
        return [
            ("actions", np.dtype(self.action_dtype), (n, *self.action_shape)),
            ("observations", np.dtype(self.observation_dtype), (n, *self.observation_shape)),
            ("rewards", np.dtype("u8"), (n,)),  # viewed in the reply's reward dtype
            ("terminated", np.dtype(np.bool_), (n,)),
            ("truncated", np.dtype(np.bool_), (n,)),
            ("infos", np.dtype(np.uint8), (self.infos_capacity,)),
            ("final_mask", np.dtype(np.bool_), (n,)),
            ("final_obs", np.dtype(self.observation_dtype), (n, *self.observation_shape)),
        ]

    def offsets(self) -> dict[str, int]:
        """Each array's byte offset in the segment (64-byte aligned), and ``"end"``."""
        offsets, offset = {}, _HEADER_BYTES
        for name, dtype, shape in self._arrays():
            offsets[name] = offset
            offset = _aligned(offset + dtype.itemsize * math.prod(shape))
        offsets["end"] = offset
        return offsets

    @property
    def size(self) -> int:
        """The segment's size in bytes."""
        return self.offsets()["end"]

    def views(self, buffer: Any) -> ShmViews:
        """Numpy views of ``buffer`` (the mapped segment, at least :attr:`size` bytes)."""
        import numpy as np

        offsets = self.offsets()
        header = {name: np.ndarray((1,), np.dtype(dtype), buffer, offset) for name, dtype, offset in HEADER}
        arrays = {name: np.ndarray(shape, dtype, buffer, offsets[name]) for name, dtype, shape in self._arrays()}
        return ShmViews(header=header, **arrays)

    def to_json(self) -> dict[str, Any]:
        return {
            "num_envs": self.num_envs,
            "action": {"dtype": self.action_dtype, "shape": list(self.action_shape)},
            "observation": {"dtype": self.observation_dtype, "shape": list(self.observation_shape)},
            "infos_capacity": self.infos_capacity,
        }

    @classmethod
    def from_json(cls, data: Any, num_envs: int) -> ShmLayout:
        """The layout a server sent, checked: numeric dtypes, small shapes, ``num_envs`` sub-envs.

        Raises:
            ProtocolError: VALIDATION_ERROR, saying what is wrong.
        """
        if not isinstance(data, dict):
            raise invalid("shm layout must be an object")
        if data.get("num_envs") != num_envs:
            raise invalid(f"shm layout is for {data.get('num_envs')!r} sub-envs, the session holds {num_envs}")
        capacity = data.get("infos_capacity")
        if not isinstance(capacity, int) or isinstance(capacity, bool) or not 0 < capacity <= MAX_SEGMENT_BYTES:
            raise invalid("shm layout infos_capacity must be a positive integer")
        action_dtype, action_shape = _array_spec(data.get("action"), "action")
        observation_dtype, observation_shape = _array_spec(data.get("observation"), "observation")
        layout = cls(num_envs, action_dtype, action_shape, observation_dtype, observation_shape, capacity)
        if layout.size > MAX_SEGMENT_BYTES:
            raise invalid(f"shm layout asks for {layout.size} bytes, more than {MAX_SEGMENT_BYTES}")
        return layout


def array_kind_ok(dtype: Any) -> bool:
    """Whether arrays of ``dtype`` can lie in a segment (fixed-size numbers and booleans)."""
    import numpy as np

    return np.dtype(dtype).kind in _ARRAY_KINDS


def _array_spec(spec: Any, what: str) -> tuple[str, tuple[int, ...]]:
    if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str) or not isinstance(spec.get("shape"), list):
        raise invalid(f"shm layout {what} must be {{'dtype': str, 'shape': [int, ...]}}")
    import numpy as np

    try:
        dtype = np.dtype(spec["dtype"])
    except TypeError as exc:
        raise invalid(f"shm layout {what} dtype {spec['dtype']!r} is not a dtype") from exc
    if not array_kind_ok(dtype):
        raise invalid(f"shm layout {what} dtype {spec['dtype']!r} is not a fixed-size number")
    shape = spec["shape"]
    if len(shape) > 8 or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 2**24 for d in shape):
        raise invalid(f"shm layout {what} shape {shape!r} is not a short list of small integers")
    return dtype.str, tuple(shape)


@dataclass
class ShmViews:
    """The segment's arrays, as numpy views: the header's fields (one item each) and the data."""

    header: dict[str, np.ndarray]
    actions: np.ndarray
    observations: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: np.ndarray
    final_mask: np.ndarray
    final_obs: np.ndarray

    def reward_slots(self) -> list[np.ndarray]:
        """The rewards slot viewed in each of :data:`REWARD_DTYPES`, by its index."""
        n = len(self.rewards)
        return [self.rewards.view(name)[:n] for name in REWARD_DTYPES]


@dataclass(frozen=True)
class ShmOpenFrame:
    """A client asks for its session's steps to go through shared memory."""

    def serialize(self) -> str:
        return dumps({"type": MessageType.SHM_OPEN.value})

    def __str__(self) -> str:
        return "shm_open"


@dataclass(frozen=True)
class ShmOffer:
    """Where to fetch the segment (a Unix socket's path), the ticket to show, and its layout."""

    socket: str
    ticket: str
    layout: dict[str, Any]

    def serialize(self) -> str:
        data = {"socket": self.socket, "ticket": self.ticket, "layout": self.layout}
        return dumps({"type": MessageType.SHM_OFFER.value, "data": data})

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ShmOffer:
        """Raises ProtocolError (VALIDATION_ERROR) unless ``data`` holds a socket path, a ticket and a layout."""
        socket, ticket, layout = data.get("socket"), data.get("ticket"), data.get("layout")
        if not isinstance(socket, str) or not socket:
            raise invalid("shm_offer needs data.socket, a Unix socket's path")
        if not isinstance(ticket, str) or len(ticket) != 2 * TICKET_BYTES:
            raise invalid(f"shm_offer needs data.ticket, {2 * TICKET_BYTES} hex digits")
        if not isinstance(layout, dict):
            raise invalid("shm_offer needs data.layout, an object")
        return cls(socket, ticket, layout)

    def __str__(self) -> str:
        return f"shm_offer socket={self.socket}"


def refused(reason: str) -> ErrorFrame:
    """The error a server answers ``shm_open`` with when it cannot serve shared memory, and why."""
    return ErrorFrame(ErrorCode.VALIDATION_ERROR, f"shared memory refused: {reason}")


def parse_plain_client_frame(message: str | bytes) -> ClientFrame | ShmOpenFrame | BatchCallFrame:
    """:func:`~openenv_gym.protocol.frames.parse_client_frame`, and ``shm_open`` (a plain session
    of openenv-gym's may move its steps to shared memory; OpenEnv's frames are left as they are).

    Example:
        >>> parse_plain_client_frame('{"type":"shm_open"}')
        ShmOpenFrame()
    """
    try:
        return parse_client_frame(message)
    except ProtocolError as exc:  # the usual frames pay nothing for the rare one
        kind = _message_type(message) if exc.code == ErrorCode.UNKNOWN_TYPE.value else None
        if kind == MessageType.SHM_OPEN.value:
            return ShmOpenFrame()
        if kind == MessageType.BATCH_CALL.value:  # a vector env's call/get_attr/set_attr of its one sub-env
            from .batch import BatchCallFrame, parse_batch_client_frame

            call = parse_batch_client_frame(message)
            if not isinstance(call, BatchCallFrame):  # the type was read as batch_call: it cannot be another
                raise
            return call
        raise


def parse_plain_server_frame(message: str | bytes) -> ServerFrame | ShmOffer | BatchValuesFrame:
    """:func:`~openenv_gym.protocol.frames.parse_server_frame`, and ``shm_offer``."""
    try:
        return parse_server_frame(message)
    except ProtocolError as exc:
        kind = _message_type(message) if exc.code == ErrorCode.UNKNOWN_TYPE.value else None
        if kind == MessageType.SHM_OFFER.value:
            return ShmOffer.from_data(data_object(load_object(message), "shm_offer"))
        if kind == MessageType.BATCH_VALUES.value:  # the answer to a batch_call
            from .batch import BatchValuesFrame

            values = data_object(load_object(message), "batch_values").get("values")
            if not isinstance(values, list):
                raise invalid("batch_values needs data.values, a list") from None
            return BatchValuesFrame(values)
        raise


def _message_type(message: str | bytes) -> Any:
    return load_object(message).get("type")
