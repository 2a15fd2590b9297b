"""Vector sessions: a batch session backed by one server-side vector env (pure, no I/O).

A server whose env has a native vector implementation (Gymnasium's ``vector_entry_point``,
ALE's ``AtariVectorEnv``, EnvPool) lists it under ``/schema["vector_backends"]``::

    {"gymnasium": {"entry_point": "...:CartPoleVectorEnv", "autoreset_modes": ["NextStep"],
                   "render_modes": ["rgb_array"], "render_fps": 50,
                   "observation_space": {...}, "action_space": {...}}}

A client opens ``/ws/batch?envs=K&autoreset_mode=NextStep&backend=gymnasium``; the server builds
that vector env once for the connection, and each request is one call of it. Every value stays
an array (or a dict of arrays: Gymnasium's vector infos with their ``_key`` masks), packed by
:mod:`openenv_gym.protocol.arrays`: binary on a connection that negotiated the binary
subprotocol (requests too), JSON otherwise::

    -> {"type":"vector_reset","data":{"seed":0,"options":null,"mask":null}}
    <- {"type":"vector_result","data":{"observations":{"$array":...},"infos":{...}}}
    -> {"type":"vector_step","data":{"actions":{"$array":...}}}
    <- {"type":"vector_result","data":{"observations":...,"rewards":...,"terminated":...,
        "truncated":...,"infos":{...}}}

Each backend keeps its own autoreset mode and reports the modes it serves; which backend a
client uses is :func:`choose_vector_backend`'s answer. With ``&render_mode=`` in the query the
vector env is made in that render mode (one of its ``render_modes``), and a
``{"type":"render"}`` frame gets what its ``render()`` returns, packed as a ``render`` frame.
A ``batch_call`` frame (:class:`~openenv_gym.protocol.batch.BatchCallFrame`, for every sub-env)
is the vector env's own ``call``/``get_attr``/``set_attr``, answered by ``batch_values``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError
from . import arrays
from ._json import data_object, dumps, elide, invalid
from .batch import AutoresetMode, BatchCallFrame, BatchValuesFrame, parse_batch_client_frame
from .codes import ErrorCode, MessageType
from .frames import CloseFrame, ErrorFrame, RenderFrame, RenderRequest, parse_server_frame
from .shm import ShmOffer, ShmOpenFrame

__all__ = [
    "BACKEND_CHOICES",
    "OWN_VECTOR_ENVS",
    "VECTOR_BACKENDS",
    "VectorResetFrame",
    "VectorResultFrame",
    "VectorStepFrame",
    "choose_vector_backend",
    "parse_vector_client_frame",
    "parse_vector_server_frame",
]

#: The server-side vector envs a server may offer: ``"openenv_gym"`` is openenv-gym's own,
#: for the Gymnasium entry points in :data:`OWN_VECTOR_ENVS`.
VECTOR_BACKENDS = ("gymnasium", "envpool", "ale", "openenv_gym")
#: Gymnasium entry points openenv-gym vectorizes itself, and its vector env for each: every
#: autoreset mode, each sub-env stepping as the single env seeded ``seed + k`` would.
OWN_VECTOR_ENVS = {
    "gymnasium.envs.classic_control.cartpole:CartPoleEnv": "openenv_gym.envs.cartpole_vector:CartPoleVectorEnv",
}
#: What a client may ask for: one of those, ``"per_env"`` (one env per sub-env, as
#: ``SyncVectorEnv``), or ``"auto"`` (Gymnasium's own choice, see :func:`choose_vector_backend`).
BACKEND_CHOICES = ("auto", "per_env", *VECTOR_BACKENDS)


def choose_vector_backend(
    requested: str,
    autoreset_mode: AutoresetMode,
    offered: dict[str, dict[str, Any]],
    unavailable: dict[str, str] | None = None,
    render_mode: str | None = None,
) -> tuple[str | None, str]:
    """Which vector backend serves a vector env, and why; ``None`` means per-env stepping.

    ``"auto"`` follows ``gymnasium.make_vec``: the env's ``vector_entry_point`` when it has one
    that serves ``autoreset_mode`` (and renders in ``render_mode``, if one is asked for), else
    openenv-gym's own vector env of it (:data:`OWN_VECTOR_ENVS`) on the same terms, else one env
    per sub-env (which serves every mode). EnvPool is used only when asked for.

    Args:
        requested: one of :data:`BACKEND_CHOICES`.
        autoreset_mode: the mode the vector env must have.
        offered: the server's ``/schema["vector_backends"]`` (``{}`` if it has none).
        unavailable: the server's ``/schema["vector_backends_unavailable"]``: why it offers
            none of the others, for the error message.
        render_mode: the render mode the vector env must be made in, or ``None``; a backend
            renders the modes its entry's ``render_modes`` lists.

    Raises:
        ValueError: an unknown choice, or a backend forced that the server cannot serve in this
            mode or render in this render mode (the message says why).
    """
    if requested not in BACKEND_CHOICES:
        raise ValueError(f"vector_backend must be one of {list(BACKEND_CHOICES)}, got {requested!r}")
    if requested == "per_env":
        return None, "per_env asked for: one env per sub-env, as SyncVectorEnv"
    mode = autoreset_mode.value
    if requested == "auto":
        return _auto_backend(mode, offered, render_mode)
    backend = offered.get(requested)
    if backend is None:
        why = (unavailable or {}).get(requested, "the server does not offer it")
        raise ValueError(f"vector_backend={requested!r} cannot serve this env: {why}")
    if mode not in backend.get("autoreset_modes", ()):
        raise ValueError(
            f"vector_backend={requested!r} serves autoreset modes {backend.get('autoreset_modes')}, not {mode}"
        )
    if render_mode is not None and render_mode not in backend.get("render_modes", ()):
        raise ValueError(
            f"vector_backend={requested!r} renders {backend.get('render_modes', [])}, not render_mode={render_mode!r}: "
            "use vector_backend='per_env' (one env per sub-env, each rendering its own frame)"
        )
    return requested, f"{requested} asked for ({backend.get('entry_point')})"


_AUTO_BACKENDS = (("gymnasium", "the env's vector_entry_point"), ("openenv_gym", "openenv-gym's own vector env"))


def _auto_backend(mode: str, offered: dict[str, dict[str, Any]], render_mode: str | None) -> tuple[str | None, str]:
    """``"auto"``'s choice: the first of :data:`_AUTO_BACKENDS` that serves ``mode`` and ``render_mode``."""
    why_not = []
    for name, what in _AUTO_BACKENDS:
        backend = offered.get(name)
        if backend is None:
            if name == "gymnasium":
                why_not.append("the env has no vector_entry_point")
            continue
        label = f"{what} ({backend.get('entry_point')})"
        if mode not in backend.get("autoreset_modes", ()):
            why_not.append(f"{label} serves autoreset modes {backend.get('autoreset_modes')}, not {mode}")
        elif render_mode is not None and render_mode not in backend.get("render_modes", ()):
            why_not.append(f"{label} renders {backend.get('render_modes', [])}, not {render_mode!r}")
        else:
            return name, "; ".join([*why_not, label])
    return None, "; ".join(why_not) + ": one env per sub-env"


