"""Snapshot, restore and fork a remote env: `Snapshot`, and the three calls for an env as ``gym.make`` wraps it.

The state lives on the server: :func:`snapshot` has it kept there and returns a handle,
:func:`restore` puts the env back into it (its random generators, the server's time limit and
wrappers included), :func:`fork` opens new sessions on the same server starting from it. A tree
search branches this way without replaying a prefix::

    import gymnasium as gym, openenv_gym
    from openenv_gym.snapshot import fork, restore, snapshot

    env = gym.make("openenv/CartPole-v1")
    env.reset(seed=0)
    root = snapshot(env)
    env.step(0)
    restore(env, root)                  # as if step(0) had not happened
    left, right = fork(env, 2)          # two more envs in this very state
    left.step(0), right.step(1)

The wrappers ``gym.make`` puts around the remote env on this side are part of the state too:
``TimeLimit``'s step count and ``OrderEnforcing``'s flag are saved in the handle and set again
on restore, and a fork gets copies of the wrappers. :class:`~openenv_gym.env.RemoteEnv`'s own
``snapshot()``, ``restore()`` and ``fork()`` (``env.unwrapped``) do the same for the bare env.

A handle's state is freed by :func:`release`, or when the session that took it closes. With
``portable=True`` it also holds the state as bytes, sealed by the server, which another server
of the same env restores when it shares the server's key (``OPENENV_GYM_SNAPSHOT_KEY``; a
handle is picklable, so it can travel). A server that cannot snapshot its env (its probe failed,
or it is an OpenEnv server, which has no snapshots) raises
:class:`~openenv_gym.errors.SnapshotUnsupportedError` with the reason, before anything is sent.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from .errors import SnapshotError, SnapshotUnsupportedError

if TYPE_CHECKING:
    from .env import RemoteEnv
    from .protocol.snapshot import SnapshotFrame

__all__ = ["Snapshot", "fork", "release", "restore", "snapshot"]

#: The per-episode attributes of Gymnasium's wrappers that a snapshot saves on this side.
WRAPPER_STATE: dict[type[gym.Wrapper[Any, Any, Any, Any]], tuple[str, ...]] = {
    gym.wrappers.TimeLimit: ("_elapsed_steps",),
    gym.wrappers.OrderEnforcing: ("_has_reset",),
}


@dataclasses.dataclass(frozen=True, eq=False)
class Snapshot:
    """A handle to a remote env's state, kept by its server.

    Attributes:
        id: the name the server keeps the state under (any session of that server may restore it).
        server: the session URL of the server that keeps it (``ws://host:port/ws``).
        size: the state's bytes on the server (what counts against the session's limit).
        portable: the state as sealed bytes, when taken with ``portable=True``.
        wrappers: the client-side wrappers' saved attributes, outermost first (see :data:`WRAPPER_STATE`).
        elapsed_steps: the steps an async env had counted towards its own time limit.
    """

    id: str
    server: str
    size: int
    portable: bytes | None = None
    wrappers: tuple[dict[str, Any], ...] = ()
    elapsed_steps: int = 0

    @classmethod
    def of(cls, frame: SnapshotFrame, server: str, elapsed_steps: int = 0) -> Snapshot:
        """The handle a ``snapshot`` reply from ``server`` gives."""
        assert frame.id is not None
        return cls(frame.id, server, frame.size, frame.portable, elapsed_steps=elapsed_steps)

    def __repr__(self) -> str:
        portable = f", portable={len(self.portable)} bytes" if self.portable is not None else ""
        return f"Snapshot({self.id!r}, {self.server}, {self.size} bytes{portable})"


def check_support(schema: Any, who: str, env_id: str | None) -> dict[str, Any]:
    """``/schema["snapshot"]`` of a server, if it says the env snapshots.

    Raises:
        SnapshotUnsupportedError: it says the env cannot (with its reason), or says nothing (an
            OpenEnv server, or an older one).
    """
    support = schema.get("snapshot") if isinstance(schema, dict) else None
    if isinstance(support, dict) and support.get("supported"):
        return support
    reason = (support or {}).get("reason") if isinstance(support, dict) else None
    raise SnapshotUnsupportedError(
        "SNAPSHOT_UNSUPPORTED",
        f"{who} cannot be snapshotted: {reason or 'its server has no snapshots (an OpenEnv server?)'}",
        {},
        env_id,
    )


def portable_bytes(handle: Snapshot, env_id: str | None) -> bytes:
    """The bytes to restore ``handle`` from where its id is not kept.

    Raises:
        SnapshotError: it holds none.
    """
    if handle.portable is None:
        raise SnapshotError(
            "SNAPSHOT_UNKNOWN",
            f"{handle!r} is not kept by this server and holds no bytes: take it with snapshot(portable=True) to "
            "restore it on another server, or after its session closed",
            {},
            env_id,
        )
    return handle.portable


def falls_back(handle: Snapshot, exc: SnapshotError) -> bool:
    """Whether a restore by id that failed with ``exc`` may be retried from the handle's bytes."""
    return handle.portable is not None and exc.code == "SNAPSHOT_UNKNOWN"


