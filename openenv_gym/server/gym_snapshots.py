"""A Gymnasium env's whole state as bytes and back: what `GymEnvironment.snapshot()` and `restore()` do.

The generic path pickles the env as ``gym.make`` built it, wrappers and all, so the time limit's
step count, the order enforcer's flag and every random generator (``np_random``, the spaces')
come back as they were. What belongs to the process rather than to the state is kept by
reference (pickle's persistent ids) and, on restore, taken from the env being restored into: the
spec, and the renderer's window, surface and clock. So are the specs and spaces the env was made
with (:class:`Made`), which are part of its configuration: a state refers to each by its place in
the wrapper chain, and carries a space's random generator. One the env has since replaced with
another object is pickled whole.

ALE's envs have a native path: pickling ``AtariEnv`` rebuilds a fresh emulator from its
constructor's arguments (``EzPickle``), which would be a silently wrong state. Their emulator is
kept by reference too, and its state travels as ``ale.cloneState(include_rng=True)``.

Whether either path is right for an env is not assumed: :func:`probe` checks it once per
server, on a fresh env, and the server refuses snapshots of an env that failed it.
"""

from __future__ import annotations

import contextvars
import copy
import copyreg
import dataclasses
import io
import json
import math
import pickle
import struct
import sys
from typing import Any

import gymnasium as gym
import numpy as np

from ..errors import SnapshotRefusedError

__all__ = [
    "Made",
    "dump_state",
    "load_state",
    "made",
    "probe",
    "release_replaced",
    "snapshot_method",
]

#: Steps the probe takes before its snapshot, and after it on each branch.
PROBE_STEPS_BEFORE, PROBE_STEPS_AFTER = 3, 8
_CONFIG_LENGTH = struct.Struct(">I")
#: Seconds the probe may take before the env is called not snapshottable (its steps are too slow to check).
PROBE_TIMEOUT = 5.0


def _is_ale(unwrapped: Any) -> bool:
    return type(unwrapped).__module__.startswith("ale_py") and hasattr(unwrapped, "ale")


def snapshot_method(env: gym.Env[Any, Any]) -> str:
    """How ``env``'s state is copied: ``"ale"`` (the emulator's own clone) or ``"pickle"``."""
    return "ale" if _is_ale(env.unwrapped) else "pickle"


#: Spaces whose only state is their random generator: a state refers to these, when the env still
#: has the ones it was made with. A composite space (Dict, Tuple...) holds its parts' generators.
_PLAIN_SPACES = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiBinary,
    gym.spaces.MultiDiscrete,
    gym.spaces.Text,
)
#: What a state refers to where the env was made with it: its specs (each wrapper has one) and plain spaces.
_CONFIGURATION = (gym.envs.registration.EnvSpec, *_PLAIN_SPACES)


def _chain(env: gym.Env[Any, Any]) -> list[Any]:
    """``env`` and every env it wraps, outermost first."""
    chain = [env]
    while isinstance(env, gym.Wrapper):
        env = env.env
        chain.append(env)
    return chain


@dataclasses.dataclass(frozen=True)
class Made:
    """How an env was made, computed once by its host (a restore keeps it).

    Attributes:
        config: its id, the arguments ``gym.make`` took, its time limit and spaces, as bytes: a
            state carries it and loads only into an env made the same way (a state would
            otherwise bring its own arguments along: a FrozenLake of 8x8 behind a server
            publishing 4x4).
        parts: the specs and plain spaces it was made with, by their place in the wrapper chain
            (``"made:<depth>.<attribute>"``): a state refers to them rather than holding them.
        places: each part's name, and the depth and attribute where the env holds it.
    """

    config: bytes
    parts: dict[str, Any]
    places: tuple[tuple[str, int, str], ...]


def made(env: gym.Env[Any, Any]) -> Made:
    """:class:`Made` of ``env``, as it is now (call it on an env as made, before it is restored)."""
    spec = env.spec
    config = [spec.id, spec.kwargs, spec.max_episode_steps] if spec is not None else [type(env.unwrapped).__qualname__]
    config += [repr(env.observation_space), repr(env.action_space)]
    parts, places = {}, []
    for depth, level in enumerate(_chain(env)):
        for attribute, value in vars(level).items():
            if isinstance(value, _CONFIGURATION):
                name = f"made:{depth}.{attribute}"
                parts[name] = value
                places.append((name, depth, attribute))
    return Made(json.dumps(config, sort_keys=True, default=repr).encode(), parts, tuple(places))


