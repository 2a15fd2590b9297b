"""The batch extension of the wire protocol: many sub-environments per session (pure, no I/O).

A client opens ``/ws/batch?envs=K&autoreset_mode=NextStep`` and the server keeps K environments
for the connection. One ``batch_reset`` or ``batch_step`` frame carries what all K need, and one
``batch_result`` frame carries all K results, so per-message costs are paid once per K steps.
Autoreset happens on the server with Gymnasium's semantics (``gymnasium.vector.AutoresetMode``):
the client only assembles what comes back. OpenEnv servers do not serve ``/ws/batch``; the plain
``/ws`` protocol stays the compatible path.

::

    -> {"type":"batch_reset","data":{"seeds":[0,1],"options":null,"mask":null}}
    <- {"type":"batch_result","data":{"observations":[{"observation":[...]},...],"infos":[{},{}]}}
    -> {"type":"batch_step","data":{"actions":[{"action":0},{"action":1}]}}
    <- {"type":"batch_result","data":{"observations":[...],"rewards":[1.0,1.0],
        "terminated":[false,false],"truncated":[false,false],"infos":[{},{}],"final":{}}}

Observations and actions travel as the wire objects of the single spaces, as on ``/ws``
(:func:`openenv_gym.spaces.to_wire`: ``{"observation": [...]}``, ``{"action": 1}``).
``final`` maps the index of each sub-env that ended and was reset in the same step
(``same_step`` mode) to its final ``{"observation": ..., "info": ...}``.

**Binary results.** A client that offers the WebSocket subprotocol :data:`BINARY_SUBPROTOCOL`
gets each ``batch_result`` of a ``Box`` observation space as one binary message, packed by
:func:`openenv_gym.protocol.arrays.pack`: the observations as one raw array of shape
``(K, ...)``, the rest as JSON. Formatting and parsing floats is most of what JSON costs here;
raw bytes cost next to nothing. A session of Gymnasium envs packs every result (and
``batch_values``) on a binary connection, whatever the space: infos, call values and ``final``
travel as the envs gave them (a final observation pack gives back as it is comes as
``{"raw_observation": value, "info": ...}``), so arrays, numpy scalars, ints and floats arrive as
what they were; on JSON they keep their JSON forms. A binary client packs its ``batch_step``
requests too (the caller's actions keep their dtypes); other requests stay JSON.

**Rendering.** ``&render_mode=rgb_array`` in the query has the sub-envs made in that mode (the
server checks it against the modes it publishes). A ``{"type":"render"}`` frame is answered
with a ``render`` frame holding one frame per sub-env
(:class:`~openenv_gym.protocol.frames.RenderFrame`), packed as raw bytes on a binary connection.
"""

from __future__ import annotations

import enum
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import EpisodeEndedError, ProtocolError
from . import arrays
from ._json import data_object, dumps, elide, invalid, load_object
from .codes import ErrorCode, MessageType
from .frames import CloseFrame, ErrorFrame, RenderFrame, RenderRequest, parse_server_frame
from .snapshot import (
    BatchRestoreRequest,
    BatchSnapshotFrame,
    BatchSnapshotRequest,
    ReleaseRequest,
    SnapshotFrame,
    parse_batch_snapshot_frame,
    parse_batch_snapshot_request,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BATCH_PATH",
    "BINARY_MAGIC",
    "BINARY_SUBPROTOCOL",
    "AutoresetMode",
    "AutoresetRule",
    "BatchCallFrame",
    "BatchQuery",
    "BatchResetFrame",
    "BatchResultFrame",
    "BatchStepFrame",
    "BatchValuesFrame",
    "Mask",
    "Seeds",
    "batch_query",
    "ended_sub_env_error",
    "parse_batch_client_frame",
    "parse_batch_query",
    "parse_batch_server_frame",
]

BATCH_PATH = "/ws/batch"
BINARY_SUBPROTOCOL = arrays.BINARY_SUBPROTOCOL  # packed messages (protocol/arrays.py) offered
BINARY_MAGIC = arrays.BINARY_MAGIC


