"""`EnvClient`: the synchronous ``/ws`` session client, a :class:`PlainKind`'s calls on the connection it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import ObservationFrame, RenderFrame, StateFrame
from ..protocol.snapshot import SnapshotFrame
from . import _holding as holding
from .seed_check import SeedCheck, metadata_of
from .session_kind import PlainKind
from .step_transport import StepTransport
from .sync_connection import SyncConnection, replies_waiting

if TYPE_CHECKING:
    from ..protocol.vector import VectorResultFrame

__all__ = ["EnvClient", "replies_waiting"]


class EnvClient:
    """A synchronous session with one environment server (ours or OpenEnv's).

    Arguments as :class:`~openenv_gym.client.SessionTerms`, without ``kind``; and
    ``transport``: ``"ws"`` (default), or ``"auto"``/``"shm"`` to move the steps of a Gymnasium
    env served by openenv-gym on this host to shared memory (:meth:`step_shared`; see
    :class:`~openenv_gym.client.step_transport.StepTransport`). It holds a
    :class:`~openenv_gym.client.sync_connection.SyncConnection` (:attr:`connection`) handed a
    :class:`PlainKind` (:attr:`kind`); ``begin``, ``complete`` and ``close`` are the connection's.
    Calls are serialized by a lock, so a client may be shared between threads. Every wait is
    bounded: connecting by ``open_timeout``, each call by ``call_timeout``. After a timeout the
    session is abandoned (a late reply could be taken for the next call's) and later calls raise
    :class:`~openenv_gym.errors.ConnectionLostError`; ``reset`` connects again.

    Example::

        with EnvClient("http://127.0.0.1:8000") as client:
            first = client.reset(seed=0)
            result = client.step({"action": 0})
    """

    url, address, token, open_timeout, call_timeout, env_id = holding.SESSION_TERMS
    link, transport, transport_reason = holding.STEP_TRANSPORT
    connect, __enter__, __exit__, __repr__ = holding.connect, holding.enter, holding.leave, holding.describe
    begin_render = holding.begin_render

    def __init__(self, base_url: str, *, transport: str = "ws", **settings: Any) -> None:
        self.kind = kind = PlainKind()
        steps = StepTransport(transport, offer_request=kind.shm_open)
        self.connection: SyncConnection[Any] = SyncConnection(kind, base_url, steps=steps, **settings)
        #: Whether the server keeps a seeded reset's seed (checked where nothing says so: see SeedCheck).
        self.seeds = SeedCheck()
        self.begin, self.complete, self.close = holding.calls(self.connection)

    def keep_to_websocket(self, reason: str) -> None:
        """Have the steps take the WebSocket, for ``reason`` (the caller knows the server cannot offer more)."""
        self.connection.steps.keep_to_websocket(reason)

    def step_shared(self, action: Any) -> VectorResultFrame:
        """Apply one action through shared memory (:attr:`transport` must be ``"shm"``): a value of
        the env's action space, already checked against it. The reply is a batch of one: the
        observation, reward and flags as arrays of one row, ``infos`` the env's info as JSON.

        Raises:
            EpisodeEndedError: the episode ended: reset first.
            RemoteError, RequestTimeoutError, ConnectionLostError: as :meth:`step`.
        """
        self.kind.check_can_step()
        connection = self.connection
        with connection.lock:
            connection.begin_shared_step("step", lambda link: link.send_one(action))
            result: VectorResultFrame = connection.complete()
        if result.terminated[0] or result.truncated[0]:
            self.kind.end_episode()
        return result

    def begin_reset(self, **kwargs: Any) -> None:
        """Send a reset (connecting first if needed); :meth:`complete` reads its observation. A
        seeded reset that must be checked (see :meth:`reset`) is checked first, on two resets of its own.

        Raises:
            SeedNotHonouredError: the server's env does not keep seeds; nothing more is sent.
        """
        self.connect()
        if self._seed_check_due(kwargs):
            self._checked_reset(kwargs)
        self.begin("reset", self.kind.reset, kwargs)

    def begin_step(self, action: dict[str, Any]) -> None:
        """Send a step; :meth:`complete` reads its observation."""
        self.begin("step", self.kind.step, action)

    def reset(self, **kwargs: Any) -> ObservationFrame:
        """Start an episode; ``kwargs`` (``seed``, ``options``, ...) go to the environment's reset.

        Connects first if needed. A seeded reset on a server that is not openenv-gym's is checked
        the first time (:class:`~openenv_gym.client.seed_check.SeedCheck`: reset twice, the same
        first observation).

        Raises:
            RemoteError: the server answered with an error frame; the session stays usable.
            SeedNotHonouredError: the server's env does not keep seeds; reset without one.
            RequestTimeoutError, ConnectionLostError: see the class docstring.
        """
        self.connect()
        if self._seed_check_due(kwargs):
            return self._checked_reset(kwargs)
        frame = self.connection.request("reset", self.kind.reset, kwargs)
        assert isinstance(frame, ObservationFrame)
        return frame

    def _seed_check_due(self, kwargs: dict[str, Any]) -> bool:
        return self.seeds.pending(self.url, kwargs) and self.seeds.read(
            metadata_of(self.address, self.open_timeout, self.token)
        )

    def _checked_reset(self, kwargs: dict[str, Any]) -> ObservationFrame:
        """Reset twice with the same seed; the second's observation, if the seed held (see SeedCheck)."""
        first = self.connection.request("reset", self.kind.reset, kwargs)
        again = self.connection.request("reset", self.kind.reset, kwargs)
        assert isinstance(first, ObservationFrame) and isinstance(again, ObservationFrame)
        self.seeds.judge(self.url, kwargs["seed"], first, again)
        return again

    def step(self, action: dict[str, Any]) -> ObservationFrame:
        """Apply one action, given as its wire form (a JSON object of its fields)."""
        frame = self.connection.request("step", self.kind.step, action)
        assert isinstance(frame, ObservationFrame)
        return frame

    def state(self) -> dict[str, Any]:
        """The session's state (``episode_id``, ``step_count`` and env-specific fields)."""
        frame = self.connection.request("state", self.kind.state)
        assert isinstance(frame, StateFrame)
        return frame.state

    def render(self) -> Any:
        """The env's frame in the session's render mode (see :meth:`ask_render_mode`)."""
        frame = self.connection.request("render", self.kind.render)
        assert isinstance(frame, RenderFrame)
        return frame.frame

    def snapshot(self, portable: bool = False) -> SnapshotFrame:
        """Have the server keep the env's current state; the reply names it (and, with ``portable``,
        carries it as sealed bytes another server with the same key restores).

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
            SnapshotError: the session holds as many snapshots as the server allows.
        """
        frame = self.connection.request("snapshot", self.kind.snapshot, portable)
        assert isinstance(frame, SnapshotFrame)
        return frame

    def restore(self, snapshot_id: str | None = None, portable: bytes | None = None) -> ObservationFrame:
        """Put the env back into a state the server keeps (``snapshot_id``, any session's) or into
        ``portable`` bytes; returns the observation of that state. Connects first if needed.

        Raises:
            SnapshotError: the server keeps no such id, or did not seal those bytes.
        """
        self.connect()
        frame = self.connection.request("restore", self.kind.restore, snapshot_id, portable)
        assert isinstance(frame, ObservationFrame)
        return frame

    def release(self, ids: tuple[str, ...]) -> SnapshotFrame:
        """Have the server drop the kept states ``ids`` (ids it no longer keeps are ignored)."""
        frame = self.connection.request("release", self.kind.release, ids)
        assert isinstance(frame, SnapshotFrame)
        return frame

    def ask_render_mode(self, render_mode: str) -> None:
        """Have the session's env made in ``render_mode`` (``/ws?render_mode=...``) and its RGB
        frames sent as raw bytes; call before :meth:`connect`."""
        self.kind.ask_render_mode(render_mode)
