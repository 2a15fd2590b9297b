"""`BatchBlock`: sub-envs stepped one env each by a batch session, and `BatchCodec`, which joins their results.

A batch session (``/ws/batch``) steps every sub-env of its block in one frame; the server applies
Gymnasium's autoreset. Results arrive as lists of wire observations (arrays with the binary
codec), rewards and flags: :class:`BatchCodec` gathers them from every block as Python lists and
converts them once per step (per-block array slices cost more with one sub-env per block).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from copy import deepcopy
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from openenv_gym.client.batch_client import BatchClient
from openenv_gym.client.sync_connection import SyncConnection
from openenv_gym.errors import InvalidActionError
from openenv_gym.face import as_env_returns, holds_discrete
from openenv_gym.protocol.batch import BatchCallFrame, BatchResultFrame, Mask, Seeds
from openenv_gym.protocol.frames import observation_fields
from openenv_gym.protocol.vector import VectorResultFrame
from openenv_gym.spaces import ACTION_FIELD, OBSERVATION_FIELD, mismatch

from .batching import join_taken
from .block import Block, StepTuple

if TYPE_CHECKING:
    import gymnasium as gym

    from openenv_gym.face import SpacesFace

__all__ = ["BatchBlock", "BatchCodec"]


class BatchBlock(Block[BatchClient]):
    """Sub-envs ``start`` to ``stop`` in one batch session: one env each on the server."""

    def __init__(self, make_client: Callable[[str], Any], url: str, provider: Any, start: int, stop: int) -> None:
        super().__init__(make_client, url, provider, start, stop)
        self.last_observations: list[Any] = []  # as received (wire objects or arrays), for reporting a loss

    @property
    def connection(self) -> SyncConnection[Any]:
        return self.client.connection

    def begin_reset(self, seeds: Seeds, options: dict[str, Any] | None, mask: Mask | None) -> None:
        sub_mask = mask[self.start : self.stop] if mask is not None else None
        self.client.begin_batch_reset(seeds[self.start : self.stop], options, sub_mask)

    def begin_step(self, actions: list[dict[str, Any]]) -> None:
        if self.reset_next:  # NextStep right after a restart: this step is the reset
            self.client.begin_batch_reset()
        else:
            self.client.begin_batch_step(actions)

    def begin_call(self, frame: BatchCallFrame) -> None:
        if frame.envs is None and frame.values is not None:  # every sub-env's: this block's slice of the values
            frame = dataclasses.replace(frame, values=frame.values[self.start : self.stop])
        self.client.begin_batch_call(frame)  # else the session's own sub-envs (vector/sub_env_calls.py)

    snapshot_refusal: ClassVar[str | None] = None

    def begin_snapshot(self, indices: tuple[int, ...], portable: bool) -> None:
        self.client.begin_snapshot(tuple(index - self.start for index in indices), portable)

    def begin_restore(
        self, indices: tuple[int, ...], ids: tuple[str, ...] | None, portables: tuple[bytes, ...] | None
    ) -> None:
        self.client.begin_restore(tuple(index - self.start for index in indices), ids, portables)

    def release(self, ids: tuple[str, ...]) -> None:
        self.client.release(ids)

    def remember(self, result: BatchResultFrame) -> None:
        self.last_observations = list(result.observations)

    def read_step(self, result: BatchResultFrame) -> BatchResultFrame:
        if not self.reset_next:
            return result
        self.reset_next = False  # NextStep after a restart: this step was the reset
        zeros, flags = [0.0] * self.size, [False] * self.size
        return BatchResultFrame(result.observations, result.infos, zeros, flags, flags)

    def lost(self, reason: str, autoreset_mode: AutoresetMode, failure_key: str) -> BatchResultFrame:
        size, flag = self.size, {failure_key: reason}
        truncated = [True] * size
        if autoreset_mode is AutoresetMode.SAME_STEP:
            result = self.client.reset_batch()
            final = {k: {"observation": self.last_observations[k], "info": dict(flag)} for k in range(size)}
            infos = [{**info, **flag} for info in result.infos]
            return BatchResultFrame(result.observations, infos, [0.0] * size, [False] * size, truncated, final)
        # NextStep resets at the next step; Disabled waits for the user's masked reset.
        self.reset_next = autoreset_mode is AutoresetMode.NEXT_STEP
        return BatchResultFrame(
            list(self.last_observations), [dict(flag) for _ in range(size)], [0.0] * size, [False] * size, truncated
        )


class _InfoCollector:
    """Gymnasium's own ``VectorEnv._add_info`` for a batch of ``num_envs`` (a block, or the whole env)."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs

    def add(self, infos: dict[str, Any], info: dict[str, Any], index: int) -> dict[str, Any]:
        return self._add_info(infos, info, index)  # type: ignore[misc]