def _items(value: Any) -> Any:
    """A numpy value's items (an action of the caller's own), for JSON; numpy-free otherwise."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} cannot travel as JSON")


_dumps_items = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_items).encode

#: A batch reset's seeds, one per sub-env (``None``: that sub-env is reset without a seed).
Seeds = list[int | None]
#: Which sub-envs a batch reset resets (``True`` at their index); ``None`` in a request: all of them.
Mask = list[bool]


class AutoresetMode(str, enum.Enum):
    """Gymnasium's autoreset modes, by their ``gymnasium.vector.AutoresetMode`` values."""

    NEXT_STEP = "NextStep"
    SAME_STEP = "SameStep"
    DISABLED = "Disabled"


def ended_sub_env_error(index: int) -> EpisodeEndedError:
    """What stepping sub-env ``index`` raises once it ended, autoreset disabled, before a masked reset."""
    return EpisodeEndedError(
        ErrorCode.EPISODE_ENDED.value,
        f"sub-env {index} ended: reset it with reset_mask before stepping (autoreset_mode=Disabled)",
    )


class AutoresetRule:
    """Gymnasium's autoreset for one sub-env, as ``gymnasium.vector.SyncVectorEnv`` applies it.

    The server's batch session and the client's per-session vector env both follow it, so the
    two give the same results. Call :meth:`check_can_step` for every sub-env before stepping any,
    then per sub-env :meth:`resets_instead_of_stepping`, and after a step :meth:`stepped`.
    """

    def __init__(self, mode: AutoresetMode) -> None:
        self.mode = mode
        self.ended = False

    def check_can_step(self, index: int) -> None:
        """Raise :class:`EpisodeEndedError` if autoreset is disabled and this sub-env ended without a reset."""
        if self.ended and self.mode is AutoresetMode.DISABLED:
            raise ended_sub_env_error(index)

    def resets_instead_of_stepping(self) -> bool:
        """True when this step must reset the sub-env instead (``NextStep`` after an episode end)."""
        return self.ended and self.mode is AutoresetMode.NEXT_STEP

    def stepped(self, terminated: bool, truncated: bool) -> bool:
        """Record a step's flags; True when the sub-env must be reset in this same step (``SameStep``)."""
        self.ended = terminated or truncated
        return self.ended and self.mode is AutoresetMode.SAME_STEP

    def was_reset(self) -> None:
        """Record a reset (by the client, or in place of a step)."""
        self.ended = False


class BatchQuery(NamedTuple):
    """What a batch session's query string asks for (see :func:`parse_batch_query`)."""

    envs: int
    autoreset_mode: AutoresetMode
    backend: str | None = None
    render_mode: str | None = None


def batch_query(
    envs: int, autoreset_mode: AutoresetMode, backend: str | None = None, render_mode: str | None = None
) -> str:
    """The query string that opens a batch session of ``envs`` sub-environments.

    ``backend`` names the server-side vector env that serves them
    (:mod:`openenv_gym.protocol.vector`); ``None`` steps one env per sub-env. ``render_mode``
    has the sub-envs (or the vector env) made in that mode; a ``render`` frame then gets their
    frames, one per sub-env.
    """
    params: dict[str, str | int] = {"envs": envs, "autoreset_mode": autoreset_mode.value}
    if backend is not None:
        params["backend"] = backend
    if render_mode is not None:
        params["render_mode"] = render_mode
    return urllib.parse.urlencode(params)


def parse_batch_query(query: str, max_envs: int) -> BatchQuery:
    """Read ``envs``, ``autoreset_mode``, ``backend`` and ``render_mode`` from a batch session's
    query string. Whether the server can render in that mode is the server's to judge.

    Raises:
        ProtocolError: VALIDATION_ERROR naming the parameter that is missing or wrong.
    """
    params = urllib.parse.parse_qs(query)
    try:
        envs = int(params["envs"][0])
    except (KeyError, ValueError):
        raise invalid(f"{BATCH_PATH} needs ?envs=N with N a positive integer") from None
    if not 1 <= envs <= max_envs:
        raise invalid(f"envs={envs} is out of range: this server hosts 1 to {max_envs} per session")
    mode = params.get("autoreset_mode", [AutoresetMode.NEXT_STEP.value])[0]
    try:
        autoreset_mode = AutoresetMode(mode)
    except ValueError:
        modes = [m.value for m in AutoresetMode]
        raise invalid(f"unknown autoreset_mode {mode!r}; expected one of {modes}") from None
    backend = params.get("backend", [None])[0]
    render_mode = params.get("render_mode", [None])[0]
    return BatchQuery(envs, autoreset_mode, backend, render_mode)


