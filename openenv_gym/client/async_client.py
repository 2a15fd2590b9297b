"""`AsyncEnvClient`: the asyncio ``/ws`` session client, an :class:`AsyncConnection` handed a :class:`PlainKind`.

It speaks OpenEnv's ``/ws`` protocol, so it works with our servers and with OpenEnv's; the
synchronous twin is :class:`~openenv_gym.client.EnvClient`. Every wait is bounded: connecting by
``open_timeout``, each call by ``call_timeout``. A call that times out leaves the session unusable
(a late reply could be taken for the next one's), so the connection is dropped and later calls
raise :class:`~openenv_gym.errors.ConnectionLostError`.
"""

from __future__ import annotations

from typing import Any

from ..protocol import ObservationFrame, StateFrame
from ..protocol.snapshot import SnapshotFrame
from .async_connection import AsyncConnection
from .session_kind import PlainKind

__all__ = ["AsyncEnvClient"]


class AsyncEnvClient(AsyncConnection[Any]):
    """An async session with one environment server; arguments as :class:`SessionClient`, without ``kind``.

    Example::

        async with AsyncEnvClient("http://127.0.0.1:8000") as client:
            first = await client.reset(seed=0)
            result = await client.step({"action": 1})
    """

    kind: PlainKind

    def __init__(self, base_url: str, **settings: Any) -> None:
        super().__init__(PlainKind(), base_url, **settings)

    async def reset(self, **kwargs: Any) -> ObservationFrame:
        """Start an episode; ``kwargs`` (``seed``, ``options``, ...) go to the environment's reset.

        Connects first if needed.

        Raises:
            RemoteError: the server answered with an error frame; the session stays usable.
            RequestTimeoutError, ConnectionLostError: see the module docstring.
        """
        await self.connect()
        frame = await self._request("reset", self.kind.reset, kwargs)
        assert isinstance(frame, ObservationFrame)
        return frame

    async def step(self, action: dict[str, Any]) -> ObservationFrame:
        """Apply one action, given as its wire form (a JSON object of its fields)."""
        frame = await self._request("step", self.kind.step, action)
        assert isinstance(frame, ObservationFrame)
        return frame

    async def state(self) -> dict[str, Any]:
        """The session's state (``episode_id``, ``step_count`` and env-specific fields)."""
        frame = await self._request("state", self.kind.state)
        assert isinstance(frame, StateFrame)
        return frame.state

    async def snapshot(self, portable: bool = False) -> SnapshotFrame:
        """Have the server keep the env's current state; the reply names it (and, with ``portable``,
        carries it as sealed bytes another server with the same key restores).

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
            SnapshotError: the session holds as many snapshots as the server allows.
        """
        frame = await self._request("snapshot", self.kind.snapshot, portable)
        assert isinstance(frame, SnapshotFrame)
        return frame

    async def restore(self, snapshot_id: str | None = None, portable: bytes | None = None) -> ObservationFrame:
        """Put the env back into a state the server keeps (``snapshot_id``, any session's) or into
        ``portable`` bytes; returns the observation of that state. Connects first if needed.

        Raises:
            SnapshotError: the server keeps no such id, or did not seal those bytes.
        """
        await self.connect()
        frame = await self._request("restore", self.kind.restore, snapshot_id, portable)
        assert isinstance(frame, ObservationFrame)
        return frame

    async def release(self, ids: tuple[str, ...]) -> SnapshotFrame:
        """Have the server drop the kept states ``ids`` (ids it no longer keeps are ignored)."""
        frame = await self._request("release", self.kind.release, ids)
        assert isinstance(frame, SnapshotFrame)
        return frame
