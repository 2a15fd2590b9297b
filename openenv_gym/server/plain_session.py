"""`PlainHandler`: a ``/ws`` session's frames on one environment: reset, step, state, render, tools, MCP."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic

from ..errors import ProtocolError, SnapshotRefusedError
from ..protocol import (
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    McpFrame,
    ObservationFrame,
    RenderRequest,
    ResetFrame,
    ServerSession,
    SessionState,
    StateFrame,
    StateRequest,
    StepFrame,
    jsonrpc,
)
from ..protocol.batch import AutoresetMode, BatchCallFrame, BatchValuesFrame
from ..protocol.session import EPISODE_ENDED_MESSAGE
from ..protocol.shm import ShmOpenFrame, parse_plain_client_frame, refused
from ..protocol.snapshot import ReleaseRequest, RestoreRequest, SnapshotFrame, SnapshotRequest
from ..protocol.tools import CallToolRequest, ListToolsRequest, parse_tool_action
from .environment import Environment
from .seeding import refuse_unseedable
from .session import _accepted_kwargs, _execution_error, make_environments
from .shm_steps import ShmSteps
from .snapshots import Kept, SessionSnapshots
from .task_api import task_reset_kwargs
from .tools import ToolOutcome, run_tool

if TYPE_CHECKING:
    import numpy as np

    from .gym_environment import GymEnvironment
    from .session import Session
    from .worker import Worker

__all__ = ["PlainHandler"]

#: Why an MCP ``tools/call`` is refused in a session state (as a step would be).
_TOOLS_CALL_REFUSALS = {
    SessionState.OPEN: "tools/call before reset: send a reset frame first",
    SessionState.ENDED: f"tools/call: {EPISODE_ENDED_MESSAGE}",
}


class PlainHandler:
    """One environment per connection, made by ``factory``; OpenEnv's frames, our tools and MCP,
    and snapshots kept in ``snapshots`` (none: the session refuses them).

    A client on the same host may move the steps of a Gymnasium env whose spaces batch into
    arrays to shared memory (``shm_open``, :mod:`openenv_gym.protocol.shm`); every other frame
    still takes the WebSocket, and the env then lives in the channel's thread.
    """

    kind = "plain"
    size = 1
    autoreset_mode: AutoresetMode | None = None

    def __init__(
        self, factory: Callable[[], Environment[Any, Any, Any]], snapshots: SessionSnapshots | None = None
    ) -> None:
        self.factory = factory
        self.env: Environment[Any, Any, Any] | None = None
        self.protocol = ServerSession(parse_plain_client_frame)
        self.snapshots = snapshots
        #: The observation frame last sent (a snapshot keeps it, a restore answers with it).
        self._last_frame: str | None = None
        #: The frame of the last step through shared memory, made only when one is asked for.
        self._last_step: Callable[[], ObservationFrame] | None = None
        #: The shared-memory offer, then channel, once a client asks for one.
        self.shm = ShmSteps("step")

    @property
    def blocking(self) -> bool:
        return bool(getattr(self.env if self.env is not None else self.factory, "blocking", True))

    @property
    def live(self) -> bool:
        return self.env is not None

    async def open(self, session: Session) -> ErrorFrame | None:
        async def create() -> None:
            self.env = await session.call(self.factory)

        return await make_environments(session, create, self.factory)

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        env = self.env
        assert env is not None, "handle() before open()"
        self.shm.withdraw()  # an offer not taken before this request
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, ShmOpenFrame):
            return self._offer_shm(session, env)
        if isinstance(request, McpFrame):
            return (await self._mcp(session, env, request.data)).serialize()
        if isinstance(request, StepFrame):
            return await self._step(session, env, request)
        if isinstance(request, ResetFrame):
            try:
                refuse_unseedable(env.reset, request.kwargs)
                kwargs = _accepted_kwargs(env.reset, task_reset_kwargs(env, request.kwargs))
                observation = await session.call(env.reset, **kwargs)
                frame = env.reset_frame(observation)
                reply = frame.serialize()
            except Exception as exc:
                return _execution_error("reset", exc, session.send_tracebacks).serialize()
            self.protocol.reset_succeeded()
            self._took_frame(reply)
            session.observed("reset", None, reply, frame)
            return reply
        if isinstance(request, StateRequest):
            try:
                return StateFrame(env.state_data()).serialize()
            except Exception as exc:
                return _execution_error("state", exc, session.send_tracebacks).serialize()
        if isinstance(request, RenderRequest):
            return await session.render_reply(env.render)
        if isinstance(request, BatchCallFrame):
            return await self._call(session, env, request)
        if isinstance(request, (SnapshotRequest, RestoreRequest, ReleaseRequest)):
            return await self._snapshots(session, env, request)
        assert isinstance(request, CloseFrame)
        return None

    @staticmethod
    async def _call(session: Session, env: Environment[Any, Any, Any], request: BatchCallFrame) -> str:
        """A vector env's call/get_attr/set_attr of its one sub-env here (a batch of one), as a batch
        session answers it, the value in its JSON form."""
        from ..spaces import jsonable  # loaded here: a server of another env runs without gymnasium
        from .batch_session import answer_call

        try:
            value = await session.call(answer_call, env, request, (request.values or [None])[0])
            return BatchValuesFrame([jsonable(value)]).serialize()
        except Exception as exc:
            return _execution_error(f"batch_call {request.op} {request.name}", exc, session.send_tracebacks).serialize()

    async def _snapshots(
        self,
        session: Session,
        env: Environment[Any, Any, Any],
        request: SnapshotRequest | RestoreRequest | ReleaseRequest,
    ) -> str:
        snapshots = self.snapshots
        if snapshots is None:
            return ErrorFrame(ErrorCode.SNAPSHOT_UNSUPPORTED, "this server keeps no snapshots").serialize()
        if isinstance(request, ReleaseRequest):
            return snapshots.release_reply(request.ids)
        try:
            await snapshots.store.check_supported()
            if isinstance(request, SnapshotRequest):
                return await self._snapshot(session, env, snapshots, request.portable)
            return await self._restore(session, env, snapshots, request)
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc).serialize()
        except Exception as exc:  # describing the env (its probe) failed: the session lives on
            return _execution_error(str(request).split()[0], exc, session.send_tracebacks).serialize()

    async def _snapshot(
        self, session: Session, env: Environment[Any, Any, Any], snapshots: SessionSnapshots, portable: bool
    ) -> str:
        try:
            state = await session.call(env.snapshot)
        except NotImplementedError as exc:
            return ErrorFrame(ErrorCode.SNAPSHOT_UNSUPPORTED, f"snapshot: {exc}").serialize()
        except Exception as exc:
            return _execution_error("snapshot", exc, session.send_tracebacks).serialize()
        if not isinstance(state, bytes):
            return ErrorFrame(
                ErrorCode.EXECUTION_ERROR,
                f"snapshot: {type(env).__name__}.snapshot() returned {type(state).__name__}, not bytes",
            ).serialize()
        last_frame = self._last_reply()
        assert last_frame is not None  # the session rules refuse a snapshot before a reset
        kept = Kept(state, last_frame, self.protocol.state is SessionState.ENDED, session.render_mode)
        sealed = snapshots.travelling(kept) if portable else None  # before it is kept: it may be refused
        snapshot_id = snapshots.keep(kept)
        return SnapshotFrame(
            id=snapshot_id,
            size=len(state),
            portable=sealed,
            held=snapshots.held,
            held_bytes=snapshots.held_bytes,
        ).serialize()

    async def _restore(
        self, session: Session, env: Environment[Any, Any, Any], snapshots: SessionSnapshots, request: RestoreRequest
    ) -> str:
        kept = snapshots.store.resolve(request.id, request.portable, session.render_mode)
        try:
            await session.call(env.restore, kept.state)
        except NotImplementedError as exc:
            return ErrorFrame(ErrorCode.SNAPSHOT_UNSUPPORTED, f"restore: {exc}").serialize()
        except SnapshotRefusedError as exc:  # refused before anything changed
            return ErrorFrame(ErrorCode.SNAPSHOT_REFUSED, f"restore: {exc}").serialize()
        except Exception as exc:
            # The env may be half-restored: it must be reset before it steps again.
            self.protocol.reset_needed()
            return _execution_error("restore (reset before stepping)", exc, session.send_tracebacks).serialize()
        self.protocol.restored(kept.ended)
        self._took_frame(kept.frame)
        return kept.frame

    async def _step(self, session: Session, env: Environment[Any, Any, Any], request: StepFrame) -> str:
        try:
            tool_request = parse_tool_action(request.action)
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc).serialize()
        if tool_request is not None:
            frame = await self._tool_frame(session, env, tool_request)
            self.protocol.stepped(frame.done, frame.truncated)
            reply = frame.serialize()
            if isinstance(tool_request, CallToolRequest):
                self._took_frame(reply)
            session.observed("step", request.action, reply, frame)
            return reply
        try:
            action = env.parse_action(request.action)
        except pydantic.ValidationError as exc:
            return ErrorFrame(
                ErrorCode.VALIDATION_ERROR,
                f"invalid action: {exc.error_count()} validation error(s)",
                {"errors": exc.errors(include_url=False, include_context=False, include_input=False)},
            ).serialize()
        except Exception as exc:  # whatever decoding raises, bad input must not end the session
            return ErrorFrame(ErrorCode.VALIDATION_ERROR, f"invalid action: {exc}").serialize()
        try:
            observation = await session.call(env.step, action)
            frame = env.observation_frame(observation)
            reply = frame.serialize()
        except Exception as exc:
            return _execution_error("step", exc, session.send_tracebacks).serialize()
        self.protocol.stepped(frame.done, frame.truncated)
        self._took_frame(reply)
        session.observed("step", request.action, reply, frame)
        return reply

    @staticmethod
    async def _call_tool(session: Session, env: Environment[Any, Any, Any], request: CallToolRequest) -> ToolOutcome:
        return await run_tool(env, request, session.worker.run_bounded, env.max_tool_result_bytes)

    async def _tool_frame(
        self, session: Session, env: Environment[Any, Any, Any], request: ListToolsRequest | CallToolRequest
    ) -> ObservationFrame:
        if isinstance(request, ListToolsRequest):
            return env.tools_frame()
        return env.tool_frame(await self._call_tool(session, env, request))

    async def _mcp(self, session: Session, env: Environment[Any, Any, Any], message: dict[str, Any]) -> McpFrame:
        """Answer one MCP JSON-RPC request (``tools/list``, ``tools/call``)."""
        request_id, request = jsonrpc.parse_request(message)
        if isinstance(request, jsonrpc.JsonRpcError):
            return McpFrame(request.response(request_id))
        if isinstance(request, ListToolsRequest):
            return McpFrame(jsonrpc.result_response(request_id, jsonrpc.list_tools_result(env.tool_descriptions())))
        refusal = _TOOLS_CALL_REFUSALS.get(self.protocol.state)
        if refusal is not None:
            return McpFrame(jsonrpc.error_response(request_id, jsonrpc.JsonRpcCode.INVALID_REQUEST, refusal))
        outcome = await self._call_tool(session, env, request)
        self.protocol.stepped(outcome.done, outcome.truncated)
        self._took_frame(env.tool_frame(outcome).serialize())
        return McpFrame(jsonrpc.call_response(request_id, outcome.result, outcome.error))

    # Shared memory --------------------------------------------------------------------------

    def _took_frame(self, reply: str) -> None:
        self._last_frame, self._last_step = reply, None

    def _last_reply(self) -> str | None:
        """The observation frame of the episode's last reset or step, however it travelled."""
        if self._last_step is not None:
            self._took_frame(self._last_step().serialize())
        return self._last_frame

    def _offer_shm(self, session: Session, env: Environment[Any, Any, Any]) -> str:
        """Answer ``shm_open``: an offer of the segment (a batch of one), or why there is none."""
        # Loaded here: a server of another env (Echo's) runs without numpy or gymnasium.
        from .gym_environment import GymEnvironment
        from .shm_channel import layout_for

        if not isinstance(env, GymEnvironment) or env.tools:
            return refused("only a Gymnasium env without tools steps through shared memory").serialize()
        layout = layout_for(env.action_space, env.observation_space, 1)
        return self.shm.offer(session, layout, lambda actions: self._shm_step(session, actions, env))

    def _shm_step(self, session: Session, actions: np.ndarray, env: GymEnvironment) -> Any:
        """One step of ``env`` (the session's) asked through shared memory, in the channel's thread:
        the checks and the bookkeeping of a step frame's, and its results as a batch of one
        (``info`` as JSON)."""
        if self.env is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "the session is closing")
        if self.protocol.state is SessionState.OPEN:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "step before reset: send a reset frame first")
        if self.protocol.state is SessionState.ENDED:
            raise ProtocolError(ErrorCode.EPISODE_ENDED.value, EPISODE_ENDED_MESSAGE)
        try:
            action = env.action_of_row(actions[0])
        except ValueError as exc:
            raise ProtocolError(ErrorCode.VALIDATION_ERROR.value, f"invalid action: {exc}") from exc
        session.busy = True
        try:
            observation, reward, terminated, truncated, info = env.step_gym(action)
        finally:
            session.busy = False
            session.last_active = time.monotonic()  # the loop's clock
        terminated, truncated, info = bool(terminated), bool(truncated), env.info_json(info)
        self.protocol.stepped(terminated, truncated)
        self._last_step = functools.partial(env.step_frame, observation, reward, terminated, truncated, info)
        if session.watchers:  # rare: the frame a WebSocket step would have sent, for the loop to show
            frame = self._last_step()
            session.loop.call_soon_threadsafe(
                session.observed, "step", env.action_wire_form(action), frame.serialize(), frame
            )
        else:
            session.steps += 1
        return observation, float(reward), terminated, truncated, info

    def frame_of(self, sub_env: int) -> Any:
        assert self.env is not None
        return self.env.render()  # a plain session's env is its only one

    async def close(self, worker: Worker) -> bool:
        self.protocol.close()
        if self.snapshots is not None:
            self.snapshots.close()
        env, self.env = self.env, None
        return await self.shm.close(worker, env)