@dataclass(frozen=True)
class BatchResetFrame:
    """Reset the sub-envs selected by ``mask`` (all when ``None``), each with its own seed."""

    seeds: Seeds | None = None
    options: dict[str, Any] | None = None
    mask: Mask | None = None

    def serialize(self) -> str:
        return dumps({"type": "batch_reset", "data": {"seeds": self.seeds, "options": self.options, "mask": self.mask}})

    def __str__(self) -> str:
        return f"batch_reset seeds={elide(self.seeds)} mask={elide(self.mask)}"


@dataclass(frozen=True)
class BatchStepFrame:
    """Step every sub-env with its action's wire object.

    An action may hold the caller's own numpy values (``from_env_fns``' actions, which reach the
    caller's envs unchecked): packed (:meth:`serialize_binary`) they keep their dtypes; as JSON
    they travel as their items (``tolist()``), as any action does.
    """

    actions: list[dict[str, Any]]

    def serialize(self) -> str:
        return _dumps_items({"type": "batch_step", "data": {"actions": self.actions}})

    def serialize_binary(self) -> bytes:
        return arrays.pack({"type": "batch_step", "data": {"actions": self.actions}}, reuse_headers=False)

    def __str__(self) -> str:
        return f"batch_step {elide(self.actions)}"


@dataclass(frozen=True)
class BatchCallFrame:
    """Read (``get``), write (``set``) or call (``call``) a public attribute of every sub-env, or of
    the sub-envs ``envs`` (the session's indices: SB3's ``indices``; the reply still has one value
    per sub-env, ``None`` for those not asked).

    ``set`` takes one value per sub-env in ``values``; ``call`` calls the attribute with ``args``
    and ``kwargs`` if it is callable and returns it otherwise, as ``SyncVectorEnv.call`` does;
    ``wrapped`` answers whether a wrapper of class ``name`` (``args``: its module and qualified
    name) wraps the sub-env, as SB3's ``env_is_wrapped``.
    """

    op: str
    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    values: list[Any] | None = None
    envs: list[int] | None = None

    def serialize(self) -> str:
        data = {"op": self.op, "name": self.name, "args": self.args, "kwargs": self.kwargs, "values": self.values}
        if self.envs is not None:  # every sub-env's call keeps the frame it always had
            data["envs"] = self.envs
        return dumps({"type": "batch_call", "data": data})

    def __str__(self) -> str:
        return f"batch_call {self.op} {self.name}"


@dataclass(frozen=True)
class BatchValuesFrame:
    """One JSON value per sub-env, the answer to a :class:`BatchCallFrame`."""

    values: list[Any]

    def serialize(self) -> str:
        return dumps({"type": "batch_values", "data": {"values": self.values}})

    def serialize_binary(self) -> bytes:
        """The packed form (:func:`openenv_gym.protocol.arrays.pack`): arrays and numpy scalars
        arrive as they were sent."""
        return arrays.pack({"type": "batch_values", "data": {"values": self.values}}, reuse_headers=False)

    def __str__(self) -> str:
        return f"batch_values {elide(self.values)}"


