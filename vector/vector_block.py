"""`VectorBlock`: sub-envs stepped as one vector env on their server, and `VectorCodec`, which joins their arrays.

With a vector backend (``CartPoleVectorEnv``, ALE's ``AtariVectorEnv``, EnvPool) each block is
one server-side vector env: actions go as one batch array, results come back as arrays and
Gymnasium's vector infos, joined as they are (each array keeps the dtype its backend made).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, create_empty_array, iterate

from openenv_gym.client import http_get_json
from openenv_gym.client.sync_connection import SyncConnection
from openenv_gym.client.vector_client import VectorClient
from openenv_gym.errors import InvalidActionError
from openenv_gym.face import WireFace
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.protocol.batch import BatchCallFrame, Mask, Seeds
from openenv_gym.protocol.vector import VectorResultFrame, choose_vector_backend
from openenv_gym.spaces import mismatch, space_from_json

from .batching import block_seed, join_batches, join_infos, join_taken, lost_result, slice_batch, take_batches
from .block import Block, StepTuple
from .space_batches import (
    batch_from_wire,
    final_observations_from_wire,
    is_array_space,
    join_space_batches,
    slice_space_batch,
)

if TYPE_CHECKING:
    import gymnasium as gym


__all__ = ["BackendChoice", "VectorBlock", "VectorCodec", "choose_backend"]


class BackendChoice(NamedTuple):
    """The server-side vector env chosen (``name``; ``None``: one env per sub-env), the vector
    env's ``metadata`` it gives (which and why; render modes, the vector env's own) and, with
    one, the face of its spaces (ALE's differ from its single env's)."""

    name: str | None
    metadata: dict[str, Any]
    face: WireFace | None = None


def choose_backend(
    requested: str,
    mode: WireAutoresetMode,
    batched: bool | None,
    schema: dict[str, Any],
    url: str,
    timeout: float,
    token: str | None,
    render_mode: str | None,
) -> BackendChoice:
    """Pick the server-side vector env for ``vector_backend=requested`` from the first server's ``/schema``.

    Raises:
        ValueError: the backend asked for cannot serve the env, the mode or ``render_mode``.
    """
    if batched is False:
        if requested not in ("auto", "per_env"):
            raise ValueError(f"vector_backend={requested!r} runs on batch sessions; batched=False was given")
        name, reason = None, "batched=False: one plain session per sub-env"
    else:
        offered = schema.get("vector_backends") or {}
        unavailable = schema.get("vector_backends_unavailable")
        name, reason = choose_vector_backend(requested, mode, offered, unavailable, render_mode)
    metadata: dict[str, Any] = {"vector_backend": name or "per_env", "vector_backend_reason": reason}
    if name is None:
        return BackendChoice(None, metadata)
    entry = schema["vector_backends"][name]
    if "observation_space" not in entry:  # EnvPool: described only when asked for
        full = http_get_json(url, f"/schema?vector_backend={name}", timeout=timeout, token=token)
        if name not in full.get("vector_backends", {}):
            why = full.get("vector_backends_unavailable", {}).get(name, "the server does not offer it")
            raise ValueError(f"vector_backend={name!r} cannot serve this env: {why}")
        entry = full["vector_backends"][name]
    if render_mode is not None and render_mode not in entry.get("render_modes", ()):  # described only now
        raise ValueError(f"vector_backend={name!r} renders {entry.get('render_modes', [])}, not {render_mode!r}")
    # As Gymnasium's vector envs, the metadata is the vector env's own.
    metadata.update(
        render_modes=[m for m in entry.get("render_modes", []) if m != "human"], render_fps=entry.get("render_fps")
    )
    spaces_face = WireFace(  # the arrays are the spaces' own
        space_from_json(entry["action_space"]), space_from_json(entry["observation_space"]), published=True
    )
    return BackendChoice(name, metadata, spaces_face)


class VectorBlock(Block[VectorClient]):
    """Sub-envs ``start`` to ``stop`` as one vector env of the ``backend`` on their server.

    ``reset(seed=s)`` seeds the block starting at sub-env k with ``s + k``; a seed per sub-env
    goes to the vector env as the block's list.
    """

    snapshot_refusal = (
        "a server-side vector env keeps its sub-envs' states together, so one cannot be snapshotted alone: "
        "make_vec(..., vector_backend='per_env') serves one env per sub-env, which can"
    )

    def __init__(
        self,
        make_client: Callable[[str], Any],
        url: str,
        provider: Any,
        start: int,
        stop: int,
        *,
        backend: str,
        observation_space: gym.Space[Any],
    ) -> None:
        super().__init__(make_client, url, provider, start, stop)
        self.backend = backend
        self.observation_space = observation_space  # a single sub-env's
        self.last_result: VectorResultFrame | None = None  # what the vector env last returned

    @property
    def connection(self) -> SyncConnection[Any]:
        return self.client.connection

    def begin_reset(self, seeds: Seeds, options: dict[str, Any] | None, mask: Mask | None) -> None:
        sub_mask = mask[self.start : self.stop] if mask is not None else None
        self.client.begin_vector_reset(block_seed(seeds, self.start, self.stop), options, sub_mask)

    def begin_step(self, actions: Any) -> None:
        if self.reset_next:  # NextStep right after a restart: this step is the reset
            self.client.begin_vector_reset()
        else:
            self.client.begin_vector_step(actions)

    def begin_call(self, frame: BatchCallFrame) -> None:
        """The server-side vector env's own ``get_attr``/``set_attr``/``call`` (AttributeError from one that has none)."""
        if frame.envs is None and frame.values is not None:  # every sub-env's: this block's slice of the values
            frame = dataclasses.replace(frame, values=frame.values[self.start : self.stop])
        self.client.begin_call(frame)

    def remember(self, result: VectorResultFrame) -> None:
        self.last_result = result

    def read_step(self, result: VectorResultFrame) -> VectorResultFrame:
        """A restarted block's reset, reported as NextStep reports a reset: no reward, no flags."""
        if not self.reset_next:
            return result
        self.reset_next = False
        previous = self.last_result.rewards if self.last_result is not None else None
        dtype = previous.dtype if previous is not None else np.float64
        flags = np.zeros(self.size, dtype=np.bool_)
        return VectorResultFrame(result.observations, result.infos, np.zeros(self.size, dtype=dtype), flags, flags)

    def lost(self, reason: str, autoreset_mode: AutoresetMode, failure_key: str) -> VectorResultFrame:
        assert self.last_result is not None  # a block steps only after its reset
        lost = lost_result(self.last_result, reason, failure_key)
        if autoreset_mode is AutoresetMode.SAME_STEP:  # reset now; the lost observations are final
            reset = self.client.reset_vector()
            final_obs, final_info = np.empty(self.size, dtype=object), np.empty(self.size, dtype=object)
            for index, observation in enumerate(
                iterate(batch_space(self.observation_space, self.size), lost.observations)
            ):
                final_obs[index], final_info[index] = observation, {failure_key: reason}
            every = lost.truncated.copy()
            infos = {**reset.infos, **lost.infos, "final_obs": final_obs, "_final_obs": every}
            infos.update(final_info=final_info, _final_info=every.copy())
            return VectorResultFrame(reset.observations, infos, lost.rewards, lost.terminated, lost.truncated)
        self.reset_next = autoreset_mode is AutoresetMode.NEXT_STEP
        return lost


