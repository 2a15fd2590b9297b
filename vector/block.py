"""`Block`: a contiguous run of a vector env's sub-envs behind one session, and `BlockCodec`, how a kind's results join.

:class:`~openenv_gym.vector.RemoteVectorEnv` drives every kind of block through this one
interface: :class:`~openenv_gym.vector.batch_block.BatchBlock` (one batch session steps one env
per sub-env on its server), :class:`~openenv_gym.vector.plain_block.PlainBlock` (one plain OpenEnv
``/ws`` session per sub-env, autoreset on the client) and
:class:`~openenv_gym.vector.vector_block.VectorBlock` (a server-side vector env steps the block).
Requests are begun on every block before any reply is read (the servers work in parallel); the
:class:`BlockCodec` of the kind then joins the blocks' replies into the vector env's results,
converting the whole batch once.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    import gymnasium as gym

    from openenv_gym.client.sync_connection import SyncConnection
    from openenv_gym.protocol.batch import BatchCallFrame, Mask, Seeds
    from openenv_gym.providers import Provider

__all__ = ["Block", "BlockCodec", "Session", "StepTuple"]

#: What ``VectorEnv.step`` returns.
StepTuple = tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]


class Session(Protocol):
    """What every block's session has (batch, vector and plain-session clients alike)."""

    def connect(self) -> Any: ...

    def close(self) -> None: ...

    def complete(self, timeout: float | None = None) -> Any: ...

    def begin_render(self) -> None: ...


Client = TypeVar("Client", bound=Session)


class Block(abc.ABC, Generic[Client]):
    """Sub-envs ``start`` to ``stop`` of a vector env, served by one session.

    Attributes:
        make_client: opens a session of this block on a server's URL (a new one after a fault).
        client: the session.
        provider: the server the block was placed on; ``serving``: whose server the session is on
            now (another's after a move).
        reset_next: a restarted block under NextStep: its next step is a reset.
    """

    #: Whether the block's server serves it alone (a hung one may then be killed and restarted).
    exclusive: ClassVar[bool] = True
    #: Whether EnvPool's ``send``/``recv`` with ``batch_size < num_envs`` can step it.
    pools: ClassVar[bool] = True

    def __init__(self, make_client: Callable[[str], Client], url: str, provider: Provider, start: int, stop: int):
        self.make_client = make_client
        self.client = make_client(url)
        self.provider = provider
        self.url = url
        self.serving = provider
        self.start = start
        self.stop = stop
        self.reset_next = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.start}-{self.stop - 1}, {self.url})"

    @property
    def size(self) -> int:
        """How many sub-envs the block holds."""
        return self.stop - self.start

    @property
    @abc.abstractmethod
    def connection(self) -> SyncConnection[Any]:
        """The block's connection, for waiting on replies (``replies_waiting``)."""

    def connect(self) -> None:
        """Open the session (the server makes the block's envs)."""
        self.client.connect()

    def reconnect(self, url: str, serving: Provider) -> None:
        """Replace the session by a new one on ``url`` (``serving``'s server), after a fault."""
        self.close()
        self.client, self.url, self.serving = self.make_client(url), url, serving
        self.connect()

    def close(self) -> None:
        """Close the session (idempotent)."""
        self.client.close()

    def complete(self, timeout: float | None = None) -> Any:
        """The reply to the request in flight (raises what the session raises)."""
        return self.client.complete(timeout)

    @abc.abstractmethod
    def begin_reset(self, seeds: Seeds, options: dict[str, Any] | None, mask: Mask | None) -> None:
        """Send a reset; ``seeds`` and ``mask`` are the vector env's (one per sub-env), sliced here."""

    @abc.abstractmethod
    def begin_step(self, actions: Any) -> None:
        """Send this block's actions (as its codec prepared them); a reset instead after a NextStep restart."""

    @abc.abstractmethod
    def remember(self, result: Any) -> None:
        """Keep the observations of ``result``, the block's last (a loss reports them)."""

    @abc.abstractmethod
    def read_step(self, result: Any) -> Any:
        """A step's ``result`` as the vector env reports it (a NextStep restart's reset: no reward, no flags)."""

    @abc.abstractmethod
    def lost(self, reason: str, autoreset_mode: Any, failure_key: str) -> Any:
        """What this block reports after its session was lost and replaced: its sub-envs truncated
        with the last observations and ``{failure_key: reason}``, reset now under SameStep."""

    def begin_render(self) -> None:
        """Ask for the block's frames (read by :meth:`complete`)."""
        self.client.begin_render()

    def begin_call(self, frame: BatchCallFrame) -> None:
        """Call or read or set a sub-env attribute of every sub-env (``frame.values``: the vector env's)."""
        raise NotImplementedError(f"{frame.op} of sub-env attributes needs batch sessions (batched=True)")

    #: Why this kind of block cannot snapshot its sub-envs (``None``: it can).
    snapshot_refusal: ClassVar[str | None] = "its sub-envs cannot be snapshotted"

    def begin_snapshot(self, indices: tuple[int, ...], portable: bool) -> None:
        """Ask for snapshots of sub-envs ``indices`` (the vector env's, all in this block)."""
        raise NotImplementedError(self.snapshot_refusal)

    def begin_restore(
        self, indices: tuple[int, ...], ids: tuple[str, ...] | None, portables: tuple[bytes, ...] | None
    ) -> None:
        """Put sub-envs ``indices`` back into kept ``ids`` or sealed ``portables`` (one each); the
        reply is a reset's result for the whole block (:meth:`BlockCodec.assemble_reset` takes it)."""
        raise NotImplementedError(self.snapshot_refusal)

    def release(self, ids: tuple[str, ...]) -> None:
        """Have the server drop those of ``ids`` this block's session took."""
        raise NotImplementedError(self.snapshot_refusal)


class BlockCodec(Protocol):
    """How the blocks of one kind take the vector env's actions and join their results.

    It owns the vector env's observation batch: each step fills it (or replaces it) once for all blocks.
    """

    observations: Any

    def prepare(self, actions: Any, space: gym.Space[Any], count: int) -> Any:
        """``count`` actions of the batch space ``space`` (the whole env's, or one block's) as blocks
        send them, converted once.

        Raises:
            InvalidActionError: an action outside the action space; nothing may be sent.
        """
        ...

    def slice(self, prepared: Any, start: int, stop: int) -> Any:
        """Sub-envs ``start:stop`` of a prepared batch."""
        ...

    def assemble_reset(
        self, blocks: list[Block[Any]], results: dict[int, Any], mask: list[bool] | None
    ) -> tuple[Any, dict[str, Any]]:
        """``reset``'s return from the reset blocks' results (by ``id(block)``); the others keep their observations."""
        ...

    def assemble_step(self, blocks: list[Block[Any]], results: list[Any]) -> StepTuple:
        """``step``'s return from every block's result, in order."""
        ...

    def assemble_batch(self, taken: list[tuple[Block[Any], Any]], batch_size: int) -> StepTuple:
        """``recv``'s return: the blocks' results in the order they came (a reset's: zero rewards, no flags)."""
        ...

    def join_frames(self, frames: list[Any]) -> Any:
        """``render``'s return from every block's frames, in order."""
        ...
