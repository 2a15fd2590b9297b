"""`PickledBatchHandler`: a batch session whose sub-envs come from factories the client sends pickled.

The wire is :mod:`openenv_gym.protocol.pickled`. Only a server started with
``--accept-pickled-factories`` and a token opens such a session (``EnvServer`` checks
:func:`~openenv_gym.protocol.pickled.check_pickles_allowed` before it makes one). cloudpickle and
gymnasium are imported when the first such session opens, so other servers never load them.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import traceback
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..errors import OpenEnvGymError, ProtocolError
from ..protocol import ErrorCode, ErrorFrame
from ..protocol.batch import AutoresetMode, BatchValuesFrame
from ..protocol.pickled import BatchMakeFrame, parse_batch_make, python_version
from .batch_session import BatchHandler
from .environment import Environment, EnvironmentMetadata, Observation, State
from .session import Session

__all__ = ["MAKE_TIMEOUT", "NoTargetEnvironment", "PickledBatchHandler", "PickledBatchSession"]

logger = logging.getLogger(__name__)

#: Seconds a session of pickled factories waits for its ``batch_make`` frame.
MAKE_TIMEOUT = 60.0


class NoTargetEnvironment(Environment[Any, Observation, State]):
    """Stands in for the environment of a server that has none: it only runs pickled factories.

    ``/schema`` and ``/metadata`` describe it (no spaces; ``pickled_factories`` set), and a plain
    session on it is told where to go instead.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = False

    _WHY = (
        "this server has no environment of its own: it runs the sub-env factories a client sends "
        "pickled (/ws/batch?envs=K&factories=pickled, as RemoteVectorEnv.from_env_fns does)"
    )

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        raise RuntimeError(self._WHY)

    def step(self, action: Any) -> Observation:
        raise RuntimeError(self._WHY)

    @property
    def state(self) -> State:
        return State()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name="pickled-factories", description=self._WHY)

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "pickled_factories": True}


class _FactoryFailed(OpenEnvGymError):
    """One sub-env's factory could not make its env; carries the ``FACTORY_ERROR`` frame to send."""

    def __init__(self, frame: ErrorFrame) -> None:
        super().__init__(frame.message)
        self.frame = frame


def _factory_failed(index: int, what: str, exc: BaseException | None, with_traceback: bool) -> _FactoryFailed:
    """The error of sub-env ``index``'s factory: ``FACTORY_ERROR``, naming the sub-env and the cause."""
    message = f"sub-env {index}'s factory {what}"
    details: dict[str, Any] = {"factory_name": f"env_fns[{index}]", "index": index}
    if exc is not None:
        cause = f"{type(exc).__name__}: {exc}"
        message += f" {cause}" if what == "raised" else f" ({cause})"
        if with_traceback:
            details["traceback"] = "".join(traceback.format_exception(exc))
    return _FactoryFailed(ErrorFrame(ErrorCode.FACTORY_ERROR, message, details))


class _Factories:
    """Makes the sub-envs one call at a time, each from its own pickled factory, in order."""

    __name__ = "pickled factories"

    def __init__(self, request: BatchMakeFrame, send_tracebacks: bool) -> None:
        self.request = request
        self.send_tracebacks = send_tracebacks
        self.made = 0

    def _failed(self, index: int, what: str, exc: BaseException | None = None) -> _FactoryFailed:
        return _factory_failed(index, what, exc, self.send_tracebacks)

    def __call__(self) -> Environment[Any, Any, Any]:
        import cloudpickle
        import gymnasium as gym

        from .factory_environment import FactoryEnvironment

        index = self.request.first + self.made
        slot = self.made
        self.made += 1
        if self.request.python != python_version():
            raise self._failed(
                index,
                f"was pickled by Python {self.request.python}, and this server runs Python {python_version()}: "
                "a pickle is read by the version that wrote it",
            )
        # The client's modules by its path, as a SubprocVecEnv worker finds them; the server's own come first.
        sys.path.extend([entry for entry in dict.fromkeys(self.request.path) if entry not in sys.path])
        try:
            factory = cloudpickle.loads(self.request.factories[slot])
        except (Exception, SystemExit) as exc:  # whatever the pickle's code does, the session answers
            raise self._failed(index, "could not be unpickled", exc) from exc
        if not callable(factory):
            raise self._failed(index, f"is a {type(factory).__name__}, not a callable")
        try:
            env = factory()
        except (Exception, SystemExit) as exc:
            raise self._failed(index, "raised", exc) from exc
        if not isinstance(env, gym.Env):
            if hasattr(env, "close"):
                env.close()
            raise self._failed(index, f"returned {type(env).__name__}, not a gymnasium.Env")
        return FactoryEnvironment(env)


