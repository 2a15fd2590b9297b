"""Batching of a vector env's sub-envs: batches cut into blocks and joined, vector infos, seeds and reset masks.

With a vector backend each block of sub-envs is one vector env on its server, so its results
arrive as batch arrays and Gymnasium's vector infos (``{"key": array, "_key": mask}``). These
functions cut the caller's batch into blocks and join the blocks' results, leaving every array's
dtype as its backend made it; with one block, its results are the vector env's own. They also read
``reset``'s ``seed`` and ``options["reset_mask"]`` as SyncVectorEnv does, and guess whether one
server will step every sub-env as one vector env.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from openenv_gym.protocol.vector import OWN_VECTOR_ENVS, VectorResultFrame

# ALE's ids exist once ale-py is imported; a trainer need not import it to guess the layout.
_ALE_MODES = ("NextStep", "SameStep")

__all__ = [
    "block_seed",
    "check_batch",
    "join_batches",
    "join_infos",
    "join_taken",
    "likely_one_vector_env",
    "lost_result",
    "reset_mask",
    "seed_list",
    "slice_batch",
    "take_batches",
]


def slice_batch(value: Any, start: int, stop: int) -> Any:
    """Sub-envs ``start:stop`` of a batch (an array, or a dict or tuple of them)."""
    if isinstance(value, dict):
        return {key: slice_batch(item, start, stop) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(slice_batch(item, start, stop) for item in value)
    return value[start:stop]


def join_batches(values: list[Any]) -> Any:
    """The blocks' batches joined in order, as new writable arrays (a received array is a
    read-only view of its message)."""
    first = values[0]
    if isinstance(first, dict):
        return {key: join_batches([value[key] for value in values]) for key in first}
    if isinstance(first, tuple):
        return tuple(join_batches([value[index] for value in values]) for index in range(len(first)))
    return np.concatenate(values) if len(values) > 1 else np.array(first)


def take_batches(values: list[Any]) -> Any:
    """:func:`join_batches`, except that one block's array made for this result alone (writable and
    owning its data: a shared-memory reply's copy out of the segment) is handed on, not copied again."""
    if len(values) == 1 and isinstance(values[0], np.ndarray) and values[0].flags.owndata and values[0].flags.writeable:
        return values[0]
    return join_batches(values)


def join_infos(parts: list[tuple[int, int, dict[str, Any]]], num_envs: int) -> dict[str, Any]:
    """One vector info from each block's ``(start, size, info)``.

    A key's arrays land at their blocks' places (zeros elsewhere, as Gymnasium fills them), its
    ``_key`` mask set where each block's own mask (without one: every sub-env of the block) says.
    Arrays that differ in dtype or shape between blocks, and values that are no array of the
    block's length, are joined in an object array. Nested dicts are joined the same way.
    """
    if len(parts) == 1 and parts[0][:2] == (0, num_envs):
        return parts[0][2]
    keys = list(dict.fromkeys(key for _, _, info in parts for key in info))
    joined: dict[str, Any] = {}
    for key in keys:
        if key.startswith("_") and key[1:] in keys:
            continue  # a mask: rebuilt with its key
        present = [(start, size, info[key], info.get(f"_{key}")) for start, size, info in parts if key in info]
        if all(isinstance(value, dict) for _, _, value, _ in present):
            joined[key] = join_infos([(start, size, value) for start, size, value, _ in present], num_envs)
        else:
            joined[key] = _join_values(present, num_envs)
        mask = np.zeros(num_envs, dtype=np.bool_)
        for start, size, _, own in present:
            mask[start : start + size] = own if isinstance(own, np.ndarray) and own.shape == (size,) else True
        joined[f"_{key}"] = mask
    return joined


def _join_values(present: list[tuple[int, int, Any, Any]], num_envs: int) -> np.ndarray:
    arrays = [value for _, size, value, _ in present if isinstance(value, np.ndarray) and value.shape[:1] == (size,)]
    kinds = {(array.dtype, array.shape[1:]) for array in arrays}
    if len(arrays) == len(present) and len(kinds) == 1:
        dtype, rest = kinds.pop()
        full = (
            np.zeros((num_envs, *rest), dtype=dtype) if not dtype.hasobject else np.full(num_envs, None, dtype=object)
        )
        for start, size, value, _ in present:
            full[start : start + size] = value
        return full
    full = np.full(num_envs, None, dtype=object)
    for start, size, value, _ in present:
        items = list(value) if isinstance(value, np.ndarray) and value.shape[:1] == (size,) else [value] * size
        for offset, item in enumerate(items):
            full[start + offset] = item
    return full


def _failure_infos(size: int, reason: str, key: str) -> dict[str, Any]:
    """The vector info of a block whose sub-envs were lost: ``key`` holds why, for each one."""
    reasons = np.empty(size, dtype=object)
    reasons[:] = [reason] * size
    return {key: reasons, f"_{key}": np.ones(size, dtype=np.bool_)}


def lost_result(last: VectorResultFrame, reason: str, key: str) -> VectorResultFrame:
    """What a lost block reports: its last observations, no reward, truncated, and why."""
    size = len(last.terminated) if last.terminated is not None else _batch_length(last.observations)
    reward_dtype = last.rewards.dtype if last.rewards is not None else np.float64
    return VectorResultFrame(
        join_batches([last.observations]),  # a copy: the caller may hold (and write) the last ones
        _failure_infos(size, reason, key),
        np.zeros(size, dtype=reward_dtype),
        np.zeros(size, dtype=np.bool_),
        np.ones(size, dtype=np.bool_),
    )