@dataclass(frozen=True)
class VectorResetFrame:
    """Reset the vector env (the sub-envs ``mask`` selects, through ``options["reset_mask"]``) with
    ``seed``: one, or one per sub-env (``None``: that one unseeded), as the vector env takes it."""

    seed: int | list[int | None] | None = None
    options: dict[str, Any] | None = None
    mask: list[bool] | None = None

    def serialize(self) -> str:
        return dumps({"type": "vector_reset", "data": {"seed": self.seed, "options": self.options, "mask": self.mask}})

    def __str__(self) -> str:
        return f"vector_reset seed={self.seed} mask={elide(self.mask)}"


@dataclass(frozen=True)
class VectorStepFrame:
    """Step the vector env with the batch of actions (an array, or a dict or tuple of arrays)."""

    actions: Any

    def _frame(self, actions: Any) -> dict[str, Any]:
        return {"type": "vector_step", "data": {"actions": actions}}

    def serialize(self) -> str:
        return arrays.to_json(self._frame(self.actions))

    def serialize_binary(self) -> bytes:
        return arrays.pack(self._frame(self.actions))

    def __str__(self) -> str:
        return f"vector_step {elide(self.actions)}"


@dataclass(frozen=True)
class VectorResultFrame:
    """What the vector env returned, as it returned it; a reset result has no rewards or flags."""

    observations: Any
    infos: dict[str, Any]
    rewards: Any = None
    terminated: Any = None
    truncated: Any = None

    def _frame(self) -> dict[str, Any]:
        data: dict[str, Any] = {"observations": self.observations, "infos": self.infos}
        if self.rewards is not None:
            data.update(rewards=self.rewards, terminated=self.terminated, truncated=self.truncated)
        return {"type": "vector_result", "data": data}

    def serialize(self) -> str:
        return arrays.to_json(self._frame())

    def serialize_binary(self) -> bytes:
        return arrays.pack(self._frame())

    def check(self, size: int) -> None:
        """Raise :class:`ProtocolError` unless rewards and flags are arrays of ``size`` items."""
        if not isinstance(self.infos, dict):
            raise invalid("vector_result infos must be an object")
        for name in ("rewards", "terminated", "truncated"):
            value = getattr(self, name)
            if value is not None and getattr(value, "shape", None) != (size,):
                raise invalid(f"vector_result {name} must be an array of {size} items")

    def __str__(self) -> str:
        return f"vector_result rewards={elide(self.rewards)}"


