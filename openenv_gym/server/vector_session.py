"""`VectorHandler`: a batch session whose K sub-envs are one server-side vector env."""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from websockets.asyncio.server import ServerConnection

from ..errors import ProtocolError
from ..protocol import CloseFrame, ErrorCode, ErrorFrame, RenderRequest, ServerSession, arrays
from ..protocol.batch import AutoresetMode, BatchCallFrame, BatchValuesFrame
from ..protocol.session import SessionState
from ..protocol.shm import ShmOpenFrame
from ..protocol.vector import (
    VectorResetFrame,
    VectorResultFrame,
    VectorStepFrame,
    parse_vector_client_frame,
)
from .session import Session, _execution_error, make_environments
from .shm_channel import layout_for
from .shm_steps import ShmSteps
from .vector_backends import VectorHost
from .watch import SubEnvTransition, show_sub_env, sub_env_info

if TYPE_CHECKING:
    from .worker import Worker

__all__ = ["VectorHandler", "VectorSession"]


class VectorHandler:
    """Serve ``/ws/batch?backend=...``: one vector env of K sub-envs, one call per request.

    The vector env applies its own autoreset (the client asked for a mode the backend serves)
    and its results go back as it returned them, arrays packed raw on a binary connection.
    Requests are checked before the vector env sees them: actions must fit the batched action
    space, so a bad one is a ``VALIDATION_ERROR`` that leaves the session usable. A ``render``
    frame gets what the vector env's ``render()`` returns. A client on the same host may move the
    steps to shared memory (``shm_open``, :mod:`openenv_gym.protocol.shm`): the vector env then
    lives in the :class:`~openenv_gym.server.shm_channel.ShmChannel`'s thread, which every call
    of it goes through.
    """

    kind = "vector"

    def __init__(
        self, build: Callable[[int, AutoresetMode], VectorHost], size: int, autoreset_mode: AutoresetMode
    ) -> None:
        self.build = build
        self.size = size
        self.autoreset_mode: AutoresetMode | None = autoreset_mode
        self._mode = autoreset_mode
        self.protocol = ServerSession(parse_vector_client_frame, step_types=(VectorStepFrame,))
        #: The vector env, once made.
        self.host: VectorHost | None = None
        self._action_space: Any = None
        self._observation_space: Any = None  # batched, made when a watcher first needs it
        #: The shared-memory offer, then channel, once a client asks for one.
        self.shm = ShmSteps("vector_step")

    @property
    def blocking(self) -> bool:
        return self.host is None or self.host.blocking

    @property
    def live(self) -> bool:
        return self.host is not None

    async def open(self, session: Session) -> ErrorFrame | None:
        async def create() -> None:
            from gymnasium.vector.utils import batch_space

            host: VectorHost = await session.call(self.build, self.size, self._mode)
            self.host = host
            self._action_space = batch_space(host.single_action_space, self.size)

        return await make_environments(session, create, self.build)

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        self.shm.withdraw()  # an offer not taken before this request
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, CloseFrame):
            return None
        assert self.host is not None
        if isinstance(request, ShmOpenFrame):
            return self._offer_shm(session)
        if isinstance(request, RenderRequest):
            return await session.render_reply(self.host.render)
        if isinstance(request, BatchCallFrame):
            return await self._call(session, request)
        try:
            if isinstance(request, VectorStepFrame):
                actions = self._check_actions(request.actions)
                observations, rewards, terminated, truncated, infos = await session.call(self.host.step, actions)
                result = VectorResultFrame(
                    observations, infos, np.asarray(rewards), np.asarray(terminated), np.asarray(truncated)
                )
                session.steps += 1
            else:
                assert isinstance(request, VectorResetFrame)
                self._check_mask(request.mask)
                observations, infos = await session.call(self.host.reset, request.seed, request.options, request.mask)
                result = VectorResultFrame(observations, infos)
                self.protocol.reset_succeeded()
                session.episodes += 1
            if session.watchers:
                self._show_watchers(session, request, result)
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc).serialize()
        except Exception as exc:
            call = "vector_step" if isinstance(request, VectorStepFrame) else "vector_reset"
            return _execution_error(call, exc, session.send_tracebacks).serialize()
        try:
            return result.serialize_binary() if session.binary else result.serialize()
        except Exception as exc:  # a reply that cannot be encoded must not end the session
            return _execution_error("encoding the result", exc, session.send_tracebacks).serialize()

    async def _call(self, session: Session, request: BatchCallFrame) -> str | bytes:
        """The vector env's ``get_attr``/``set_attr``/``call``: its values as they are on a binary
        session (pack gives them back so), else in their JSON form."""
        from ..spaces import jsonable

        assert self.host is not None
        try:
            values = await session.call(self.host.call, request)
            if session.binary:
                return BatchValuesFrame([v if arrays.keeps(v) else jsonable(v) for v in values]).serialize_binary()
            return BatchValuesFrame([jsonable(value) for value in values]).serialize()
        except Exception as exc:
            return _execution_error(f"batch_call {request.op} {request.name}", exc, session.send_tracebacks).serialize()

    def _offer_shm(self, session: Session) -> str:
        """Answer ``shm_open``: an offer of the segment, or why there is none."""
        assert self.host is not None
        layout = layout_for(self.host.single_action_space, self.host.single_observation_space, self.size)
        return self.shm.offer(session, layout, lambda actions: self._shm_step(session, actions))

    def _shm_step(self, session: Session, actions: np.ndarray) -> Any:
        """One step asked through shared memory, in the channel's thread."""
        if self.host is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "the session is closing")
        if self.protocol.state is not SessionState.READY:
            raise ProtocolError(ErrorCode.SESSION_ERROR.value, "step before reset: send a vector_reset frame first")
        checked = self._check_actions(actions)
        session.busy = True
        try:
            observations, rewards, terminated, truncated, infos = self.host.step(checked)
        finally:
            session.busy = False
            session.last_active = time.monotonic()  # the loop's clock
        session.steps += 1
        if session.watchers:  # rare: copies, for the loop to show
            frame = VectorResultFrame(
                copy.deepcopy(observations),
                copy.deepcopy(infos),
                np.array(rewards),
                np.array(terminated),
                np.array(truncated),
            )
            session.loop.call_soon_threadsafe(self._show_watchers, session, VectorStepFrame(checked.copy()), frame)
        return observations, rewards, terminated, truncated, infos

    def _show_watchers(
        self, session: Session, request: VectorStepFrame | VectorResetFrame, result: VectorResultFrame
    ) -> None:
        from gymnasium.vector.utils import batch_space, iterate

        assert self.host is not None
        space = self.host.single_observation_space
        observations = result.observations

        def transition_of(index: int) -> SubEnvTransition:
            if isinstance(observations, np.ndarray):
                observation = observations[index].copy()  # vector envs reuse their buffers
            else:
                if self._observation_space is None:
                    self._observation_space = batch_space(space, self.size)
                observation = copy.deepcopy(
                    next(itertools.islice(iterate(self._observation_space, observations), index, None))
                )
            return SubEnvTransition(
                space,
                observation,
                result.rewards[index] if result.rewards is not None else None,
                result.terminated[index] if result.terminated is not None else False,
                result.truncated[index] if result.truncated is not None else False,
                sub_env_info(result.infos, index),
            )

        if isinstance(request, VectorStepFrame):
            show_sub_env(session, True, request.actions, None, transition_of)
        else:
            show_sub_env(session, False, None, request.mask, transition_of)

    def frame_of(self, sub_env: int) -> Any:
        assert self.host is not None
        frames = self.host.render()  # every sub-env's: a vector env renders them together
        return None if frames is None else frames[sub_env]

    def _check_actions(self, actions: Any) -> Any:
        from ..spaces import mismatch

        if isinstance(actions, list):  # a JSON list from a client without the array form
            try:
                actions = np.asarray(actions, dtype=getattr(self._action_space, "dtype", None))
            except (TypeError, ValueError) as exc:
                raise ProtocolError(ErrorCode.VALIDATION_ERROR.value, f"invalid actions: {exc}") from exc
        problem = mismatch(self._action_space, actions)
        if problem is not None:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"invalid actions for {self.size} sub-envs: {problem}"
            )
        return actions

    def _check_mask(self, mask: list[bool] | None) -> None:
        if mask is not None and (len(mask) != self.size or not any(mask)):
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"mask must hold {self.size} booleans, at least one true"
            )

    async def close(self, worker: Worker) -> bool:
        """Close the vector env, with its timeout (in the channel's thread, if it has one), and the channel."""
        self.protocol.close()
        host, self.host = self.host, None
        return await self.shm.close(worker, host)


def VectorSession(  # the class this was, kept for code that made one
    connection: ServerConnection,
    build: Callable[[int, AutoresetMode], VectorHost],
    size: int,
    autoreset_mode: AutoresetMode,
    *,
    send_tracebacks: bool = True,
) -> Session:
    """A :class:`Session` served by a :class:`VectorHandler`."""
    return Session(connection, VectorHandler(build, size, autoreset_mode), send_tracebacks=send_tracebacks)