def _batch_length(value: Any) -> int:
    if isinstance(value, dict):
        return _batch_length(next(iter(value.values())))
    if isinstance(value, tuple):
        return _batch_length(value[0])
    return len(value)


def block_seed(seeds: list[int | None], start: int, stop: int) -> int | list[int | None] | None:
    """The seed of the block of sub-envs ``start`` to ``stop``, from the vector env's seeds per
    sub-env: ``[s, s + 1, ...]`` (what ``reset(seed=s)`` means) seeds that block with ``s + start``,
    so that one block is seeded exactly as ``gymnasium.make_vec(...).reset(seed=s)``; other seeds
    go as the block's own list, which the server-side vector env takes as it does in-process
    (``SyncVectorEnv`` seeds each sub-env with its own, ``CartPoleVectorEnv`` refuses a list).
    """
    first = seeds[0]
    if first is None and all(item is None for item in seeds):
        return None
    if isinstance(first, int) and seeds == [first + index for index in range(len(seeds))]:
        return first + start
    return seeds[start:stop]


def likely_one_vector_env(server: str | None, requested: str, mode: str) -> bool:
    """Whether the server will likely run a vector env for ``server``: then one server hosts
    every sub-env by default (one vector env steps them all; a second server would only add
    a round trip). A guess from this process's Gymnasium registry; the server decides."""
    if server is None or requested == "per_env":
        return False
    if requested != "auto":
        return True
    if server.startswith("ALE/"):
        return mode in _ALE_MODES
    import gymnasium as gym

    try:
        spec = gym.spec(server)
        if isinstance(spec.entry_point, str) and spec.entry_point in OWN_VECTOR_ENVS:
            return True  # openenv-gym's own vector env serves every mode
        if spec.vector_entry_point is None:
            return False
        entry_point: Any = spec.vector_entry_point
        if isinstance(entry_point, str):
            entry_point = gym.envs.registration.load_env_creator(entry_point)
    except Exception:  # not registered here, or its module not importable: no guess
        return False
    if "autoreset_mode" in inspect.signature(entry_point).parameters:
        return True
    served = getattr(entry_point, "metadata", {}).get("autoreset_mode")
    return served is not None and getattr(served, "value", served) == mode


def join_taken(
    taken: list[tuple[Any, VectorResultFrame]], batch_size: int
) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """``recv``'s batch of ``batch_size`` from the blocks' results in the order they came:
    ``infos["env_id"]`` their sub-envs, a reset's results zero rewards and false flags."""
    offsets = np.cumsum([0] + [block.size for block, _ in taken])
    infos = join_infos(
        [(int(offset), block.size, result.infos) for offset, (block, result) in zip(offsets, taken)], batch_size
    )
    infos["env_id"] = np.concatenate([np.arange(block.start, block.stop, dtype=np.int32) for block, _ in taken])
    stepped = [result.rewards for _, result in taken if result.rewards is not None]
    reward_dtype = stepped[0].dtype if stepped else np.float64
    rewards, terminated, truncated = [], [], []
    for block, result in taken:
        no_flags = np.zeros(block.size, dtype=np.bool_)
        rewards.append(result.rewards if result.rewards is not None else np.zeros(block.size, reward_dtype))
        terminated.append(result.terminated if result.terminated is not None else no_flags)
        truncated.append(result.truncated if result.truncated is not None else no_flags)
    return (
        join_batches([result.observations for _, result in taken]),
        join_batches(rewards),
        join_batches(terminated),
        join_batches(truncated),
        infos,
    )


def check_batch(actions: Any) -> Any:
    """``actions`` if they are a batch; a scalar raises the ``TypeError`` AsyncVectorEnv's ``iterate``
    raises (a vector env takes one action per sub-env)."""
    try:
        iter(actions)
    except TypeError as exc:
        raise TypeError(f"Unable to iterate over the following elements: {actions}") from exc
    return actions


def attr_values(values: Any, num_envs: int) -> list[Any]:
    """``set_attr``'s values, one per sub-env (one value is every sub-env's), checked as SyncVectorEnv checks them."""
    if not isinstance(values, (list, tuple)):
        values = [values] * num_envs
    if len(values) != num_envs:
        raise ValueError(
            f"Values must be a list or tuple with length equal to the number of environments. "
            f"Got `{len(values)}` values for {num_envs} environments."
        )
    return list(values)


def seed_list(seed: int | list[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed per sub-env, as SyncVectorEnv reads ``reset(seed=...)``: ``s`` is ``[s, s + 1, ...]``."""
    if seed is None:
        return [None] * num_envs
    seeds: list[int | None] = [seed + i for i in range(num_envs)] if isinstance(seed, int) else list(seed)
    if len(seeds) != num_envs:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={num_envs} but got length={len(seeds)}."
        )
    return seeds


def reset_mask(options: dict[str, Any] | None, num_envs: int) -> list[bool] | None:
    """``options["reset_mask"]`` (taken out of ``options``), checked as SyncVectorEnv checks it."""
    if options is None or "reset_mask" not in options:
        return None
    mask = options.pop("reset_mask")
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not np.any(mask):
        raise ValueError(
            f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
        )
    return mask.tolist()
