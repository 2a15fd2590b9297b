"""The servers of one run (a vector env's, a pool's): how many, started and stopped together."""

from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor, as_completed

from .base import Provider

__all__ = ["server_layout", "split", "start_all", "stop_all"]

logger = logging.getLogger(__name__)


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


def start_all(providers: list[Provider], desc: str) -> list[str]:
    """Start every provider in parallel, with a progress bar on a terminal; stop all on failure."""
    from tqdm.auto import tqdm

    urls: list[str | None] = [None] * len(providers)
    with ThreadPoolExecutor(max_workers=min(len(providers), 16)) as pool:
        futures = {pool.submit(provider.start): index for index, provider in enumerate(providers)}
        try:
            with tqdm(total=len(providers), desc=desc, unit="server", disable=len(providers) < 2 or None) as bar:
                for future in as_completed(futures):
                    urls[futures[future]] = future.result()
                    bar.update()
        except BaseException:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)  # no provider is stopped while another thread starts it
            stop_all(providers)
            raise
    return [url for url in urls if url is not None]


def stop_all(providers: list[Provider]) -> None:
    """Stop every provider, in parallel: each may wait for its server (or a lost node) to answer."""
    if len(providers) > 1:
        try:
            with ThreadPoolExecutor(max_workers=min(len(providers), 16)) as pool:
                futures = [pool.submit(provider.stop) for provider in providers]
        except RuntimeError:  # at interpreter exit no new thread starts: stop them one by one below
            pass
        else:
            for future in futures:
                if future.exception() is not None:  # one failure must not keep the others running
                    logger.error("stopping a server failed", exc_info=future.exception())
            return
    for provider in providers:
        try:
            provider.stop()
        except Exception:  # one failure must not keep the others running
            logger.exception("stopping a server failed")


def split(num_envs: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous [start, stop) ranges of near-equal size covering ``range(num_envs)``."""
    bounds = [round(i * num_envs / parts) for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(parts) if bounds[i + 1] > bounds[i]]
