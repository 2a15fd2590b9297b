"""`AsyncEnvPool`: many concurrent episodes over a few servers, sessions kept open and reused.

Hundreds of episodes at once (an LLM trainer's generation batch) need neither as many
processes nor as many threads: the pool starts a few servers (one per CPU by default, each
taking its share of the sessions), opens ``size`` WebSocket sessions on them in parallel, and
hands them out as :class:`~openenv_gym.async_env.AsyncRemoteEnv` episodes::

    async with openenv_gym.AsyncEnvPool("openenv/Echo-v0", size=256, tool_calls=True) as pool:
        env = await pool.acquire()
        prompt, info = await env.reset(seed=0)
        ...
        await env.aclose()  # the session goes back to the pool for the next episode

When a server dies, the episodes it hosted fail with their own error (``ConnectionLostError``)
and only they do; the pool restarts that server and opens their sessions again for the next
episodes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .async_env import AsyncRemoteEnv, open_core, spec_options
from .client import AsyncEnvClient
from .env_core import EnvCore
from .errors import OpenEnvGymError
from .make_options import MakeOptions
from .providers import Provider
from .providers.fleet import Fleet, split

__all__ = ["AsyncEnvPool"]

logger = logging.getLogger(__name__)

#: Sessions opened at once while the pool fills (a server takes handshakes one at a time).
OPEN_CONCURRENCY = 32


class _Server:
    """One server of the pool's fleet, and the lock under which it is restarted."""

    def __init__(self, fleet: Fleet, index: int) -> None:
        self.fleet = fleet
        self.index = index
        self.restarting = asyncio.Lock()

    @property
    def provider(self) -> Provider:
        return self.fleet.providers[self.index]

    @property
    def url(self) -> str:
        return self.fleet.urls[self.index]


class _Slot:
    """One session of the pool, on one server."""

    def __init__(self, server: _Server, client: AsyncEnvClient) -> None:
        self.server = server
        self.client = client


