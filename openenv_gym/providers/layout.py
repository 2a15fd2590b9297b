"""`Layout`: how the sessions of one run are laid out over its servers, decided once.

How many servers a run starts, how many sessions each takes and which sessions each serves are
decided here, before any server starts (:func:`plan_layout`; :func:`even_layout` for servers
already running), and the :class:`~openenv_gym.providers.fleet.Fleet` of the run holds the answer::

    layout = plan_layout(8, servers=2)
    layout.servers, layout.sub_envs         # 2, ((0, 4), (4, 8))
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable

__all__ = ["Layout", "even_layout", "plan_layout", "server_layout", "split"]


@dataclasses.dataclass(frozen=True)
class Layout:
    """How many servers to start, how many sessions each takes, and which sessions each serves.

    Attributes:
        servers: the number of servers.
        sessions_per_server: each server's ``max_sessions``; ``None`` leaves the provider's
            default (one env's server).
        sub_envs: each server's sessions, in server order: contiguous ``(start, stop)`` ranges
            (empty: not laid out, as for one env's server).
    """

    servers: int = 1
    sessions_per_server: int | None = None
    sub_envs: tuple[tuple[int, int], ...] = ()


def server_layout(num_envs: int, sessions_per_server: int | None, servers: int | None) -> tuple[int, int]:
    """How many servers to start, and how many sessions each takes (its ``max_sessions``).

    ``servers=`` fixes the count (the sub-envs spread evenly over them), and then
    ``sessions_per_server`` is what one server may take (room for a failed server's sub-envs);
    otherwise ``sessions_per_server`` (default: enough for one server per CPU) fixes both.
    """
    if sessions_per_server is not None and sessions_per_server < 1:
        raise ValueError(f"sessions_per_server must be at least 1, got {sessions_per_server}")
    if servers is not None:
        if servers < 1:
            raise ValueError(f"servers must be at least 1, got {servers}")
        count = min(servers, num_envs)
        per_server = math.ceil(num_envs / count)
        if sessions_per_server is None:
            return count, per_server
        if per_server > sessions_per_server:
            raise ValueError(
                f"servers={servers} puts {per_server} sub-envs on a server, more than sessions_per_server="
                f"{sessions_per_server}; ask for at least {math.ceil(num_envs / sessions_per_server)} servers"
            )
        return count, sessions_per_server
    if sessions_per_server is None:
        sessions_per_server = math.ceil(num_envs / min(num_envs, os.cpu_count() or 1))
    return math.ceil(num_envs / sessions_per_server), sessions_per_server


def plan_layout(
    sessions: int,
    *,
    servers: int | None = None,
    sessions_per_server: int | None = None,
    one_server: bool = False,
    batch_size: int | None = None,
    preferred_count: Callable[[], int | None] | None = None,
) -> Layout:
    """The servers to start for ``sessions`` sessions: as told (``servers``, ``sessions_per_server``;
    see :func:`server_layout`), else ``ceil(sessions / batch_size)`` for EnvPool's mode
    (``batch_size < sessions``: blocks then fill a batch), else as many as ``preferred_count()``
    answers, the provider's own count (asked only here: Ray's ``placement="spread"`` joins the
    cluster to count its nodes), else one when ``one_server`` (a server-side vector env steps them
    all: a second server would only add a round trip), else one per CPU.
    """
    told = servers is not None or sessions_per_server is not None
    if not told and batch_size is not None and batch_size < sessions:
        servers = math.ceil(sessions / batch_size)
    elif not told:
        preferred = preferred_count() if preferred_count is not None else None
        if preferred is not None:
            return _laid_out(sessions, *server_layout(sessions, None, preferred))
        if one_server:
            return _laid_out(sessions, 1, sessions)
    return _laid_out(sessions, *server_layout(sessions, sessions_per_server, servers))


def even_layout(sessions: int, servers: int) -> Layout:
    """``sessions`` spread evenly over ``servers`` servers that run already (none started)."""
    return _laid_out(sessions, servers, None)


def _laid_out(sessions: int, servers: int, sessions_per_server: int | None) -> Layout:
    return Layout(servers, sessions_per_server, tuple(split(sessions, servers)))


def split(num_envs: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous [start, stop) ranges of near-equal size covering ``range(num_envs)``."""
    bounds = [round(i * num_envs / parts) for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(parts) if bounds[i + 1] > bounds[i]]