class VectorCodec:
    """The vector env's batch from blocks of server-side vector envs: arrays joined, never converted.

    Args:
        action_space, observation_space: a single sub-env's (the backend's own: ALE's differ from its env's).
        num_envs: the vector env's size; ``name``: the env's name, for the error of an invalid action.
    """

    def __init__(
        self,
        action_space: gym.Space[Any],
        observation_space: gym.Space[Any],
        num_envs: int,
        name: Callable[[], str | None],
    ) -> None:
        self.single_action_space = action_space
        self.single_observation_space = observation_space
        self.num_envs = num_envs
        self.name = name
        self._arrays = is_array_space(observation_space)  # else batches take Gymnasium's form (space_batches.py)
        empty = create_empty_array(observation_space, num_envs)
        assert empty is not None  # Gymnasium's annotation allows None; it raises for a space it cannot fill
        self.observations: Any = empty

    def prepare(self, actions: Any, space: gym.Space[Any], count: int) -> Any:
        problem = mismatch(space, actions)
        if problem is not None:
            raise InvalidActionError(actions, space, problem, self.name())
        if isinstance(space, (spaces.MultiDiscrete, spaces.Box, spaces.MultiBinary)):
            return np.asarray(actions, dtype=space.dtype)
        return actions

    def slice(self, prepared: Any, start: int, stop: int) -> Any:
        return slice_batch(prepared, start, stop)

    def assemble_reset(
        self, blocks: list[Block[Any]], results: dict[int, Any], mask: list[bool] | None
    ) -> tuple[Any, dict[str, Any]]:
        kept, space = self.observations, self.single_observation_space
        if self._arrays:
            self.observations = join_batches(
                [
                    results[id(block)].observations
                    if id(block) in results
                    else slice_batch(kept, block.start, block.stop)
                    for block in blocks
                ]
            )
        else:
            self.observations = join_space_batches(
                space,
                [
                    batch_from_wire(space, results[id(block)].observations)
                    if id(block) in results
                    else slice_space_batch(space, kept, block.start, block.stop)
                    for block in blocks
                ],
            )
        parts = [(block.start, block.size, results[id(block)].infos) for block in blocks if id(block) in results]
        return self.observations, join_infos(parts, self.num_envs)

    def assemble_step(self, blocks: list[Block[Any]], results: list[VectorResultFrame]) -> StepTuple:
        for block, result in zip(blocks, results):
            block.remember(result)
        space = self.single_observation_space
        if self._arrays:
            self.observations = take_batches([result.observations for result in results])  # new arrays every step
            parts = [(block.start, block.size, result.infos) for block, result in zip(blocks, results)]
        else:
            self.observations = join_space_batches(space, [batch_from_wire(space, r.observations) for r in results])
            parts = [
                (block.start, block.size, final_observations_from_wire(space, result.infos))
                for block, result in zip(blocks, results)
            ]
        return (
            self.observations,
            join_batches([result.rewards for result in results]),
            join_batches([result.terminated for result in results]),
            join_batches([result.truncated for result in results]),
            join_infos(parts, self.num_envs),
        )

    def assemble_batch(self, taken: list[tuple[Block[Any], Any]], batch_size: int) -> StepTuple:
        for block, result in taken:
            block.remember(result)
        return join_taken(taken, batch_size)

    def join_frames(self, frames: list[Any]) -> Any:
        if all(isinstance(block_frames, np.ndarray) for block_frames in frames):  # a vector env's stacked frames
            return np.concatenate(frames)
        joined = [frame for block_frames in frames for frame in block_frames]
        # The vector env's own sequence: SyncVectorEnv's frames are a tuple, CartPoleVectorEnv's a list.
        return tuple(joined) if isinstance(frames[0], tuple) else joined
