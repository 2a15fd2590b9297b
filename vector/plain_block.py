"""`PlainBlock`: one sub-env in one plain OpenEnv ``/ws`` session, with autoreset on the client.

Its session, :class:`~openenv_gym.vector.plain_session.PlainSessionBatch`, presents a batch
session's requests and results for one sub-env, so the block and its codec are the batch kind's;
what differs is that the server is shared by many such blocks (a sub-env call reaches the session's env).
"""

from __future__ import annotations

from typing import Any, ClassVar

from .batch_block import BatchBlock
from .block import Block

__all__ = ["PlainBlock"]


class PlainBlock(BatchBlock):
    """Sub-env ``start`` in a plain session (an OpenEnv server's, or a tool env's)."""

    client: Any  # a PlainSessionBatch: a batch session's requests and results, for one sub-env
    exclusive: ClassVar[bool] = False  # one server serves many plain sessions: a hung one is not killed
    pools: ClassVar[bool] = False
    snapshot_refusal: ClassVar[str | None] = (
        "plain sessions (batched=False, or an OpenEnv server) are not snapshotted by the vector env"
    )
    begin_snapshot, begin_restore, release = Block.begin_snapshot, Block.begin_restore, Block.release

    @property
    def connection(self) -> Any:
        return self.client.client.connection
