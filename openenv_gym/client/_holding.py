"""What every session client does with the connection it holds, written once and assigned in each
client's class body (``connect = holding.connect``): the clients compose a connection and share
these as functions, not a base class.

The attributes callers read through to the connection or the kind are shared tuples of
:class:`~openenv_gym.client._session.Delegated` settings, unpacked in the class body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..protocol import RenderFrame
from ._session import Delegated

if TYPE_CHECKING:
    from ..protocol.batch import AutoresetMode
    from .shm_link import ShmLink
    from .sync_connection import SyncConnection

__all__ = [
    "BATCH_SHAPE",
    "SESSION_TERMS",
    "STEP_TRANSPORT",
    "begin_render",
    "calls",
    "connect",
    "describe",
    "enter",
    "leave",
    "render",
    "round_trip",
    "round_trip_on",
]

FrameT = TypeVar("FrameT")
ReplyT = TypeVar("ReplyT")
ReplyT_co = TypeVar("ReplyT_co", covariant=True)

#: ``url, address, token, open_timeout, call_timeout, env_id``: the session's terms, as every client shows them.
SESSION_TERMS: tuple[
    Delegated[str], Delegated[str], Delegated[str | None], Delegated[float], Delegated[float], Delegated[str | None]
] = (
    Delegated("connection.url"),
    Delegated("connection.terms.address"),
    Delegated("connection.terms.token"),
    Delegated("connection.terms.open_timeout"),
    Delegated("connection.terms.call_timeout"),
    Delegated("connection.terms.env_id"),
)
#: ``link, transport, transport_reason``: the segment the steps take while connected with ``shm``,
#: ``"shm"`` or ``"ws"``, and why the steps take that transport (after ``connect``).
STEP_TRANSPORT: tuple[Delegated[ShmLink | None], Delegated[str], Delegated[str]] = (
    Delegated("connection.link"),
    Delegated("connection.transport"),
    Delegated("connection.steps.reason"),
)
#: ``envs, autoreset_mode``: how many sub-envs a batch or vector session holds, and their autoreset mode.
BATCH_SHAPE: tuple[Delegated[int], Delegated[AutoresetMode]] = (
    Delegated("kind.envs"),
    Delegated("kind.autoreset_mode"),
)


class _Connecting(Protocol):
    """A connection that opens on ``connect``."""

    def connect(self) -> Any: ...


class _Holder(Protocol):
    """A client: it holds a connection and closes it."""

    @property
    def connection(self) -> _Connecting: ...

    def close(self) -> None: ...


class _Named(Protocol):
    @property
    def url(self) -> str: ...


HolderT = TypeVar("HolderT", bound=_Holder)


def connect(self: HolderT) -> HolderT:
    """Open the session, with the kind's opening request if it has one (see
    :meth:`SyncConnection.connect <openenv_gym.client.sync_connection.SyncConnection.connect>`); idempotent."""
    self.connection.connect()
    return self


def enter(self: HolderT) -> HolderT:
    return connect(self)


def leave(self: _Holder, *exc_info: object) -> None:
    self.close()


def describe(self: _Named) -> str:
    """``ClassName('ws://...')``: a client or connection, by its session's URL."""
    return f"{type(self).__name__}({self.url!r})"


class Begin(Protocol):
    """:meth:`SyncConnection.begin <openenv_gym.client.sync_connection.SyncConnection.begin>`'s signature."""

    def __call__(self, call: str, build: Callable[..., str | bytes], *args: Any) -> None: ...


class Complete(Protocol[ReplyT_co]):
    """:meth:`SyncConnection.complete <openenv_gym.client.sync_connection.SyncConnection.complete>`'s signature."""

    def __call__(self, timeout: float | None = None) -> ReplyT_co: ...


def calls(connection: SyncConnection[ReplyT]) -> tuple[Begin, Complete[ReplyT], Callable[[], None]]:
    """A client's ``begin``, ``complete`` and ``close``: its connection's own bound methods, kept on
    the client so a step costs no extra call or lookup."""
    return connection.begin, connection.complete, connection.close


def round_trip(
    connection: SyncConnection[Any], begin: Callable[..., None], reply: type[FrameT], *args: Any, **kwargs: Any
) -> FrameT:
    """``begin(*args, **kwargs)`` and ``connection.complete()`` in one call, its reply of type ``reply``."""
    with connection.lock:
        begin(*args, **kwargs)
        result = connection.complete()
    assert isinstance(result, reply)  # the session takes no other reply to that request
    return result


class _Synchronous(Protocol):
    @property
    def connection(self) -> SyncConnection[Any]: ...


class _RenderingKind(Protocol):
    def render(self) -> str: ...


class _Rendering(Protocol):
    @property
    def connection(self) -> SyncConnection[Any]: ...

    @property
    def kind(self) -> _RenderingKind: ...

    @property
    def begin(self) -> Begin: ...

    def begin_render(self) -> None: ...


def round_trip_on(
    self: _Synchronous, begin: Callable[..., None], reply: type[FrameT], *args: Any, **kwargs: Any
) -> FrameT:
    """:func:`round_trip` on the client's connection (a client's ``_round_trip``)."""
    return round_trip(self.connection, begin, reply, *args, **kwargs)


def begin_render(self: _Rendering) -> None:
    """Send a render request; :meth:`complete` reads its :class:`~openenv_gym.protocol.RenderFrame`
    (a batch or vector session's holds every sub-env's frame)."""
    self.begin("render", self.kind.render)


def render(self: _Rendering) -> Any:
    """The frame :meth:`begin_render` and :meth:`complete` read (every sub-env's, on a batch or vector session)."""
    return round_trip(self.connection, self.begin_render, RenderFrame).frame