@dataclass(frozen=True)
class BatchResultFrame:
    """What every sub-env returned; a reset result has no rewards or flags."""

    observations: list[Any]
    infos: list[dict[str, Any]]
    rewards: list[float] | None = None
    terminated: list[bool] | None = None
    truncated: list[bool] | None = None
    final: dict[int, dict[str, Any]] = field(default_factory=dict)

    def _frame(self, observations: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"observations": observations, "infos": self.infos}
        if self.rewards is not None:
            data.update(
                rewards=self.rewards,
                terminated=self.terminated,
                truncated=self.truncated,
                final={str(index): value for index, value in self.final.items()},
            )
        return {"type": "batch_result", "data": data}

    def serialize(self) -> str:
        return dumps(self._frame(self.observations))

    def serialize_binary(self, dtype: np.dtype | None) -> bytes:
        """The binary form (see the module docstring): observations as raw ``dtype`` bytes (with
        ``None``, as they are: wire objects); infos and ``final`` packed as they are.

        Raises:
            ProtocolError: the observations are not wire objects of equal-shaped numbers.
        """
        import numpy as np  # only binary sessions need it; plain servers stay numpy-free

        if dtype is None:
            return arrays.pack(self._frame(self.observations), reuse_headers=False)
        try:
            items = [item["observation"] if isinstance(item, dict) else item for item in self.observations]
            array = np.ascontiguousarray(items, dtype=dtype)
        except (KeyError, TypeError, ValueError) as exc:
            raise invalid(f"observations do not stack into one {dtype} array: {exc}") from exc
        return arrays.pack(self._frame(array), reuse_headers=False)  # its flags are lists: json's walk is faster

    def check(self, size: int | None = None) -> None:
        """Raise :class:`ProtocolError` if the lists disagree in length or ``final`` is malformed."""
        if size is None:
            if not isinstance(self.observations, list):
                raise invalid("batch_result observations must be a list")
            size = len(self.observations)
        lists: dict[str, object] = {"observations": self.observations, "infos": self.infos}
        if self.rewards is not None:
            lists.update(rewards=self.rewards, terminated=self.terminated, truncated=self.truncated)
        for name, values in lists.items():
            if not isinstance(values, list) or len(values) != size:
                raise invalid(f"batch_result {name} must be a list of {size} items")
        if any(not 0 <= index < size for index in self.final):
            raise invalid(f"batch_result final has an index outside 0..{size - 1}")

    def __str__(self) -> str:
        return f"batch_result of {len(self.observations)} rewards={elide(self.rewards)}"


BatchSnapshotRequests = BatchSnapshotRequest | BatchRestoreRequest | ReleaseRequest


def parse_batch_client_frame(
    message: str | bytes,
) -> BatchResetFrame | BatchStepFrame | BatchCallFrame | RenderRequest | CloseFrame | BatchSnapshotRequests:
    """Parse one message a client sends on a batch session.

    Raises:
        ProtocolError: INVALID_JSON, UNKNOWN_TYPE (plain reset/step included: this session
            speaks only batch frames) or VALIDATION_ERROR.
    """
    frame = _packed_object(message) if arrays.is_packed(message) else load_object(message)
    kind = frame.get("type")
    if kind == MessageType.CLOSE.value:
        return CloseFrame()
    if kind == MessageType.RENDER.value:  # every sub-env's frame, in the session's render mode
        return RenderRequest()
    if kind in (MessageType.SNAPSHOT.value, MessageType.RESTORE.value, MessageType.RELEASE.value):
        return parse_batch_snapshot_request(str(kind), frame)
    data = data_object(frame, str(kind))
    if kind == MessageType.BATCH_STEP.value:
        actions = data.get("actions")
        if not isinstance(actions, list) or not all(isinstance(action, dict) for action in actions):
            raise invalid("batch_step needs data.actions, a list of action objects")
        return BatchStepFrame(actions)
    if kind == MessageType.BATCH_RESET.value:
        seeds, options, mask = data.get("seeds"), data.get("options"), data.get("mask")
        if seeds is not None and not (
            isinstance(seeds, list)
            and all(s is None or (isinstance(s, int) and not isinstance(s, bool)) for s in seeds)
        ):
            raise invalid("batch_reset seeds must be null or a list of integers and nulls")
        if options is not None and not isinstance(options, dict):
            raise invalid("batch_reset options must be null or an object")
        if mask is not None and not (isinstance(mask, list) and all(isinstance(m, bool) for m in mask)):
            raise invalid("batch_reset mask must be null or a list of booleans")
        return BatchResetFrame(seeds, options, mask)
    if kind == MessageType.BATCH_CALL.value:
        op, name = data.get("op"), data.get("name")
        if op not in ("get", "set", "call", "wrapped"):
            raise invalid("batch_call op must be 'get', 'set', 'call' or 'wrapped'")
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise invalid(f"batch_call name must be a public attribute name, got {name!r}")
        args, kwargs, values = data.get("args") or [], data.get("kwargs") or {}, data.get("values")
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise invalid("batch_call args must be a list and kwargs an object")
        if op == "set" and not isinstance(values, list):
            raise invalid("batch_call set needs values, a list with one value per sub-env")
        envs = data.get("envs")
        if envs is not None and not (
            isinstance(envs, list) and all(isinstance(e, int) and not isinstance(e, bool) and e >= 0 for e in envs)
        ):
            raise invalid("batch_call envs must be null or a list of sub-env indices")
        return BatchCallFrame(op, name, args, kwargs, values, envs)
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE.value,
        f"Unknown message type: {kind} (a batch session takes batch_reset, batch_step, batch_call, render, "
        "snapshot, restore, release and close)",
    )


