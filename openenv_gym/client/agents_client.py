"""`AgentsClient`: one multi-agent session (``/ws/agents``), a PettingZoo env on a server; its kind, `AgentsKind`."""

from __future__ import annotations

import urllib.parse
from typing import Any

from websockets.typing import Subprotocol

from ..protocol import ClientSession, ErrorFrame, MessageType, RenderFrame
from ..protocol.agents import (
    AGENTS_PATH,
    AgentsRequest,
    AgentsResult,
    AgentsSpec,
    AgentsValue,
    agents_query,
    parse_agents_server_frame,
)
from ..protocol.arrays import BINARY_SUBPROTOCOL
from . import _holding as holding
from .session_kind import Opening
from .sync_connection import SyncConnection

__all__ = ["AgentsClient", "AgentsKind", "AgentsReply"]

#: What a multi-agent session answers, besides an error frame.
AgentsReply = AgentsSpec | AgentsResult | AgentsValue | RenderFrame

_REPLIES: dict[MessageType, type] = {
    MessageType.AGENTS_SPEC: AgentsSpec,
    MessageType.AGENTS_RESET: AgentsResult,
    MessageType.AGENTS_STEP: AgentsResult,
    MessageType.AGENTS_OBSERVE: AgentsValue,
    MessageType.AGENTS_STATE: AgentsValue,
    MessageType.RENDER: RenderFrame,
}


class AgentsKind:
    """The logic of a multi-agent session: its frames (packed once the binary codec is agreed),
    and the env's spec asked for as soon as the connection opens."""

    def __init__(self, api: str, render_mode: str | None, binary: bool) -> None:
        self.subprotocols = [Subprotocol(BINARY_SUBPROTOCOL)] if binary else None
        self.session: ClientSession[AgentsReply | ErrorFrame] = ClientSession(parse_agents_server_frame, _REPLIES)
        self.subprotocol: str | None = None
        self.api = api
        self.query = agents_query(api, render_mode)
        #: The env's spec, from the opening request.
        self.spec: AgentsSpec | None = None

    def restart(self, subprotocol: str | None) -> None:
        self.session = ClientSession(parse_agents_server_frame, _REPLIES)
        self.subprotocol = subprotocol

    def url(self, address: str) -> str:
        parts = urllib.parse.urlsplit(address)
        return urllib.parse.urlunsplit(parts._replace(path=parts.path[: -len("/ws")] + AGENTS_PATH, query=self.query))

    def opening(self) -> Opening:
        return ("agents_spec", lambda: self.request(AgentsRequest(MessageType.AGENTS_SPEC)))

    def opened(self, reply: AgentsReply) -> None:
        if not isinstance(reply, AgentsSpec) or reply.api != self.api:
            raise ValueError(f"the server answered agents_spec with {reply}, not a {self.api} env's spec")
        self.spec = reply

    def check(self, reply: AgentsReply) -> AgentsReply:
        if isinstance(reply, AgentsResult):
            reply.check(self.api)
        return reply

    def request(self, frame: AgentsRequest) -> str | bytes:
        """The frame to send, packed on a binary connection; marks its call as in flight."""
        if self.subprotocol is not None:
            return self.session.send_binary(frame.type, frame)
        return self.session.send(frame.type, frame)

    def close(self) -> str:
        return self.session.send_close()

    def render(self) -> str:
        return self.session.send_render()


class AgentsClient:
    """Drive one PettingZoo env on a server, every agent of it, one frame per call.

    It holds a :class:`~openenv_gym.client.sync_connection.SyncConnection` (:attr:`connection`)
    handed an :class:`AgentsKind` (:attr:`kind`); ``close`` is the connection's.

    Args:
        base_url: the server, as ``http://host:port`` or ``ws://host:port``.
        api: ``"aec"`` or ``"parallel"``: the server makes the env in that API.
        render_mode: have the env made in this render mode.
        binary: offer the binary codec (arrays as raw bytes both ways); JSON otherwise.
        **settings: as for :class:`~openenv_gym.client.SessionTerms`.
    """

    url, address, token, open_timeout, call_timeout, env_id = holding.SESSION_TERMS
    connect, __enter__, __exit__, __repr__ = holding.connect, holding.enter, holding.leave, holding.describe

    def __init__(
        self, base_url: str, api: str, *, render_mode: str | None = None, binary: bool = True, **settings: Any
    ) -> None:
        self.kind = AgentsKind(api, render_mode, binary)
        self.connection: SyncConnection[AgentsReply] = SyncConnection(self.kind, base_url, **settings)
        self.close = self.connection.close

    @property
    def spec(self) -> AgentsSpec:
        """The env's API, agents, spaces and metadata (connecting first if needed)."""
        self.connect()
        assert self.kind.spec is not None
        return self.kind.spec

    def _ask(self, call: str, frame: AgentsRequest) -> Any:
        return self.connection.request(call, self.kind.request, frame)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Reset the env; its result's data (see :mod:`openenv_gym.protocol.agents`)."""
        self.connect()
        reply = self._ask("agents_reset", AgentsRequest(MessageType.AGENTS_RESET, {"seed": seed, "options": options}))
        return reply.data  # type: ignore[no-any-return]

    def step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Step with ``{"action": ...}`` (AEC) or ``{"actions": {...}}`` (Parallel); the result's data."""
        return self._ask("agents_step", AgentsRequest(MessageType.AGENTS_STEP, data)).data  # type: ignore[no-any-return]

    def observe(self, agent: str) -> Any:
        """``observe(agent)`` on the server (AEC)."""
        return self._ask("agents_observe", AgentsRequest(MessageType.AGENTS_OBSERVE, {"agent": agent})).value

    def state(self) -> Any:
        """The env's global state."""
        return self._ask("agents_state", AgentsRequest(MessageType.AGENTS_STATE)).value

    def render(self) -> Any:
        """What the env's ``render()`` returns."""
        frame = self.connection.request("render", self.kind.render)
        assert isinstance(frame, RenderFrame)  # the session takes no other reply to a render
        return frame.frame
