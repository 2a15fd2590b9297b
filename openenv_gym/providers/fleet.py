"""`Fleet`: the servers of one env, vector env or pool, laid out, started, restarted and released together.

Every entry point that needs servers (``gym.make``, ``gym.make_vec``, ``AsyncEnvPool``,
``make_async``, the TRL integration and the MCP bridge) builds one ``Fleet`` and asks it for
URLs; nothing else starts or stops a provider::

    fleet = Fleet.of("CartPole-v1", layout=plan_layout(8))
    urls = fleet.start()                    # in parallel; all stopped again if one fails
    url, server = fleet.recover(0)  # after server 0 was lost: it again, or another
    fleet.close()                           # idempotent; also when the fleet is collected
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, NamedTuple

from ..client import DEFAULT_OPEN_TIMEOUT, http_get_json
from ..errors import OpenEnvGymError
from .base import Provider
from .layout import Layout, plan_layout, server_layout, split  # the layout's names, where the fleet's users find them
from .url import URLProvider

__all__ = [
    "Fleet",
    "Layout",
    "Served",
    "build_providers",
    "plan_layout",
    "server_layout",
    "split",
    "start_all",
    "stop_all",
]

logger = logging.getLogger(__name__)


class Served(NamedTuple):
    """Which server serves again after :meth:`Fleet.recover`: its URL and its index in the fleet."""

    url: str
    server: int


def build_providers(
    target: str | None,
    *,
    urls: Sequence[str] = (),
    provider: str | Provider = "process",
    provider_options: Mapping[str, Any] | None = None,
    layout: Layout | None = None,
    token: str | None = None,
    open_timeout: float = DEFAULT_OPEN_TIMEOUT,
    **server_options: Any,
) -> list[Provider]:
    """The providers of a fleet, none started: one per running server in ``urls``; the provider
    given; or ``layout``'s servers of ``target`` from the provider named ``provider``.

    Args:
        target: what the started servers run (a Gymnasium id or ``"module:attr"``).
        urls: running servers to attach to instead (their health is checked when started).
        provider_options: the provider's own options (the token merged in already).
        token: the running servers' token (with ``urls``).
        open_timeout: seconds a running server has to answer its health check.
        server_options: what the entry point sets on every server it starts: ``env_kwargs``,
            ``max_episode_steps``, ``startup_timeout``...

    Raises:
        ValueError: nothing to attach to and nothing to start.
    """
    if urls:
        return [URLProvider(url, timeout=open_timeout, token=token) for url in urls]
    if not isinstance(provider, str):
        return [provider]
    if provider == "url":
        raise ValueError("provider='url' needs base_url='ws://host:port'")
    if target is None:
        raise ValueError("give what the servers run (server=) or where they run (base_url=)")
    from . import make_provider, make_providers

    layout = layout or Layout()
    options = {**(provider_options or {}), **server_options}
    if layout.servers == 1 and layout.sessions_per_server is None:  # one env's server, as the provider makes it
        return [make_provider(provider, target=target, **options)]
    return make_providers(provider, layout.servers, target=target, max_sessions=layout.sessions_per_server, **options)


def start_all(providers: list[Provider], desc: str) -> list[str]:
    """Start every provider in parallel, with a progress bar on a terminal; stop all on failure."""
    if len(providers) == 1:  # on this thread: no pool, no bar
        try:
            return [providers[0].start()]
        except BaseException:
            stop_all(providers)
            raise
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


def stop_all(providers: list[Provider], *, parallel: bool = True) -> None:
    """Stop every provider, in parallel: each may wait for its server (or a lost node) to answer.

    A finalizer passes ``parallel=False``: a collection may run it in any thread at any allocation,
    even inside ``threading``'s own locks, where starting a thread deadlocks.
    """
    if parallel and len(providers) > 1:
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


class Fleet:
    """The servers of one run: started together, each restarted on its own, all released together.

    Args:
        providers: one per server, none started yet (see :meth:`of`).
        name: what the servers run, for the progress bar and logs.
        health_timeout: seconds a server has to answer ``GET /health`` in :meth:`recover`.
        layout: the layout the providers were built for (default: one server per provider, its
            sessions not laid out).

    Attributes:
        providers: one per server, in the order of :attr:`urls`.
        layout: which sessions each server serves (``layout.sub_envs``), decided before they start.
        urls: each server's base URL, once :meth:`start` returned (a restarted server's new one).
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        name: str | None = None,
        health_timeout: float = DEFAULT_OPEN_TIMEOUT,
        layout: Layout | None = None,
    ) -> None:
        if not providers:
            raise ValueError("a fleet needs at least one server")
        self.providers = list(providers)
        self.layout = layout or Layout(len(self.providers))
        self.name = name or "env"
        self.health_timeout = health_timeout
        self.urls: list[str] = []
        self._locks = [threading.Lock() for _ in self.providers]  # one start or kill at a time per server
        # The servers are stopped when the fleet is collected or at exit, too (one after another there).
        self._release = weakref.finalize(self, stop_all, self.providers, parallel=False)

    @classmethod
    def of(
        cls,
        target: str | None,
        *,
        name: str | None = None,
        health_timeout: float = DEFAULT_OPEN_TIMEOUT,
        **options: Any,
    ) -> Fleet:
        """The fleet of ``target``'s servers: see :func:`build_providers` for ``options``."""
        providers = build_providers(target, **options)
        return cls(providers, name=name or target, health_timeout=health_timeout, layout=options.get("layout"))

    def __repr__(self) -> str:
        return f"Fleet({self.name}, servers={len(self.providers)})"

    def __len__(self) -> int:
        return len(self.providers)

    @property
    def token(self) -> str | None:
        """The token the servers require (one per run: the first server's), or ``None``."""
        return self.providers[0].token

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (the servers are stopped)."""
        return not self._release.alive

    def start(self) -> list[str]:
        """Start every server (in parallel, with a progress bar on a terminal) and return their URLs.

        Idempotent: a started fleet returns its URLs.

        Raises:
            OpenEnvGymError: a server did not start; every server is stopped again.
            RuntimeError: the fleet is closed.
        """
        if self.closed:
            raise RuntimeError(f"{self!r} is closed")
        if not self.urls:
            self.urls = start_all(self.providers, desc=f"starting {self.name} servers")
        return list(self.urls)

    def is_healthy(self, index: int) -> bool:
        """Whether server ``index`` answers ``GET /health`` within ``health_timeout``."""
        try:
            http_get_json(self.urls[index], "/health", timeout=self.health_timeout)
        except OpenEnvGymError:
            return False
        return True

    def recover(self, index: int, *, hung: bool = False) -> Served:
        """A healthy server for the sessions server ``index`` served, after they were lost.

        Server ``index`` itself when it can serve: restarted if it died (killed first when
        ``hung``: it stopped answering and only those sessions use it), and checked with
        ``/health``, since a server killed an instant ago can still look alive to its provider.
        Else another live server of the fleet.

        Returns:
            The URL and the index of the server that serves now.

        Raises:
            OpenEnvGymError: server ``index`` failed twice to come back and no other is alive.
        """
        provider = self.providers[index]
        own_failure: OpenEnvGymError | None = None
        with self._locks[index]:
            if hung:
                provider.kill()
            for _ in range(2):
                try:
                    url = provider.start()  # a dead process provider starts a new server
                    http_get_json(url, "/health", timeout=self.health_timeout)
                    self.urls[index] = url
                    return Served(url, index)
                except OpenEnvGymError as exc:
                    own_failure = exc
                    provider.kill()  # make sure it is gone, then start afresh
        for other_index, other in enumerate(self.providers):
            if other_index != index and other.is_alive():
                try:
                    with self._locks[other_index]:
                        url = other.start()
                except OpenEnvGymError:
                    continue
                self.urls[other_index] = url
                return Served(url, other_index)
        assert own_failure is not None
        raise own_failure

    def close(self, *, parallel: bool = True) -> None:
        """Stop every server; idempotent, and run when the fleet is collected.

        Args:
            parallel: stop the servers in threads of their own. A finalizer that closes the fleet
                passes ``False`` (see :func:`stop_all`), as the fleet's own does.
        """
        if parallel and self._release.detach() is not None:
            stop_all(self.providers)
        else:
            self._release()

    def __enter__(self) -> Fleet:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