def _parts_in_place(env: gym.Env[Any, Any], how: Made) -> dict[str, Any]:
    """Those of ``how.parts`` that ``env`` still holds where it was made with them."""
    chain = _chain(env)
    return {
        name: how.parts[name]
        for name, depth, attribute in how.places
        if depth < len(chain) and vars(chain[depth]).get(attribute) is how.parts[name]
    }


def _shared(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """What the state refers to without holding it, by name: the same names in every env of its kind."""
    unwrapped = env.unwrapped
    shared: dict[str, Any] = {}
    if unwrapped.spec is not None:
        shared["spec"] = unwrapped.spec
    if _is_ale(unwrapped):
        shared["unwrapped"] = unwrapped
    if "pygame" in sys.modules:  # a renderer's window, surface or clock exists only once pygame is imported
        for name, value in vars(unwrapped).items():
            if type(value).__module__.split(".")[0] == "pygame":
                shared[f"attribute:{name}"] = value
    return shared


class _NoSeed(np.random.SeedSequence):
    """Seeds a bit generator with zeros, at once: its state is set right after (seeding properly
    costs most of unpickling a ``Generator``, whose state then replaces it anyway). A
    ``SeedSequence`` (made once), as bit generators take; only its :meth:`generate_state` is used."""

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray[Any, Any]:
        return np.zeros(n_words, dtype=dtype)


_NO_SEED = _NoSeed(0)


def _generator(bit_generator_type: type[np.random.BitGenerator], state: dict[str, Any]) -> np.random.Generator:
    bit_generator = bit_generator_type(_NO_SEED)
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def _reduce_generator(generator: np.random.Generator) -> tuple[Any, ...]:
    # numpy's own reduce carries the seed sequence and re-seeds on load, 15x slower than this.
    return _generator, (type(generator.bit_generator), generator.bit_generator.state)


#: While a state loads: what its shared names stand for in the env it is loaded into.
_LIVE: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("live")


def _live(name: str) -> Any:
    # A name the live env lacks (it has not rendered yet, say) reads as None: made again when needed.
    return _LIVE.get().get(name)


def _pickler(file: io.BytesIO, shared: dict[str, Any]) -> pickle.Pickler:
    """A pickler writing each of ``shared`` as its name (to be looked up again on load), and generators fast.

    Shared objects are found by type in the pickler's dispatch table, a lookup in C: pickle's
    ``persistent_id`` would call back into Python for every object and double the cost.
    """
    names = {id(value): name for name, value in shared.items()}

    def reduce_shared(obj: Any) -> Any:
        name = names.get(id(obj))
        return (_live, (name,)) if name is not None else obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)

    pickler = pickle.Pickler(file, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {
        **copyreg.dispatch_table,
        np.random.Generator: _reduce_generator,
        **{type(value): reduce_shared for value in shared.values()},
    }
    return pickler


def dump_state(env: gym.Env[Any, Any], extra: Any, how: Made) -> bytes:
    """``env``'s state and ``extra`` (what its host keeps besides: episode id, step count...) as bytes:
    the configuration of ``how`` it was made (length-prefixed), then one pickle.

    Raises:
        TypeError, pickle.PicklingError: something in the env cannot be pickled (the message names it).
    """
    unwrapped: Any = env.unwrapped
    native = None
    if _is_ale(unwrapped):
        native = (unwrapped.ale.cloneState(include_rng=True), unwrapped.np_random)
    parts = _parts_in_place(env, how)
    generators = {name: part._np_random for name, part in parts.items() if isinstance(part, gym.spaces.Space)}
    buffer = io.BytesIO()
    buffer.write(_CONFIG_LENGTH.pack(len(how.config)) + how.config)
    _pickler(buffer, _shared(env) | parts).dump((env, native, generators, extra))
    return buffer.getvalue()


def load_state(state: bytes, live: gym.Env[Any, Any], how: Made) -> tuple[gym.Env[Any, Any], Any]:
    """The env chain and ``extra`` that :func:`dump_state` wrote, set up in place of ``live`` (an env
    made as ``how`` says, whose process resources, specs and spaces it takes; the spaces' generators
    are set to the state's); ``live`` is otherwise left as it was unless the env is ALE's, whose one
    emulator it shares and whose state is set here.

    Raises:
        SnapshotRefusedError: the state is of an env made otherwise than ``live``; nothing is loaded.
    """
    (length,) = _CONFIG_LENGTH.unpack_from(state)
    config = state[_CONFIG_LENGTH.size : _CONFIG_LENGTH.size + length]
    if config != how.config:
        raise SnapshotRefusedError(
            f"the snapshot is of an env made as {config.decode(errors='replace')[:300]}, this one as "
            f"{how.config.decode(errors='replace')[:300]}"
        )
    pickled = memoryview(state)[_CONFIG_LENGTH.size + length :]
    token = _LIVE.set(_shared(live) | how.parts)
    try:
        env, native, generators, extra = pickle.loads(pickled)
    finally:
        _LIVE.reset(token)
    for name, generator in generators.items():
        how.parts[name]._np_random = generator
    if native is not None:
        ale_state, np_random = native
        unwrapped = env.unwrapped
        unwrapped.ale.restoreState(ale_state)
        unwrapped.np_random = np_random
    return env, extra


def release_replaced(old: gym.Env[Any, Any], new: gym.Env[Any, Any]) -> None:
    """Close ``old``, which a loaded state replaced, without what ``new`` took over from it (its
    pygame window, ALE's emulator): resources of its own (a renderer made since) go with it."""
    if old.unwrapped is new.unwrapped:  # ALE: one emulator, restored in place
        return
    shared = _shared(old)
    for name in shared:
        if name.startswith("attribute:"):
            setattr(old.unwrapped, name.removeprefix("attribute:"), None)
    try:
        old.close()
    except Exception:  # a close that fails must not fail the restore, which has happened
        pass


def _same(a: Any, b: Any) -> bool:
    """Whether two step results are equal, arrays by value and NaN equal to NaN."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _run(env: gym.Env[Any, Any], actions: list[Any]) -> list[Any]:
    trajectory = []
    for action in actions:
        result = env.step(action)
        trajectory.append(result)
        if result[2] or result[3]:
            break
    return trajectory


def probe(env: gym.Env[Any, Any]) -> str | None:
    """Why ``env``'s state cannot be copied exactly, or ``None`` when it can.

    On ``env`` (a fresh env, which it resets and steps): a few seeded steps, a snapshot, more
    steps; then the snapshot restored into the same env and the same actions again. Both branches
    must give equal observations, rewards, flags and infos.
    """
    try:
        how = made(env)
        # The spaces as made, to tell one changed in place (a spec is never changed: not copied,
        # as its arguments may hold what cannot be)
        as_made = {name: copy.deepcopy(part) for name, part in how.parts.items() if isinstance(part, gym.spaces.Space)}
        env.reset(seed=0)
        space = env.action_space
        space.seed(0)
        actions = [space.sample() for _ in range(PROBE_STEPS_BEFORE + PROBE_STEPS_AFTER)]
        _run(env, actions[:PROBE_STEPS_BEFORE])
        state = dump_state(env, None, how)
        first = _run(env, actions[PROBE_STEPS_BEFORE:])
        restored, _ = load_state(state, env, how)
        second = _run(restored, actions[PROBE_STEPS_BEFORE:])
    except Exception as exc:
        return f"copying its state failed: {type(exc).__name__}: {exc}"
    if not _same(first, second):
        return (
            f"a copy of its state does not replay the same steps (the env keeps state pickling does not copy; "
            f"checked by replaying {PROBE_STEPS_AFTER} seeded steps)"
        )
    changed = [name for name, space in as_made.items() if how.parts[name] != space]
    if changed:  # a state refers to the spaces as made: one changed in place would not come back
        return f"the env changed its spaces in place while it stepped ({', '.join(changed)})"
    return None
