"""Snapshots of a vector env's sub-envs: taken, restored and released per block, and a sub-env forked
into a new vector env (the shape tree search uses).

A sub-env's snapshot is a :class:`~openenv_gym.snapshot.Snapshot` like a single env's: kept by its
server, under an id any session of that server restores, so a handle from
``env.unwrapped.snapshot()`` restores into a sub-env of the same server and back. A restore is a
masked reset into kept states: every block holding a chosen sub-env gets one request, all sent
before any reply is read, and the codec assembles the replies as it does a masked reset's.
Only batch sessions (``vector_backend="per_env"``) hold one env per sub-env; the other kinds of
block refuse (:attr:`Block.snapshot_refusal <openenv_gym.vector.block.Block.snapshot_refusal>`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openenv_gym.errors import SnapshotError, SnapshotUnsupportedError
from openenv_gym.snapshot import Snapshot, falls_back, portable_bytes

from .block import Block
from .faults import ask_all, send_all

if TYPE_CHECKING:
    from .remote_vector_env import RemoteVectorEnv

__all__ = ["chosen_indices", "fork_sub_env", "release_sub_envs", "restore_sub_envs", "snapshot_sub_envs"]


def chosen_indices(indices: Sequence[int] | None, num_envs: int) -> tuple[int, ...]:
    """``indices`` checked (each a sub-env, none twice), or every sub-env's.

    Raises:
        ValueError: an index outside the vector env, or one given twice.
    """
    chosen = tuple(range(num_envs)) if indices is None else tuple(int(index) for index in indices)
    if not chosen or any(not 0 <= index < num_envs for index in chosen):
        raise ValueError(f"sub-env indices must be within 0..{num_envs - 1}, got {list(chosen)}")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"a sub-env is named twice in {list(chosen)}")
    return chosen


def _by_block(
    blocks: list[Block[Any]], indices: tuple[int, ...], env_id: str | None
) -> list[tuple[Block[Any], list[int]]]:
    """The blocks holding ``indices``, each with the positions in ``indices`` of its sub-envs.

    Raises:
        SnapshotUnsupportedError: one of them is of a kind that cannot snapshot its sub-envs.
    """
    grouped: list[tuple[Block[Any], list[int]]] = []
    for block in blocks:
        positions = [position for position, index in enumerate(indices) if block.start <= index < block.stop]
        if positions:
            if block.snapshot_refusal is not None:
                raise SnapshotUnsupportedError(
                    "SNAPSHOT_UNSUPPORTED", f"{block!r}: {block.snapshot_refusal}", {}, env_id
                )
            grouped.append((block, positions))
    return grouped


def snapshot_sub_envs(env: RemoteVectorEnv, indices: tuple[int, ...], portable: bool) -> list[Snapshot]:
    """One handle per sub-env of ``indices``, in their order."""
    grouped = _by_block(env._blocks, indices, env._name())
    blocks = [block for block, _ in grouped]
    asked = {id(block): tuple(indices[position] for position in positions) for block, positions in grouped}
    failures = send_all(blocks, lambda block: block.begin_snapshot(asked[id(block)], portable))
    replies: list[Any] = []
    error: BaseException | None = next((failure for failure in failures if failure is not None), None)
    for block, failure in zip(blocks, failures):
        reply = None
        if failure is None:
            try:
                reply = block.complete()
            except Exception as exc:
                error = error or exc
        replies.append(reply)
    if error is not None:  # all or none: what the other blocks kept would never be released
        for block, reply in zip(blocks, replies):
            if reply is not None:
                block.release(tuple(frame.id for frame in reply.snapshots))
        raise error
    handles: list[Snapshot] = [None] * len(indices)  # type: ignore[list-item]  # each filled below
    for (block, positions), reply in zip(grouped, replies):
        for position, frame in zip(positions, reply.snapshots, strict=True):
            handles[position] = Snapshot.of(frame, block.client.address)
    return handles


def restore_sub_envs(
    env: RemoteVectorEnv, handles: Sequence[Snapshot], indices: tuple[int, ...]
) -> tuple[Any, dict[str, Any]]:
    """Put sub-envs ``indices`` back into ``handles`` (one each); the vector env's observations and
    infos, as a masked reset of those sub-envs returns them.

    Raises:
        ValueError: not one handle per sub-env.
        SnapshotError: a handle of another server that holds no portable bytes, or one its server
            no longer keeps (without bytes to fall back on).
    """
    if len(handles) != len(indices):
        raise ValueError(f"restore needs one snapshot per sub-env: {len(handles)} for {len(indices)} sub-envs")
    grouped = _by_block(env._blocks, indices, env._name())
    blocks = [block for block, _ in grouped]

    def requests(from_bytes: bool) -> dict[int, tuple[Any, ...]]:
        """Per block: its sub-envs, and their ids where the block's server keeps them all, else their bytes."""
        made = {}
        for block, positions in grouped:
            mine = [handles[position] for position in positions]
            by_id = not from_bytes and all(handle.server == block.client.address for handle in mine)
            made[id(block)] = (
                tuple(indices[position] for position in positions),
                tuple(handle.id for handle in mine) if by_id else None,
                None if by_id else tuple(portable_bytes(handle, env._name()) for handle in mine),
            )
        return made

    asked = requests(from_bytes=False)
    try:
        results = ask_all(blocks, lambda block: block.begin_restore(*asked[id(block)]))
    except SnapshotError as exc:  # a kept id is gone: the handles' bytes, when they all have some
        if not all(falls_back(handle, exc) for handle in handles):
            raise
        asked = requests(from_bytes=True)
        results = ask_all(blocks, lambda block: block.begin_restore(*asked[id(block)]))
    mask = [index in indices for index in range(env.num_envs)]
    return env._codec.assemble_reset(env._blocks, {id(block): result for block, result in zip(blocks, results)}, mask)


def release_sub_envs(env: RemoteVectorEnv, handles: Sequence[Snapshot]) -> None:
    """Have the servers drop ``handles``' states: each block's session releases those it took."""
    for block in env._blocks:
        if block.snapshot_refusal is not None:
            continue
        ids = tuple(handle.id for handle in handles if handle.server == block.client.address)
        if ids:
            block.release(ids)


def fork_sub_env(env: RemoteVectorEnv, index: int, count: int, **kwargs: Any) -> RemoteVectorEnv:
    """A new vector env of ``count`` sub-envs made as ``env`` was (``kwargs`` override), one env per
    sub-env, each restored from sub-env ``index``'s portable snapshot."""
    from .remote_vector_env import RemoteVectorEnv

    if count < 1:
        raise ValueError(f"fork needs a count of at least 1, got {count}")
    (handle,) = snapshot_sub_envs(env, chosen_indices([index], env.num_envs), True)
    try:
        forked = RemoteVectorEnv(num_envs=count, **{**env._made_with, **kwargs, "vector_backend": "per_env"})
        try:
            restore_sub_envs(forked, [handle] * count, tuple(range(count)))
        except BaseException:
            forked.close()
            raise
    finally:
        release_sub_envs(env, [handle])
    return forked
