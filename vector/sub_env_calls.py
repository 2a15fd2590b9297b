"""Get, set or call an attribute of chosen sub-envs of a RemoteVectorEnv, in the order chosen.

Gymnasium's ``call``/``get_attr``/``set_attr`` reach every sub-env; Stable-Baselines3's
``env_method``/``get_attr``/``set_attr`` take ``indices``, and a call meant for sub-envs 0 and 2
must leave sub-env 1 alone. Each block is asked only for its chosen sub-envs (the ``envs`` of a
``batch_call`` frame, in the session's indices), and answers one value per sub-env as ever
(``None`` for those not asked); the values are returned in the order asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openenv_gym.protocol.batch import BatchCallFrame

from .faults import ask_all

if TYPE_CHECKING:
    from .block import Block
    from .remote_vector_env import RemoteVectorEnv

__all__ = ["call_sub_envs"]


def call_sub_envs(
    env: RemoteVectorEnv,
    indices: Sequence[int],
    op: str,
    name: str,
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    values: Sequence[Any] | None = None,
) -> list[Any]:
    """``op`` (``"get"``, ``"set"``, ``"call"`` or ``"wrapped"``) of ``name`` on sub-envs ``indices``
    (each in ``0..num_envs-1``), one value each in that order; ``values``: a set's, one per index.

    Raises:
        Exception: a sub-env's own, as its type (:func:`~.faults.complete`: ``AttributeError`` for
            an attribute it lacks, as a local env would raise it), else the server's ``RemoteError``.
        NotImplementedError: the sub-envs are a server-side vector env, not separate envs (for
            ``"wrapped"``, their answer is ``False``: no Gymnasium wrapper wraps them).
    """
    from .batch_block import BatchBlock

    env._check_idle(op)
    ordered: list[Any] = [None] * len(indices)
    asked: list[tuple[Block[Any], list[int]]] = []  # each block, and the positions in indices it holds
    for block in env._blocks:
        positions = [position for position, index in enumerate(indices) if block.start <= index < block.stop]
        if positions and isinstance(block, BatchBlock):
            asked.append((block, positions))
        elif positions and op == "wrapped":  # a server-side vector env's sub-envs are no wrapped envs
            for position in positions:
                ordered[position] = False
        elif positions:  # refused before anything is sent, so no session is left with a reply unread
            raise NotImplementedError(
                f"{op} {name!r} on chosen sub-envs: sub-envs {block.start}..{block.stop - 1} are one server-side "
                "vector env (or plain sessions), not separate envs in a batch session; make the vector env with "
                "vector_backend='per_env' for this"
            )
    frames = {
        id(block): BatchCallFrame(
            op,
            name,
            list(args),
            dict(kwargs or {}),
            None if values is None else [values[position] for position in positions],
            [indices[position] - block.start for position in positions],
        )
        for block, positions in asked
    }
    replies = ask_all([block for block, _ in asked], lambda block: block.begin_call(frames[id(block)]))
    for (block, positions), reply in zip(asked, replies):
        for position in positions:  # a reply holds one value per sub-env of the block, None if not asked
            ordered[position] = reply.values[indices[position] - block.start]
    return ordered
