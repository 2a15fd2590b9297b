"""`AgentsHandler`: a multi-agent session (``/ws/agents``), one PettingZoo env whose every agent one client drives."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ..protocol import CloseFrame, ErrorCode, ErrorFrame, MessageType, RenderRequest, ServerSession
from ..protocol.agents import AgentsRequest, AgentsResult, AgentsValue, parse_agents_client_frame
from ..protocol.batch import AutoresetMode
from .agents_host import AgentsHost
from .session import Session, _execution_error, make_environments

if TYPE_CHECKING:
    from .worker import Worker

__all__ = ["AgentsHandler"]


class AgentsHandler:
    """Serve ``/ws/agents?api=...``: one PettingZoo env made for the connection, one call per request.

    Every call runs in the session's worker thread (a PettingZoo env may block). Replies are
    packed on a binary connection, JSON otherwise (:mod:`openenv_gym.protocol.agents`).
    """

    kind = "agents"
    size = 1
    autoreset_mode: AutoresetMode | None = None
    blocking = True

    def __init__(self, make: Callable[[], Any], api: str) -> None:
        self.make = make
        self.api = api
        self.protocol = ServerSession(parse_agents_client_frame, step_types=())
        self.host: AgentsHost | None = None

    @property
    def live(self) -> bool:
        return self.host is not None

    async def open(self, session: Session) -> ErrorFrame | None:
        async def create() -> None:
            env = await session.call(self.make)
            self.host = AgentsHost(env, self.api)

        return await make_environments(session, create, self.make)

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, CloseFrame):
            return None
        host = self.host
        assert host is not None
        if isinstance(request, RenderRequest):
            return await session.render_reply(host.render)
        assert isinstance(request, AgentsRequest)
        kind = request.type
        try:
            if kind is MessageType.AGENTS_SPEC:
                reply: Any = await session.call(host.spec)
            elif kind is MessageType.AGENTS_RESET:
                reply = AgentsResult(await session.call(host.reset, request.data["seed"], request.data["options"]))
                session.episodes += 1
            elif kind is MessageType.AGENTS_STEP:
                if not session.episodes:
                    raise ProtocolError(ErrorCode.SESSION_ERROR.value, "agents_step before agents_reset: reset first")
                reply = AgentsResult(await session.call(host.step, request.data))
                session.steps += 1
            elif kind is MessageType.AGENTS_OBSERVE:
                reply = AgentsValue(await session.call(host.observe, request.data["agent"]))
            else:
                reply = AgentsValue(await session.call(host.state))
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc).serialize()
        except Exception as exc:
            return _execution_error(kind.value, exc, session.send_tracebacks).serialize()
        try:
            return reply.serialize(session.binary)
        except Exception as exc:  # a value that cannot be encoded must not end the session
            return _execution_error(f"encoding the {kind.value} reply", exc, session.send_tracebacks).serialize()

    def frame_of(self, sub_env: int) -> Any:
        assert self.host is not None
        return self.host.render()

    async def close(self, worker: Worker) -> bool:
        """Close the env, with its timeout."""
        self.protocol.close()
        host, self.host = self.host, None
        return await worker.close_env(host) if host is not None else True