class BatchCodec:
    """Actions to wire objects and results to the vector env's batch, for blocks of batch results.

    Args:
        face: the spaces' face (published spaces take the fast paths: one check and one
            ``tolist()`` for a batch of array actions, one array for a batch of Box observations).
        observation_space: the single observation space; ``num_envs``: the vector env's size.
        name: the env's name, for the error of an invalid action.
        copy: ``False``: ``reset`` and ``step`` return the codec's own observation batch, not a copy
            (``from_env_fns(copy=False)``, as ``AsyncVectorEnv``).
        check_actions: ``False``: actions go to the sub-envs unchecked, as ``AsyncVectorEnv``
            sends them (``from_env_fns``: the envs are the caller's own).
    """

    def __init__(
        self,
        face: SpacesFace,
        num_envs: int,
        name: Callable[[], str | None],
        copy: bool = True,
        check_actions: bool = True,
    ) -> None:
        self.face = face
        self.copy = copy
        self.check_actions = check_actions
        self.single_observation_space = face.observation_space
        self.num_envs = num_envs
        self.name = name
        self._add = _InfoCollector(num_envs).add
        self._batch_space = batch_space(self.single_observation_space, num_envs)
        self._scalars = holds_discrete(self.single_observation_space)
        empty = create_empty_array(self.single_observation_space, num_envs)
        # None for a space of your own, whose batch is a tuple of its items (concatenate takes no buffer for it).
        self.observations: Any = () if empty is None else empty

    def prepare(self, actions: Any, space: gym.Space[Any], count: int) -> list[dict[str, Any]]:
        array_space = isinstance(
            self.face.action_space, (spaces.Discrete, spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)
        )
        if self.face.published and array_space:
            # Array spaces: one check and one tolist() for the batch instead of one per sub-env.
            if not self.check_actions:  # the caller's own values, dtypes and all (packed on a binary session)
                wire = [{ACTION_FIELD: action} for action in iterate(space, actions)]
            elif (problem := mismatch(space, actions)) is not None:
                raise InvalidActionError(actions, space, problem, self.name())
            else:
                wire = [{ACTION_FIELD: action} for action in np.asarray(actions).tolist()]
        else:
            try:
                wire = [self.face.action_to_wire(action) for action in iterate(space, actions)]
            except InvalidActionError as exc:
                exc.env_id = self.name()
                raise
        if len(wire) != count:
            raise ValueError(f"expected {count} actions, got {len(wire)}")
        return wire

    def slice(self, prepared: list[dict[str, Any]], start: int, stop: int) -> list[dict[str, Any]]:
        return prepared[start:stop]

    def decode(self, wire: list[Any]) -> list[Any]:
        """Observations from their wire forms; arrays (binary results) pass through as they are."""
        arrays = [isinstance(item, np.ndarray) for item in wire]
        if all(arrays):
            return wire
        if any(arrays):  # servers that differ in the codec they accept: decode the JSON ones alone
            return [item if is_array else self.decode([item])[0] for item, is_array in zip(wire, arrays)]
        space = self.single_observation_space
        if self.face.published and isinstance(space, spaces.Box):  # one array conversion for the batch
            try:
                stacked = np.asarray([item[OBSERVATION_FIELD] for item in wire], dtype=space.dtype)
            except (KeyError, TypeError, ValueError):
                stacked = None
            if stacked is not None and stacked.shape[1:] == space.shape:
                return list(stacked)
        # A tool env's observation carries OpenEnv's metadata inside it (its clients read it there).
        return [
            self.face.observation_from_wire(observation_fields(item) if isinstance(item, dict) else item)
            for item in wire
        ]

    def _final(self, wire: Any) -> Any:
        """A SameStep final observation from its wire form, as the env returned it (as far as JSON tells)."""
        observation = self.decode([wire])[0]
        return as_env_returns(self.single_observation_space, observation) if self._scalars else observation

    def _copy(self) -> Any:
        if not self.copy:
            return self.observations
        if isinstance(self.observations, np.ndarray):
            return np.copy(self.observations)
        return deepcopy(self.observations)  # a Dict or Tuple space's batch of arrays, as AsyncVectorEnv copies it

    def _add_sub_env_infos(
        self,
        add: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]],
        infos: dict[str, Any],
        result: BatchResultFrame,
        first: int,
    ) -> dict[str, Any]:
        """Add a batch session's per-sub-env infos (and SameStep's final ones) at ``first`` on."""
        for offset, info in enumerate(result.infos):
            final = result.final.get(offset)
            if final is not None:  # as the env returned it (a packed session's), else its wire form
                final_obs = (
                    final["raw_observation"] if "raw_observation" in final else self._final(final["observation"])
                )
                infos = add(infos, {"final_obs": final_obs, "final_info": final["info"]}, first + offset)
            if info:  # adding an empty info changes nothing
                infos = add(infos, info, first + offset)
        return infos

    def assemble_reset(
        self, blocks: list[Block[Any]], results: dict[int, Any], mask: list[bool] | None
    ) -> tuple[Any, dict[str, Any]]:
        infos: dict[str, Any] = {}
        observations: list[Any] = []
        current = list(iterate(self._batch_space, self.observations)) if len(results) < len(blocks) else []
        for block in blocks:
            result = results.get(id(block))
            if result is None:  # nothing reset here: keep this block's observations
                observations.extend(current[block.start : block.stop])
                continue
            observations.extend(self.decode(result.observations))
            for offset, info in enumerate(result.infos):
                index = block.start + offset
                if mask is None or mask[index]:
                    infos = self._add(infos, info, index)
        self.observations = concatenate(self.single_observation_space, observations, self.observations)
        return self._copy(), infos

    def assemble_step(self, blocks: list[Block[Any]], results: list[BatchResultFrame]) -> StepTuple:
        rewards: list[float] = []
        terminations: list[bool] = []
        truncations: list[bool] = []
        observations: list[Any] = []
        infos: dict[str, Any] = {}
        for block, result in zip(blocks, results):
            assert result.rewards is not None and result.terminated is not None and result.truncated is not None
            rewards.extend(result.rewards)
            terminations.extend(result.terminated)
            truncations.extend(result.truncated)
            block.remember(result)
            observations.extend(result.observations)  # decoded below, once for all blocks
            infos = self._add_sub_env_infos(self._add, infos, result, block.start)
        self.observations = concatenate(self.single_observation_space, self.decode(observations), self.observations)
        return (
            self._copy(),
            np.array(rewards, dtype=np.float64),
            np.array(terminations, dtype=np.bool_),
            np.array(truncations, dtype=np.bool_),
            infos,
        )

    def _as_vector(self, block: Block[Any], result: BatchResultFrame) -> VectorResultFrame:
        """A block's result as a vector env's (lists become arrays, infos vector infos)."""
        block.remember(result)
        infos = self._add_sub_env_infos(_InfoCollector(block.size).add, {}, result, 0)
        empty = create_empty_array(self.single_observation_space, block.size)  # None: as in __init__
        batch = concatenate(
            self.single_observation_space, self.decode(result.observations), () if empty is None else empty
        )
        if result.rewards is None:  # a reset
            return VectorResultFrame(batch, infos)
        return VectorResultFrame(
            batch,
            infos,
            np.asarray(result.rewards, dtype=np.float64),
            np.asarray(result.terminated, dtype=np.bool_),
            np.asarray(result.truncated, dtype=np.bool_),
        )

    def assemble_batch(self, taken: list[tuple[Block[Any], Any]], batch_size: int) -> StepTuple:
        return join_taken([(block, self._as_vector(block, result)) for block, result in taken], batch_size)

    def join_frames(self, frames: list[Any]) -> Any:
        return tuple(frame for block_frames in frames for frame in block_frames)
