"""`SessionKind`: the logic of one kind of session, handed to a connection; `PlainKind`, the ``/ws`` one.

A connection (:class:`~openenv_gym.client.sync_connection.SyncConnection`, or its asyncio twin)
moves frames; its kind, any class with what :class:`SessionKind` names (none extends another),
says what they are: the URL and subprotocols to open, the request frames of its calls, the
:class:`~openenv_gym.protocol.ClientSession` that matches replies to them, and the checks a reply
must pass. No I/O here, as in websockets' ``ClientProtocol``.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from websockets.typing import Subprotocol

from ..protocol import ClientSession, ErrorFrame, MessageType, ObservationFrame
from ..protocol.arrays import BINARY_SUBPROTOCOL
from ..protocol.shm import ShmOffer, ShmOpenFrame, parse_plain_server_frame

if TYPE_CHECKING:
    from ..protocol.batch import BatchCallFrame
    from .task_resets import TaskResets

__all__ = ["PlainKind", "SessionKind", "with_query"]

ReplyT = TypeVar("ReplyT")


class _PlainReplies(dict[MessageType, type]):
    """The reply each plain call expects; a vector env's ``batch_call``'s (``batch_values``) loads
    the batch frames when first asked for: a plain env needs none of them."""

    def __missing__(self, call: MessageType) -> type:
        if call is not MessageType.BATCH_CALL:
            raise KeyError(call)
        from ..protocol.batch import BatchValuesFrame

        self[call] = BatchValuesFrame
        return BatchValuesFrame


#: What a plain session answers: OpenEnv's replies, a shared-memory offer, a batch_call's values.
_PLAIN_REPLIES = _PlainReplies({**ClientSession.REPLIES, MessageType.SHM_OPEN: ShmOffer})

#: A request a kind sends before any call (its name and the frame's builder), or None.
Opening = tuple[str, Callable[[], str | bytes]] | None


def with_query(url: str, **params: str) -> str:
    """``url`` with ``params`` added to its query string."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.urlencode(params)
    return urllib.parse.urlunsplit(parts._replace(query=f"{parts.query}&{query}" if parts.query else query))


class SessionKind(Protocol[ReplyT]):
    """What one kind of session sends and expects: what a connection needs of the kind it holds.

    Each kind (:class:`PlainKind`, a batch's, a vector's, agents') is a class of its own that has
    these; its request builders (``reset``, ``step``...) return the frame to send and mark its call
    as in flight in :attr:`session`.
    """

    #: Offered in the WebSocket handshake (a codec), or None.
    subprotocols: list[Subprotocol] | None
    #: The call rules and reply types of the kind's frames, fresh for each connection.
    session: ClientSession[ReplyT | ErrorFrame]
    #: The subprotocol the server agreed to, while connected.
    subprotocol: str | None

    def url(self, address: str) -> str:
        """The URL that opens this kind of session on the server at ``address`` (a ``ws://.../ws`` URL)."""
        ...

    def restart(self, subprotocol: str | None) -> None:
        """Start afresh: a connection opened (and agreed on ``subprotocol``) or was dropped (None)."""
        ...

    def opening(self) -> Opening:
        """A request to send as soon as the connection is open, before any call (None: there is none).

        Its reply goes to :meth:`opened`; if either raises, the connection is closed again.
        """
        ...

    def opened(self, reply: ReplyT) -> None:
        """Check the reply to :meth:`opening`'s request."""
        ...

    def check(self, reply: ReplyT) -> ReplyT:
        """``reply``, once it passes this kind's checks (the connection has parsed it and raised for errors).

        Raises:
            ProtocolError, ValueError: the reply does not fit the session (a wrong count of sub-envs...).
        """
        ...

    def close(self) -> str:
        """The close frame; no reply is expected."""
        ...


class PlainKind:
    """One environment over ``/ws``: OpenEnv's own session (reset, step, state), our render and snapshots."""

    def __init__(self) -> None:
        self.subprotocols: list[Subprotocol] | None = None
        self.session: ClientSession[Any] = ClientSession(parse_plain_server_frame, _PLAIN_REPLIES)
        self.subprotocol: str | None = None
        self.render_mode: str | None = None
        #: What the session asks of a PettingZoo server's ``/ws``: its seat (agent, game, ...).
        self.seat: dict[str, str] = {}
        #: How resets send their task options (a Task API server's, a default split); ``None``: as given.
        self.task_resets: TaskResets | None = None
        self._reset_task: str | None = None  # the task the reset in flight plays, for its reply's info

    def restart(self, subprotocol: str | None) -> None:
        self.session = ClientSession(parse_plain_server_frame, _PLAIN_REPLIES)
        self.subprotocol = subprotocol

    def url(self, address: str) -> str:
        params = dict(self.seat)
        if self.render_mode is not None:
            params["render_mode"] = self.render_mode
        return with_query(address, **params) if params else address

    def take_seat(self, params: dict[str, str]) -> None:
        """Open the session as ``/ws?agent=...&game=...``: one agent's seat in a PettingZoo server's game."""
        self.seat = dict(params)

    def opening(self) -> Opening:
        # A seat that cannot be taken (taken, a wrong token) fails the session as it opens: ask
        # for the state at once, so the failure is the connection's, not the first reset's.
        return ("state", self.state) if self.seat else None

    def opened(self, reply: Any) -> None:
        pass  # the state is the seat's: that it came is the check

    def check(self, reply: Any) -> Any:
        task, self._reset_task = self._reset_task, None
        if task is not None and isinstance(reply, ObservationFrame):
            return dataclasses.replace(reply, info={**reply.info, "task_id": task})
        return reply

    def close(self) -> str:
        return self.session.send_close()

    def ask_render_mode(self, render_mode: str) -> None:
        """Open the session as ``/ws?render_mode=...``, offering the binary codec for RGB frames."""
        self.render_mode = render_mode
        self.subprotocols = [Subprotocol(BINARY_SUBPROTOCOL)]

    def reset(self, kwargs: dict[str, Any]) -> str:
        self._reset_task = None
        if self.task_resets is not None:
            kwargs, task = self.task_resets.wire_kwargs(kwargs)
            text = self.session.send_reset(kwargs)
            self._reset_task = task
            return text
        return self.session.send_reset(kwargs)

    def check_can_step(self) -> None:
        """Raise :class:`~openenv_gym.errors.EpisodeEndedError` if the episode ended and no reset followed."""
        self.session.check_can_step()

    def end_episode(self) -> None:
        """End the episode on this side (a client-side time limit): steps are refused until a reset."""
        self.session.end_episode()

    def step(self, action: dict[str, Any]) -> str:
        self._reset_task = None
        return self.session.send_step(action)

    def state(self) -> str:
        return self.session.send_state()

    def shm_open(self) -> str:
        return self.session.send(MessageType.SHM_OPEN, ShmOpenFrame())

    def render(self) -> str:
        return self.session.send_render()

    def call(self, frame: BatchCallFrame) -> str:
        """A vector env's ``batch_call`` of this one env (its answer: ``batch_values`` of one value)."""
        return self.session.send(MessageType.BATCH_CALL, frame)

    def snapshot(self, portable: bool) -> str:
        return self.session.send_snapshot(portable)

    def restore(self, snapshot_id: str | None, portable: bytes | None) -> str:
        return self.session.send_restore(snapshot_id, portable)

    def release(self, ids: tuple[str, ...]) -> str:
        return self.session.send_release(ids)