def _chain(env: gym.Env[Any, Any]) -> tuple[list[gym.Wrapper[Any, Any, Any, Any]], RemoteEnv]:
    """The wrappers around ``env``'s remote env, outermost first, and the remote env."""
    from .env import RemoteEnv

    wrappers = []
    while isinstance(env, gym.Wrapper):
        wrappers.append(env)
        env = env.env
    if not isinstance(env, RemoteEnv):
        raise TypeError(
            f"{env!r} is not a remote env: snapshots are of envs openenv-gym serves (gym.make('openenv/...'))"
        )
    return wrappers, env


def _saved(wrapper: gym.Wrapper[Any, Any, Any, Any]) -> dict[str, Any]:
    names = next((names for kind, names in WRAPPER_STATE.items() if isinstance(wrapper, kind)), ())
    return {name: getattr(wrapper, name) for name in names if hasattr(wrapper, name)}


def snapshot(env: gym.Env[Any, Any], *, portable: bool = False) -> Snapshot:
    """Have ``env``'s server keep its current state (and save its client-side wrappers'); returns the handle.

    Raises:
        SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
        SnapshotError: the session holds as many snapshots (or bytes) as the server allows.
    """
    wrappers, remote = _chain(env)
    taken = remote.snapshot(portable=portable)
    return dataclasses.replace(taken, wrappers=tuple(_saved(wrapper) for wrapper in wrappers))


def restore(env: gym.Env[Any, Any], handle: Snapshot) -> tuple[Any, dict[str, Any]]:
    """Put ``env`` back into the state ``handle`` names; returns that state's observation and info.

    The handle may be restored any number of times, into this env or another of the same server
    (a portable one: of any server sharing the key). An episode that had ended is ended again.

    Raises:
        SnapshotError: the server no longer keeps the state (released, or its session closed) and
            the handle holds no portable bytes, or the bytes were sealed elsewhere.
    """
    wrappers, remote = _chain(env)
    if handle.wrappers and len(handle.wrappers) != len(wrappers):  # refused before anything changes
        raise SnapshotError(
            "SNAPSHOT_REFUSED",
            f"the snapshot was taken under {len(handle.wrappers)} wrappers, this env has {len(wrappers)}",
        )
    result = remote.restore(handle)
    for wrapper, saved in zip(wrappers, handle.wrappers, strict=False):
        for name, value in saved.items():
            setattr(wrapper, name, value)
    return result


def fork(env: gym.Env[Any, Any], count: int) -> list[gym.Env[Any, Any]]:
    """``count`` new envs, each a new session on ``env``'s server starting from ``env``'s current state.

    Each is wrapped as ``env`` is (copies of its wrappers, their saved attributes set) and is
    independent of ``env`` and of the others from then on. They live on ``env``'s server:
    close them before ``env`` (closing ``env`` stops the server it started, ending theirs).

    Raises:
        SnapshotUnsupportedError: the env cannot be snapshotted.
        CapacityReachedError: the server has no session slot left for a fork.
    """
    wrappers, remote = _chain(env)
    children = remote.fork(count)
    forked: list[gym.Env[Any, Any]] = []
    for child in children:
        outer: gym.Env[Any, Any] = child
        for wrapper in reversed(wrappers):
            twin = copy.copy(wrapper)
            twin.env = outer
            outer = twin
        forked.append(outer)
    return forked


def release(env: gym.Env[Any, Any], *handles: Snapshot) -> None:
    """Have the server drop the states ``handles`` name (those taken by ``env``'s session; others are left)."""
    _, remote = _chain(env)
    remote.release(*handles)
