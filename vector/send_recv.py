"""`SendRecv`: EnvPool's asynchronous mode for a vector env's blocks: ``send`` some, ``recv`` the first ready.

:meth:`SendRecv.recv` returns the first ``batch_size`` sub-envs whose results are in and
:meth:`SendRecv.send` steps just those, so the learner's work overlaps the servers'. A block is
the unit: ``send`` takes whole blocks, ``recv`` returns whole blocks.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import NoAsyncCallError
from gymnasium.vector.utils import batch_space

from openenv_gym.client.sync_client import replies_waiting
from openenv_gym.errors import InvalidActionError
from openenv_gym.spaces import mismatch

from .faults import read_step, recover, send_all

if TYPE_CHECKING:
    import gymnasium as gym

    from openenv_gym.providers.fleet import Fleet

    from .block import Block, BlockCodec, StepTuple

__all__ = ["SendRecv"]


def _take(batch: Any, rows: np.ndarray) -> Any:
    """Rows ``rows`` of a batch of a Dict or Tuple space (a dict or tuple of arrays)."""
    if isinstance(batch, dict):
        return {key: _take(value, rows) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_take(value, rows) for value in batch)
    return np.asarray(batch)[rows]


@dataclasses.dataclass(eq=False)
class SendRecv:
    """The blocks in flight and the results read beyond a ``recv``'s batch, for one vector env.

    Raises:
        ValueError: ``batch_size`` is not a whole number of equal blocks, or the blocks cannot pool.

    Args:
        blocks: the vector env's blocks; ``codec``: their kind's codec.
        fleet: the servers, to restart a lost block on; ``env``: the env's repr, for the log.
        autoreset_mode: the vector env's; ``batch_size``: how many sub-envs a ``recv`` returns.
        single_action_space: a sub-env's action space; ``name``: the env's name, for errors.
    """

    blocks: list[Block[Any]]
    codec: BlockCodec
    fleet: Fleet
    env: str
    autoreset_mode: Any
    batch_size: int
    single_action_space: gym.Space[Any]
    name: Callable[[], str | None]
    #: Results read by recv() beyond its batch, and the blocks sent but not read.
    ready: list[tuple[Block[Any], Any]] = dataclasses.field(default_factory=list, init=False)
    in_flight: dict[Block[Any], Exception | None] = dataclasses.field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.batch_size != sum(block.size for block in self.blocks):
            self._check_blocks()

    def _check_blocks(self) -> None:
        if not self.blocks[0].pools:
            raise ValueError("batch_size < num_envs needs batch sessions (or a vector backend), not batched=False")
        sizes = {block.size for block in self.blocks}
        if len(sizes) != 1 or self.batch_size % sizes.pop():
            raise ValueError(
                f"batch_size={self.batch_size} must be a whole number of equal server blocks; the blocks hold "
                f"{[block.size for block in self.blocks]} sub-envs (choose num_envs, servers and batch_size to fit)"
            )

    @property
    def idle(self) -> bool:
        """Whether nothing is in flight and no result waits to be returned."""
        return not self.in_flight and not self.ready

    def begin(self, blocks: list[Block[Any]], send: Callable[[Block[Any]], None]) -> None:
        """Send ``send``'s request to each of ``blocks``; :meth:`recv` reads them."""
        for block, failure in zip(blocks, send_all(blocks, send)):
            self.in_flight[block] = failure

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Step the whole blocks of sub-envs ``env_id`` (all when ``None``) with ``actions``.

        Raises:
            InvalidActionError: an action outside the action space; nothing was sent.
            ValueError: ``env_id`` splits a block, or names one still in flight.
        """
        num_envs = sum(block.size for block in self.blocks)
        ids = np.arange(num_envs) if env_id is None else np.asarray(env_id, dtype=np.int64).reshape(-1)
        space = batch_space(self.single_action_space, len(ids))
        problem = mismatch(space, actions)
        if problem is not None:
            raise InvalidActionError(actions, space, problem, self.name())
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        chosen: dict[int, np.ndarray] = {}
        blocks, position = [], 0
        for block in self.blocks:
            if position < len(sorted_ids) and sorted_ids[position] == block.start:
                expected = np.arange(block.start, block.stop)
                if not np.array_equal(sorted_ids[position : position + block.size], expected):
                    raise ValueError(f"env_id must hold whole server blocks: sub-envs {block.start}-{block.stop - 1}")
                if block in self.in_flight or any(block is ready for ready, _ in self.ready):
                    raise ValueError(f"sub-envs {block.start}-{block.stop - 1} are still in flight: recv() them first")
                blocks.append(block)
                chosen[id(block)] = order[position : position + block.size]
                position += block.size
        if position != len(sorted_ids):
            raise ValueError(f"env_id must hold whole server blocks of sub-envs 0-{num_envs - 1}, got {ids}")
        array_actions = isinstance(actions, np.ndarray) or not isinstance(space, (spaces.Dict, spaces.Tuple))
        batch = np.asarray(actions) if array_actions else actions

        def send_block(block: Block[Any]) -> None:
            rows = chosen[id(block)]
            block_actions = batch[rows] if array_actions else _take(batch, rows)
            sub_space = batch_space(self.single_action_space, block.size)
            block.begin_step(self.codec.prepare(block_actions, sub_space, block.size))

        self.begin(blocks, send_block)

    def recv(self, timeout: float | None = None) -> StepTuple:
        """The first ``batch_size`` sub-envs whose results are in; a lost block is restarted, its sub-envs truncated.

        Raises:
            NoAsyncCallError: fewer than ``batch_size`` sub-envs are in flight.
            TimeoutError: not enough results within ``timeout``; they stay in flight.
        """
        in_flight = sum(block.size for block in self.in_flight) + sum(block.size for block, _ in self.ready)
        if in_flight < self.batch_size:
            raise NoAsyncCallError(
                f"recv() with {in_flight} sub-envs in flight, fewer than batch_size={self.batch_size}", "recv"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        while sum(block.size for block, _ in self.ready) < self.batch_size:
            waiting = list(self.in_flight)
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready = replies_waiting([block.connection for block in waiting], left)
            if not ready and deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"recv() got fewer than batch_size={self.batch_size} results within {timeout:g} s")
            for index in ready:
                block = waiting[index]
                outcome = read_step(block, self.in_flight.pop(block), None)
                if isinstance(outcome, Exception):
                    outcome = recover(block, outcome, self.fleet, self.env, self.autoreset_mode)
                self.ready.append((block, outcome))
        taken, size = [], 0
        while size < self.batch_size:
            block, outcome = self.ready.pop(0)
            taken.append((block, outcome))
            size += block.size
        return self.codec.assemble_batch(taken, self.batch_size)