class PickledBatchHandler(BatchHandler):
    """A :class:`~openenv_gym.server.batch_session.BatchHandler` whose K sub-envs are made from the factories of its ``batch_make`` frame.

    :meth:`open` reads that frame (within :data:`MAKE_TIMEOUT`), makes the envs in the session's
    thread, and answers with their spaces; then the session runs as any batch session. Every
    failure is a ``FACTORY_ERROR`` (or ``VALIDATION_ERROR``) frame, after which the server closes
    the connection and closes the envs already made.
    """

    callers_own_envs = True  # see BatchHandler.callers_own_envs

    def __init__(self, size: int, autoreset_mode: AutoresetMode, *, make_timeout: float = MAKE_TIMEOUT) -> None:
        super().__init__(NoTargetEnvironment, size, autoreset_mode)
        self.make_timeout = make_timeout

    async def open(self, session: Session) -> ErrorFrame | None:
        """Read ``batch_make``, make the sub-envs, and send their spaces; the frame to send if that failed.

        The session is ``busy`` meanwhile: waiting for the factories, or running them, is not idleness.
        """
        try:
            message = await asyncio.wait_for(session.connection.recv(), self.make_timeout)
            request = parse_batch_make(message, self.size)
        except TimeoutError:
            return ErrorFrame(ErrorCode.SESSION_ERROR, f"no batch_make frame within {self.make_timeout:g} s of opening")
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc)
        except ConnectionClosed:
            return None  # the client left; run() sees the closed connection and ends
        self.factory = _Factories(request, session.send_tracebacks)
        self.first_index = request.first
        try:
            await self._create(session)
            spaces = self._spaces(session.send_tracebacks)
        except _FactoryFailed as failed:
            logger.warning("pickled factories failed: %s", failed.frame.message)
            return failed.frame
        except Exception as exc:
            logger.exception("making the sub-envs of pickled factories failed")
            details = {"traceback": "".join(traceback.format_exception(exc))} if session.send_tracebacks else {}
            return ErrorFrame(ErrorCode.FACTORY_ERROR, f"{type(exc).__name__}: {exc}", details)
        try:
            await session.connection.send(spaces.serialize())
        except ConnectionClosed:
            pass  # the client left; run() ends at once
        return None

    def _spaces(self, send_tracebacks: bool) -> BatchValuesFrame:
        """Each sub-env's spaces in their JSON form, for the client to check against its own."""
        from ..spaces import space_to_json

        values = []
        first = self.factory.request.first if isinstance(self.factory, _Factories) else 0
        for index, env in enumerate(self.envs):
            action, observation = env.action_space, env.observation_space
            if action is None or observation is None:  # never for a GymEnvironment; said anyway
                raise _factory_failed(first + index, "made an env without spaces", None, send_tracebacks)
            try:
                # The session trusts pickles: a space of your own travels as one.
                described = {"action": space_to_json(action, True), "observation": space_to_json(observation, True)}
                values.append(described)
            except Exception as exc:
                failed = "made an env whose spaces have no JSON form"
                raise _factory_failed(first + index, failed, exc, send_tracebacks) from exc
        return BatchValuesFrame(values)


def PickledBatchSession(  # the class this was, kept for code that made one
    connection: ServerConnection,
    size: int,
    autoreset_mode: AutoresetMode,
    *,
    send_tracebacks: bool = True,
    make_timeout: float = MAKE_TIMEOUT,
) -> Session:
    """A :class:`Session` served by a :class:`PickledBatchHandler`."""
    handler = PickledBatchHandler(size, autoreset_mode, make_timeout=make_timeout)
    return Session(connection, handler, send_tracebacks=send_tracebacks)
