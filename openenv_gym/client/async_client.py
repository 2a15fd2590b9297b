"""`AsyncEnvClient`: the asyncio ``/ws`` session client, a :class:`PlainKind`'s calls on the :class:`AsyncConnection` it holds.

It speaks OpenEnv's ``/ws`` protocol, so it works with our servers and with OpenEnv's; the
synchronous twin is :class:`~openenv_gym.client.EnvClient`. Every wait is bounded: connecting by
``open_timeout``, each call by ``call_timeout``. A call that times out leaves the session unusable
(a late reply could be taken for the next one's), so the connection is dropped and later calls
raise :class:`~openenv_gym.errors.ConnectionLostError`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Self

from ..protocol import ObservationFrame, RenderFrame, StateFrame
from ..protocol.snapshot import SnapshotFrame
from . import _holding as holding
from ._session import Delegated
from .async_connection import AsyncConnection
from .seed_check import SeedCheck, metadata_of
from .session_kind import PlainKind

__all__ = ["AsyncEnvClient"]


class AsyncEnvClient:
    """An async session with one environment server; arguments as :class:`SessionTerms`, without ``kind``.

    It holds an :class:`~openenv_gym.client.async_connection.AsyncConnection` (:attr:`connection`)
    handed a :class:`PlainKind` (:attr:`kind`); ``close`` is the connection's.

    Example::

        async with AsyncEnvClient("http://127.0.0.1:8000") as client:
            first = await client.reset(seed=0)
            result = await client.step({"action": 1})
    """

    url, address, token, open_timeout, call_timeout, env_id = holding.SESSION_TERMS
    is_open: Delegated[bool] = Delegated("connection.is_open")
    __repr__ = holding.describe

    def __init__(self, base_url: str, **settings: Any) -> None:
        self.kind = PlainKind()
        self.connection: AsyncConnection[Any] = AsyncConnection(self.kind, base_url, **settings)
        #: Whether the server keeps a seeded reset's seed (checked where nothing says so: see SeedCheck).
        self.seeds = SeedCheck()
        self.close = self.connection.close

    async def connect(self) -> Self:
        """Open the session (see :meth:`AsyncConnection.connect`); idempotent."""
        await self.connection.connect()
        return self

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def reset(self, **kwargs: Any) -> ObservationFrame:
        """Start an episode; ``kwargs`` (``seed``, ``options``, ...) go to the environment's reset.

        Connects first if needed.

        A seeded reset on a server that is not openenv-gym's is checked the first time
        (:class:`~openenv_gym.client.seed_check.SeedCheck`), as :meth:`EnvClient.reset` does.

        Raises:
            RemoteError: the server answered with an error frame; the session stays usable.
            SeedNotHonouredError: the server's env does not keep seeds; reset without one.
            RequestTimeoutError, ConnectionLostError: see the module docstring.
        """
        await self.connect()
        check = self.seeds.pending(self.url, kwargs) and self.seeds.read(
            await asyncio.to_thread(metadata_of, self.address, self.open_timeout, self.token)
        )
        frame = await self.connection.request("reset", self.kind.reset, kwargs)
        if check:
            again = await self.connection.request("reset", self.kind.reset, kwargs)
            assert isinstance(frame, ObservationFrame) and isinstance(again, ObservationFrame)
            self.seeds.judge(self.url, kwargs["seed"], frame, again)
            frame = again
        assert isinstance(frame, ObservationFrame)
        return frame

    async def step(self, action: dict[str, Any]) -> ObservationFrame:
        """Apply one action, given as its wire form (a JSON object of its fields)."""
        frame = await self.connection.request("step", self.kind.step, action)
        assert isinstance(frame, ObservationFrame)
        return frame

    async def state(self) -> dict[str, Any]:
        """The session's state (``episode_id``, ``step_count`` and env-specific fields)."""
        frame = await self.connection.request("state", self.kind.state)
        assert isinstance(frame, StateFrame)
        return frame.state

    async def render(self) -> Any:
        """The env's frame in the session's render mode (see :meth:`ask_render_mode`)."""
        frame = await self.connection.request("render", self.kind.render)
        assert isinstance(frame, RenderFrame)
        return frame.frame

    def ask_render_mode(self, render_mode: str) -> None:
        """Have the session's env made in ``render_mode`` (``/ws?render_mode=...``) and its RGB
        frames sent as raw bytes; call before :meth:`connect`."""
        self.kind.ask_render_mode(render_mode)

    async def snapshot(self, portable: bool = False) -> SnapshotFrame:
        """Have the server keep the env's current state; the reply names it (and, with ``portable``,
        carries it as sealed bytes another server with the same key restores).

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
            SnapshotError: the session holds as many snapshots as the server allows.
        """
        frame = await self.connection.request("snapshot", self.kind.snapshot, portable)
        assert isinstance(frame, SnapshotFrame)
        return frame

    async def restore(self, snapshot_id: str | None = None, portable: bytes | None = None) -> ObservationFrame:
        """Put the env back into a state the server keeps (``snapshot_id``, any session's) or into
        ``portable`` bytes; returns the observation of that state. Connects first if needed.

        Raises:
            SnapshotError: the server keeps no such id, or did not seal those bytes.
        """
        await self.connect()
        frame = await self.connection.request("restore", self.kind.restore, snapshot_id, portable)
        assert isinstance(frame, ObservationFrame)
        return frame

    async def release(self, ids: tuple[str, ...]) -> SnapshotFrame:
        """Have the server drop the kept states ``ids`` (ids it no longer keeps are ignored)."""
        frame = await self.connection.request("release", self.kind.release, ids)
        assert isinstance(frame, SnapshotFrame)
        return frame
