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

from .async_env import AsyncRemoteEnv, Face, open_face, spec_options
from .client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT, AsyncEnvClient, http_get_json
from .errors import OpenEnvGymError
from .providers import Provider, URLProvider, make_providers, start_options
from .providers.fleet import server_layout, split, start_all, stop_all
from .providers.process import DEFAULT_STARTUP_TIMEOUT

__all__ = ["AsyncEnvPool"]

logger = logging.getLogger(__name__)

#: Sessions opened at once while the pool fills (a server takes handshakes one at a time).
OPEN_CONCURRENCY = 32


class _Server:
    """One server of the pool, and the lock under which it is restarted."""

    def __init__(self, provider: Provider, url: str) -> None:
        self.provider = provider
        self.url = url
        self.restarting = asyncio.Lock()


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
        servers: the servers to start (default: one per CPU, at most one per session).
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
        self._server_target: str | None = options.pop("server", None)
        base_url = options.pop("base_url", None)
        base_urls: list[str] | None = options.pop("base_urls", None) or ([base_url] if base_url else None)
        provider_name = options.pop("provider", "process")
        provider_kwargs = options.pop("provider_kwargs", None)
        env_kwargs = options.pop("env_kwargs", None)
        self.open_timeout: float = options.pop("open_timeout", DEFAULT_OPEN_TIMEOUT)
        self.call_timeout: float = options.pop("call_timeout", DEFAULT_CALL_TIMEOUT)
        startup_timeout = options.pop("startup_timeout", DEFAULT_STARTUP_TIMEOUT)
        self._json_schema_fallback: bool = options.pop("json_schema_fallback", False)
        self._tool_calls: bool | None = options.pop("tool_calls", None)
        token = options.pop("token", None)
        options.pop("sessions_per_server", None)  # a spec's, for make_vec; this pool's is its argument
        provider_options, env_kwargs = start_options(
            provider_name, provider_kwargs, options, token, env_kwargs, starts=not base_urls
        )
        if base_urls:
            if servers is not None:
                raise ValueError("servers= is the number of servers to start; with base_urls= none is started")
            self._providers: list[Provider] = [URLProvider(url, token=token) for url in base_urls]
        else:
            if self._server_target is None:
                raise ValueError(f"{env_id!r} runs on a server you give: pass base_url= or base_urls=")
            count, per_server = server_layout(size, sessions_per_server, servers)
            self._providers = make_providers(
                provider_name,
                count,
                target=self._server_target,
                env_kwargs=env_kwargs,
                max_episode_steps=None,  # each episode's time limit is the client's
                max_sessions=per_server,
                startup_timeout=startup_timeout,
                **provider_options,
            )
        self._token = token
        self._servers: list[_Server] = []
        self._idle: asyncio.Queue[_Slot] = asyncio.Queue()
        self._lent: dict[AsyncRemoteEnv, _Slot] = {}
        self._face: Face | None = None
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"AsyncEnvPool({self.env_id}, size={self.size}, servers={len(self._providers)})"

    @property
    def idle(self) -> int:
        """Sessions waiting to be acquired."""
        return self._idle.qsize()

    @property
    def in_use(self) -> int:
        """Episodes acquired and not yet closed."""
        return len(self._lent)

    def _token_of(self, provider: Provider) -> str | None:
        return self._token or provider.token

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
            urls = await asyncio.to_thread(start_all, self._providers, f"starting {self.env_id} servers")
            self._servers = [_Server(provider, url) for provider, url in zip(self._providers, urls)]
            first = self._servers[0]
            probe = self._client(first)
            self._face = await open_face(
                probe,
                first.url,
                self._server_target,
                first.provider,
                self.open_timeout,
                self._token_of(first.provider),
                self._json_schema_fallback,
                self._tool_calls,
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
        assert self._face is not None
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
                slot = _Slot(slot.server, await self._reopen(slot.server, "a lost idle session"))
            except BaseException:
                self._idle.put_nowait(slot)  # the next acquire tries again
                raise
        env = AsyncRemoteEnv(
            slot.client, self._face, env_id=self.env_id, max_episode_steps=self.max_episode_steps, release=self._release
        )
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
            client = await self._reopen(slot.server, env.failed)
        except OpenEnvGymError:
            logger.exception("%r: a session lost to %r could not be opened again", self, env.failed)
            return  # the pool is one session smaller
        self._idle.put_nowait(_Slot(slot.server, client))

    async def _reopen(self, server: _Server, why: object) -> AsyncEnvClient:
        """A new session on ``server``, restarted first if it no longer answers."""
        async with server.restarting:  # the episodes that lost one server restart it once
            try:
                await asyncio.to_thread(http_get_json, server.url, "/health", timeout=self.open_timeout)
            except OpenEnvGymError:
                logger.warning("%r: restarting the server at %s after %s", self, server.url, why)
                await asyncio.to_thread(server.provider.kill)
                server.url = await asyncio.to_thread(server.provider.start)
        return await self._client(server).connect()

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
            await asyncio.to_thread(stop_all, self._providers)
        except RuntimeError:  # at interpreter exit the executor takes no more work: stop them on this thread
            stop_all(self._providers)

    async def __aenter__(self) -> AsyncEnvPool:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