def _packed_object(message: str | bytes) -> dict[str, Any]:
    """A packed request (a binary codec's ``batch_step``: actions keep the caller's dtypes)."""
    assert not isinstance(message, str)  # is_packed said so
    frame = arrays.unpack(message)
    if not isinstance(frame, dict):
        raise invalid("a packed message must hold one frame object")
    return frame


BatchServerFrame = BatchResultFrame | BatchValuesFrame | RenderFrame | ErrorFrame | BatchSnapshotFrame | SnapshotFrame


def parse_batch_server_frame(message: str | bytes) -> BatchServerFrame:
    """Parse one message a server sends on a batch session.

    Raises:
        ProtocolError: the message is not a well-formed batch result, render or error frame.
    """
    if not isinstance(message, str) and arrays.is_packed(message):
        return _parse_binary_result(message)
    frame = load_object(message)
    return _batch_result(frame, message)


def _parse_binary_result(message: bytes) -> BatchServerFrame:
    """The binary form of a batch result (its observations become one array of shape (K, ...)),
    or of a render frame."""
    import numpy as np

    frame = arrays.unpack(message)
    if isinstance(frame, dict) and frame.get("type") == MessageType.RENDER.value:
        return RenderFrame.from_object(frame)
    if isinstance(frame, dict) and frame.get("type") == MessageType.BATCH_VALUES.value:
        return _batch_result(frame, message)
    try:
        observations = frame["data"]["observations"]
    except (KeyError, TypeError):
        raise invalid("malformed binary batch result: no data.observations") from None
    if isinstance(observations, np.ndarray) and observations.ndim > 0:
        frame["data"]["observations"] = list(observations)
    elif not isinstance(observations, list):  # wire objects, for a space that is not a Box
        raise invalid("malformed binary batch result: observations are neither one array nor a list")
    return _batch_result(frame, message)


def _batch_result(frame: dict[str, Any], message: str | bytes) -> BatchServerFrame:
    if frame.get("type") == MessageType.SNAPSHOT.value:
        return parse_batch_snapshot_frame(frame)
    if frame.get("type") == MessageType.BATCH_VALUES.value:
        values = data_object(frame, "batch_values").get("values")
        if not isinstance(values, list):
            raise invalid("batch_values needs data.values, a list")
        return BatchValuesFrame(values)
    if frame.get("type") != MessageType.BATCH_RESULT.value:
        parsed = parse_server_frame(message)
        if isinstance(parsed, (ErrorFrame, RenderFrame)):
            return parsed
        raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"expected batch_result, got {frame.get('type')!r}")
    data = data_object(frame, "batch_result")
    try:
        final = {int(index): value for index, value in (data.get("final") or {}).items()}
    except (AttributeError, ValueError):
        raise invalid("batch_result final must map sub-env indices to results") from None
    # Wire values, whatever they are: result.check() below refuses what is not a list of K items.
    observations: Any = data.get("observations")
    infos: Any = data.get("infos")
    result = BatchResultFrame(
        observations=observations,
        infos=infos,
        rewards=data.get("rewards"),
        terminated=data.get("terminated"),
        truncated=data.get("truncated"),
        final=final,
    )
    result.check()
    return result