class AsyncEnvPool:
    """``size`` sessions of one env, on a few servers, handed out one episode at a time.

    Args:
        env_id: a registered openenv id (``"openenv/CodingTools-v0"``).
        size: the sessions to keep open: the episodes that may run at once.
        servers: the servers to start (default: as many as the provider spreads over, as Ray's
            ``placement="spread"``: one per node; else one per CPU, at most one per session).
        sessions_per_server: sessions one server takes (default: ``size`` spread over ``servers``).
        acquire_timeout: seconds :meth:`acquire` waits for a free session before it raises
            ``TimeoutError``.
        **make_kwargs: ``gym.make``'s keyword arguments for the id (``tool_calls=``, ``provider=``,
            ``base_url=`` or ``base_urls=`` for running servers, the env's own...).
    """

    def __init__(
        self,
        env_id: str,
        size: int,
        *,
        servers: int | None = None,
        sessions_per_server: int | None = None,
        acquire_timeout: float = 600.0,
        **make_kwargs: Any,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.env_id = env_id
        self.size = size
        self.acquire_timeout = acquire_timeout
        options, self.max_episode_steps = spec_options(env_id, make_kwargs)
        from .task_catalog import attached_split  # loaded when a pool is made: importing stays light

        self._split = attached_split(options)  # for running servers: their resets' default split
        self._options = MakeOptions.parse(**options)  # a spec's sessions_per_server is make_vec's, not this pool's
        self.open_timeout = self._options.timeouts.open
        self.call_timeout = self._options.timeouts.call
        self._fleet = self._options.fleet(
            size,
            servers=servers,
            sessions_per_server=sessions_per_server,
            max_episode_steps=None,  # each episode's time limit is the client's
            needs=f"{env_id!r} runs on a server you give: pass base_url= or base_urls=",
        )
        self._servers: list[_Server] = []
        self._idle: asyncio.Queue[_Slot] = asyncio.Queue()
        self._lent: dict[AsyncRemoteEnv, _Slot] = {}
        self._core: EnvCore | None = None
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"AsyncEnvPool({self.env_id}, size={self.size}, servers={len(self._fleet)})"

    @property
    def idle(self) -> int:
        """Sessions waiting to be acquired."""
        return self._idle.qsize()

    @property
    def in_use(self) -> int:
        """Episodes acquired and not yet closed."""
        return len(self._lent)

    def _token_of(self, provider: Provider) -> str | None:
        return self._options.token or provider.token

    def _client(self, server: _Server) -> AsyncEnvClient:
        return AsyncEnvClient(
            server.url,
            open_timeout=self.open_timeout,
            call_timeout=self.call_timeout,
            env_id=self.env_id,
            token=self._token_of(server.provider),
        )

    async def start(self) -> AsyncEnvPool:
        """Start the servers (in parallel) and open every session; idempotent.

        Raises:
            OpenEnvGymError: a server could not start or a session could not open; everything
                started is stopped again.
        """
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        if self._started:
            return self
        self._started = True
        try:
            await asyncio.to_thread(self._fleet.start)
            self._servers = [_Server(self._fleet, index) for index in range(len(self._fleet))]
            first = self._servers[0]
            probe = self._client(first)
            self._core = await open_core(
                probe,
                first.url,
                self._options,
                first.provider,
                self._token_of(first.provider),
                env_id=self.env_id,
                max_episode_steps=self.max_episode_steps,
                split=self._split,
            )
            ranges = split(self.size, len(self._servers))
            targets = [server for server, (start, stop) in zip(self._servers, ranges) for _ in range(stop - start)]
            self._idle.put_nowait(_Slot(first, probe))
            gate = asyncio.Semaphore(OPEN_CONCURRENCY)

            async def open_one(server: _Server) -> None:
                async with gate:
                    client = await self._client(server).connect()
                self._idle.put_nowait(_Slot(server, client))

            await asyncio.gather(*(open_one(server) for server in targets[1:]))
        except BaseException:
            await self.aclose()
            raise
        return self

    async def acquire(self, timeout: float | None = None) -> AsyncRemoteEnv:
        """A free session as an episode env; waits up to ``timeout`` (default ``acquire_timeout``).

        Raises:
            TimeoutError: no session came free in time.
        """
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        await self.start()
        assert self._core is not None
        wait = self.acquire_timeout if timeout is None else timeout
        try:
            slot = await asyncio.wait_for(self._idle.get(), wait)
        except TimeoutError:
            raise TimeoutError(
                f"{self!r}: no session came free within {wait:g} s ({self.in_use} episodes running); "
                "close finished episodes with `await env.aclose()`, or make the pool larger"
            ) from None
        if not slot.client.is_open:  # its server closed it or died while it waited: open another
            await slot.client.close()
            try:
                slot = await self._reopen(slot.server, "a lost idle session")
            except BaseException:
                self._idle.put_nowait(slot)  # the next acquire tries again
                raise
        env = AsyncRemoteEnv(slot.client, self._core.fresh(), release=self._release)
        self._lent[env] = slot
        return env

    async def _release(self, env: AsyncRemoteEnv) -> None:
        slot = self._lent.pop(env)
        if self._closed:
            await slot.client.close()
            return
        if env.failed is None:
            self._idle.put_nowait(slot)
            return
        # That session is gone; give the pool a new one, on its server restarted if it died.
        await slot.client.close()
        try:
            new_slot = await self._reopen(slot.server, env.failed)
        except OpenEnvGymError:
            logger.exception("%r: a session lost to %r could not be opened again", self, env.failed)
            return  # the pool is one session smaller
        self._idle.put_nowait(new_slot)

    async def _reopen(self, server: _Server, why: object) -> _Slot:
        """A new session on ``server``, restarted first if it no longer answers (or on another
        server of the pool if it cannot come back)."""
        async with server.restarting:  # the episodes that lost one server restart it once
            if not await asyncio.to_thread(self._fleet.is_healthy, server.index):
                logger.warning("%r: restarting the server at %s after %s", self, server.url, why)
                _, index = await asyncio.to_thread(self._fleet.recover, server.index, hung=True)
                server = self._servers[index]
        return _Slot(server, await self._client(server).connect())

    async def aclose(self) -> None:
        """Close every session (episodes still running fail on their next call) and stop the servers."""
        if self._closed:
            return
        self._closed = True
        clients = [slot.client for slot in self._lent.values()]
        while not self._idle.empty():
            clients.append(self._idle.get_nowait().client)
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
        try:
            await asyncio.to_thread(self._fleet.close)
        except RuntimeError:  # at interpreter exit the executor takes no more work: stop them on this thread
            self._fleet.close()

    async def __aenter__(self) -> AsyncEnvPool:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