def _load(message: str | bytes) -> dict[str, Any]:
    frame = arrays.from_json(message) if isinstance(message, str) else arrays.unpack(message)
    if not isinstance(frame, dict):
        raise invalid(f"a frame must be an object, got {type(frame).__name__}")
    return frame


def _is_seed(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def parse_vector_client_frame(
    message: str | bytes,
) -> VectorResetFrame | VectorStepFrame | BatchCallFrame | RenderRequest | CloseFrame | ShmOpenFrame:
    """Parse one message a client sends on a vector session (text, or packed binary).

    Raises:
        ProtocolError: INVALID_JSON, UNKNOWN_TYPE or VALIDATION_ERROR.
    """
    if not isinstance(message, str) and not arrays.is_packed(message):
        raise invalid("a binary frame on a vector session must be a packed message")
    frame = _load(message)
    kind = frame.get("type")
    if kind == MessageType.CLOSE.value:
        return CloseFrame()
    if kind == MessageType.RENDER.value:  # the vector env's render(), in its render mode
        return RenderRequest()
    if kind == MessageType.SHM_OPEN.value:  # steps through shared memory (openenv_gym.protocol.shm)
        return ShmOpenFrame()
    if kind == MessageType.BATCH_CALL.value:  # checked as a batch session checks it
        call = parse_batch_client_frame(message)
        assert isinstance(call, BatchCallFrame)
        return call
    data = data_object(frame, str(kind))
    if kind == MessageType.VECTOR_STEP.value:
        if "actions" not in data:
            raise invalid("vector_step needs data.actions, the batch of actions")
        return VectorStepFrame(data["actions"])
    if kind == MessageType.VECTOR_RESET.value:
        seed, options, mask = data.get("seed"), data.get("options"), data.get("mask")
        if not (_is_seed(seed) or (isinstance(seed, list) and all(_is_seed(item) for item in seed))):
            raise invalid("vector_reset seed must be null, an integer or a list of them (one per sub-env)")
        if options is not None and not isinstance(options, dict):
            raise invalid("vector_reset options must be null or an object")
        if mask is not None and not (isinstance(mask, list) and all(isinstance(m, bool) for m in mask)):
            raise invalid("vector_reset mask must be null or a list of booleans")
        return VectorResetFrame(seed, options, mask)
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE.value,
        f"Unknown message type: {kind} (a vector session takes vector_reset, vector_step, batch_call, render, "
        "shm_open and close)",
    )


def parse_vector_server_frame(
    message: str | bytes,
) -> VectorResultFrame | BatchValuesFrame | RenderFrame | ShmOffer | ErrorFrame:
    """Parse one message a server sends on a vector session.

    Raises:
        ProtocolError: the message is not a well-formed vector result, render or error frame.
    """
    frame = _load(message)
    if frame.get("type") == MessageType.RENDER.value:
        return RenderFrame.from_object(frame)
    if frame.get("type") == MessageType.SHM_OFFER.value:
        return ShmOffer.from_data(data_object(frame, "shm_offer"))
    if frame.get("type") == MessageType.BATCH_VALUES.value:
        values = data_object(frame, "batch_values").get("values")
        if not isinstance(values, list):
            raise invalid("batch_values needs data.values, a list")
        return BatchValuesFrame(values)
    if frame.get("type") != MessageType.VECTOR_RESULT.value:
        if isinstance(message, str):
            parsed = parse_server_frame(message)
            if isinstance(parsed, ErrorFrame):
                return parsed
        raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"expected vector_result, got {frame.get('type')!r}")
    data = data_object(frame, "vector_result")
    if "observations" not in data or not isinstance(data.get("infos"), dict):
        raise invalid("vector_result needs data.observations and data.infos (an object)")
    return VectorResultFrame(
        data["observations"], data["infos"], data.get("rewards"), data.get("terminated"), data.get("truncated")
    )
