"""`BatchHandler`: a session hosting K environments, stepped together with Gymnasium's autoreset."""

from __future__ import annotations

import copy
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from websockets.asyncio.server import ServerConnection

from ..errors import OpenEnvGymError, ProtocolError, SnapshotRefusedError
from ..protocol import (
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    ObservationFrame,
    RenderRequest,
    ServerSession,
    arrays,
    parse_server_frame,
)
from ..protocol.batch import (
    AutoresetMode,
    AutoresetRule,
    BatchCallFrame,
    BatchResetFrame,
    BatchResultFrame,
    BatchStepFrame,
    BatchValuesFrame,
    parse_batch_client_frame,
)
from ..protocol.raised import pickled_exception
from ..protocol.snapshot import (
    BatchRestoreRequest,
    BatchSnapshotFrame,
    BatchSnapshotRequest,
    ReleaseRequest,
    SnapshotFrame,
)
from .environment import Environment
from .session import Session, _accepted_kwargs, _execution_error, make_environments
from .watch import SubEnvTransition, show_sub_env

if TYPE_CHECKING:
    from .snapshots import Kept, SessionSnapshots
    from .worker import Worker

__all__ = ["BatchHandler", "BatchSession"]


@runtime_checkable
class _RawObservations(Protocol):
    """An environment that can hand over its observations as they are (a GymEnvironment), not only as JSON."""

    wire_observations: bool
    last_observation: Any

    def wire_form(self, observation: Any) -> dict[str, Any]: ...


@runtime_checkable
class _RawInfos(Protocol):
    """An environment that can hand over its infos as they are (a GymEnvironment), not only as JSON."""

    wire_infos: bool


class _BatchRefused(OpenEnvGymError):
    """A batch request that cannot be carried out; becomes an error frame."""

    def __init__(self, frame: ErrorFrame) -> None:
        super().__init__(frame.message)
        self.frame = frame


class BatchHandler:
    """Serve ``/ws/batch``: K environments per connection, reset and stepped by one frame each.

    Autoreset follows ``gymnasium.vector.SyncVectorEnv`` exactly, sub-env by sub-env, so a client
    assembling the results gets what Gymnasium's own vector env would return:

    * ``NextStep``: a sub-env that ended is reset by the next step (its action is ignored, its
      reward is 0 and its flags false).
    * ``SameStep``: a sub-env that ends is reset in the same step; its final observation and info
      travel in ``final``.
    * ``Disabled``: the client resets ended sub-envs with a masked ``batch_reset``; stepping one
      before that is refused.

    ``steps`` and ``episodes`` count batch steps and batch resets.

    A ``render`` frame gets every sub-env's ``render()`` in one ``render`` frame (the sub-envs
    were made in the query's ``render_mode``). ``snapshot``, ``restore`` and ``release`` frames
    keep and restore chosen sub-envs' states in the server's snapshot store (``snapshots``), as a
    plain session's do: a restored sub-env whose episode had ended is ended again (under
    ``NextStep`` its next step resets it).
    """

    kind = "batch"
    #: Whether the sub-envs are the caller's own (a session that trusts pickles: from_env_fns'), as
    #: AsyncVectorEnv's workers' are: a step before any reset reaches them (the envs decide), every
    #: sub-env steps or resets even when one raises, and the error frame carries each one's
    #: exception, pickled (its client logs each and raises the last, as AsyncVectorEnv does).
    callers_own_envs = False
    #: The vector env's index of sub-env 0, for the sub-env an error frame names.
    first_index = 0

    def __init__(
        self,
        factory: Callable[[], Environment[Any, Any, Any]],
        size: int,
        autoreset_mode: AutoresetMode,
        snapshots: SessionSnapshots | None = None,
    ) -> None:
        self.factory = factory
        self.snapshots = snapshots
        self.size = size
        self.autoreset_mode: AutoresetMode | None = autoreset_mode
        self.protocol = ServerSession(parse_batch_client_frame, step_types=(BatchStepFrame,))
        self.envs: list[Environment[Any, Any, Any]] = []
        self._rules = [AutoresetRule(autoreset_mode) for _ in range(size)]
        self._reset_once = [False] * size
        # Set once the environments exist: the Box dtype to send raw, if the client asked, and
        # whether the environments give raw arrays (GymEnvironment) rather than JSON forms.
        self._binary_dtype: Any = None
        self._raw = False
        self._raw_envs: list[_RawObservations] = []  # the environments, when raw
        # Binary sessions: call values, infos and final observations travel as the envs gave them
        # (packed: arrays, numpy scalars, ints and floats each arrive as what they were).
        self._packed = False
        self._last_observations: list[dict[str, Any]] = [{}] * size
        # The frame that brought each sub-env to its current state (a snapshot keeps it).
        self._last_frames: list[ObservationFrame | None] = [None] * size

    @property
    def blocking(self) -> bool:
        return bool(getattr(self.envs[0] if self.envs else self.factory, "blocking", True))

    @property
    def live(self) -> bool:
        return bool(self.envs)

    async def open(self, session: Session) -> ErrorFrame | None:
        return await make_environments(session, lambda: self._create(session), self.factory)

    async def _create(self, session: Session) -> None:
        def make_all() -> None:
            # One at a time, so the ones made before a failing call are still closed.
            while len(self.envs) < self.size:
                self.envs.append(self.factory())

        await session.call(make_all)
        if self.callers_own_envs:
            self.protocol.reset_succeeded()  # steps need no reset first: the caller's envs decide
        space = getattr(self.envs[0], "observation_space", None)
        # Gymnasium envs (whose values are more than JSON) answer packed on a binary session.
        self._packed = session.binary and all(isinstance(env, _RawInfos) for env in self.envs)
        for gym_env in self.envs if self._packed else ():
            assert isinstance(gym_env, _RawInfos)
            gym_env.wire_infos = False  # made packable below, where pack cannot carry a part
        if session.binary and type(space).__name__ == "Box":  # by name: a plain server never imports gymnasium
            self._binary_dtype = getattr(space, "dtype", None)
            # Gymnasium environments then hand over raw arrays: no JSON form is ever built.
            raw: list[_RawObservations] = [env for env in self.envs if isinstance(env, _RawObservations)]
            self._raw = len(raw) == len(self.envs)
            self._raw_envs = raw if self._raw else []
            for env in self._raw_envs:
                env.wire_observations = False

    async def handle(self, session: Session, message: str | bytes) -> str | bytes | None:
        request = self.protocol.receive(message)
        if isinstance(request, ErrorFrame):
            return request.serialize()
        if isinstance(request, CloseFrame):
            return None
        if isinstance(request, RenderRequest):
            return await session.render_reply(self._render_all)
        if isinstance(request, (BatchSnapshotRequest, ReleaseRequest)):
            return await self._snapshot_frames(session, request)
        try:
            if isinstance(request, BatchRestoreRequest):
                result = await self._restore(session, request)
                if all(self._reset_once):
                    self.protocol.reset_succeeded()
                return self._encode(session, result)
            if isinstance(request, BatchCallFrame):
                targets = self.size if request.envs is None else len(request.envs)
                if request.values is not None and len(request.values) != targets:
                    raise self._refuse(
                        ErrorCode.VALIDATION_ERROR, f"{len(request.values)} values for {targets} sub-envs"
                    )
                self._check_indices(tuple(request.envs or ()))
                values = await session.call(self._call_all, request)
                return values.serialize_binary() if self._packed else values.serialize()
            if isinstance(request, BatchStepFrame):
                actions = self._parse_actions(request)
                result = await session.call(self._step_all, actions)
                session.steps += 1
            else:
                assert isinstance(request, BatchResetFrame)
                mask = self._check_reset(request)
                result = await session.call(self._reset_masked, request, mask)
                self.protocol.reset_succeeded()
                session.episodes += 1
            if session.watchers:
                self._show_watchers(session, request, result)
        except _BatchRefused as refused:
            return refused.frame.serialize()
        except Exception as exc:
            call = type(request).__name__.replace("Frame", "").replace("Request", "").replace("Batch", "batch_").lower()
            failures = [exc]
            if self.callers_own_envs and isinstance(request, (BatchStepFrame, BatchResetFrame)):
                failures = await session.call(self._every_failure, request, exc)
            return self._execution_error(call, failures, session.send_tracebacks).serialize()
        return self._encode(session, result)

    def _every_failure(self, request: BatchStepFrame | BatchResetFrame, exc: Exception) -> list[Exception]:
        """As AsyncVectorEnv runs every worker: the sub-envs after the one that raised ``exc`` step (or
        reset) too, their results dropped; every sub-env's exception, in order. Only once one raised,
        so a step that succeeds pays for nothing."""
        failures = [exc]
        index = _failed_sub_env(exc)
        while index is not None and index + 1 < self.size:
            try:
                if isinstance(request, BatchStepFrame):
                    self._step_all(self._parse_actions(request), index + 1)
                else:
                    self._reset_masked(request, self._check_reset(request), index + 1)
                break
            except Exception as later:
                index = _failed_sub_env(later)
                if index is not None:
                    failures.append(later)
        return failures

    def _execution_error(self, call: str, failures: list[Exception], with_traceback: bool) -> ErrorFrame:
        """The error frame of a failed call, for its last exception (its type named, as every
        session's: :mod:`~openenv_gym.protocol.raised`); for the caller's own envs, it also names the
        sub-env that raised, carries the exception pickled, and under ``"failures"`` each failed
        sub-env's details when more than one raised."""
        *earlier, exc = failures
        frame = self._failure_frame(call, exc, with_traceback)
        if not earlier:
            return frame
        every = [self._failure_frame(call, each, with_traceback).details for each in earlier]
        return ErrorFrame(frame.code, frame.message, {**frame.details, "failures": [*every, frame.details]})

    def _failure_frame(self, call: str, exc: Exception, with_traceback: bool) -> ErrorFrame:
        frame = _execution_error(call, exc, with_traceback)
        index = _failed_sub_env(exc)
        if index is None or not self.callers_own_envs:  # only there is its index the vector env's
            return frame
        details = {**frame.details, "sub_env": self.first_index + index, **pickled_exception(exc)}
        return ErrorFrame(frame.code, frame.message, details)

    def _encode(self, session: Session, result: BatchResultFrame) -> str | bytes:
        try:
            if self._packed:
                return result.serialize_binary(self._binary_dtype)
            return result.serialize()
        except Exception as exc:  # a reply that cannot be encoded must not end the session
            return _execution_error("encoding the result", exc, session.send_tracebacks).serialize()

    def _show_watchers(
        self, session: Session, request: BatchStepFrame | BatchResetFrame, result: BatchResultFrame
    ) -> None:
        def transition_of(index: int) -> SubEnvTransition:
            env = self.envs[index]
            return SubEnvTransition(
                getattr(env, "observation_space", None) if self._raw else None,
                copy.copy(result.observations[index]),  # a raw array the env may reuse
                result.rewards[index] if result.rewards is not None else None,
                result.terminated[index] if result.terminated is not None else False,
                result.truncated[index] if result.truncated is not None else False,
                _jsonable(result.infos[index]) if self._packed else result.infos[index],
            )

        if isinstance(request, BatchStepFrame):
            show_sub_env(session, True, request.actions, None, transition_of)
        else:
            show_sub_env(session, False, None, request.mask, transition_of)

    # Requests -----------------------------------------------------------------------------------

    def _refuse(self, code: ErrorCode, message: str) -> _BatchRefused:
        return _BatchRefused(ErrorFrame(code, message))

    def _check_reset(self, request: BatchResetFrame) -> list[bool]:
        for name, values in (("seeds", request.seeds), ("mask", request.mask)):
            if values is not None and len(values) != self.size:
                raise self._refuse(
                    ErrorCode.VALIDATION_ERROR, f"{name} has {len(values)} items for {self.size} sub-envs"
                )
        mask = request.mask if request.mask is not None else [True] * self.size
        if not any(mask):
            raise self._refuse(ErrorCode.VALIDATION_ERROR, "mask selects no sub-env to reset")
        never_reset = [i for i, (seen, selected) in enumerate(zip(self._reset_once, mask)) if not (seen or selected)]
        if never_reset:
            raise self._refuse(
                ErrorCode.VALIDATION_ERROR,
                f"sub-envs {never_reset} were never reset: the first batch_reset must select every sub-env",
            )
        return mask

    def _parse_actions(self, request: BatchStepFrame) -> list[Any]:
        if len(request.actions) != self.size:
            raise self._refuse(ErrorCode.VALIDATION_ERROR, f"{len(request.actions)} actions for {self.size} sub-envs")
        try:
            for index, rule in enumerate(self._rules):
                rule.check_can_step(index)
        except ProtocolError as exc:
            raise _BatchRefused(ErrorFrame.from_exception(exc)) from exc
        actions = []
        for index, (env, action) in enumerate(zip(self.envs, request.actions)):
            try:
                actions.append(env.parse_action(action))
            except Exception as exc:  # bad input must not end the session
                raise self._refuse(ErrorCode.VALIDATION_ERROR, f"invalid action for sub-env {index}: {exc}") from exc
        return actions

    # Environment work (runs in the session's thread for blocking environments) ----------------

    def _observation(self, index: int, frame: ObservationFrame) -> Any:
        """What travels for sub-env ``index``: its raw array, or the frame's JSON form."""
        return self._raw_envs[index].last_observation if self._raw else frame.observation

    def _wire_observation(self, index: int, frame: ObservationFrame) -> dict[str, Any]:
        """The JSON form, even in raw mode (for the rare final observations of ``SameStep``)."""
        if not self._raw:
            return frame.observation
        env = self._raw_envs[index]
        return env.wire_form(env.last_observation)

    def _info(self, frame: ObservationFrame) -> dict[str, Any]:
        """What travels of a frame's info: packed sessions get it as the env gave it, bar the parts
        that cannot be packed (as JSON); others its JSON form."""
        if not self._packed or not frame.info:
            return frame.info
        info: dict[str, Any] = arrays.packable(frame.info, _jsonable)
        return info

    def _final_observation(self, index: int, frame: ObservationFrame) -> dict[str, Any]:
        """A SameStep final observation: ``{"raw_observation": value}``, as the env returned it, on a
        packed session that can carry it so; else ``{"observation": wire object}``."""
        gym_env = self.envs[index]
        if self._packed and isinstance(gym_env, _RawObservations):
            value = copy.copy(gym_env.last_observation)  # the env may reuse its array as it resets
            if arrays.keeps(value):
                return {"raw_observation": value}
        return {"observation": self._wire_observation(index, frame)}

    def _reset_one(self, index: int, **kwargs: Any) -> ObservationFrame:
        env = self.envs[index]
        frame = env.observation_frame(env.reset(**_accepted_kwargs(env.reset, kwargs)))
        self._last_observations[index] = self._observation(index, frame)
        self._last_frames[index] = frame
        return frame

    def _reset_masked(self, request: BatchResetFrame, mask: list[bool], first: int = 0) -> BatchResultFrame:
        seeds = request.seeds or [None] * self.size
        infos: list[dict[str, Any]] = [{} for _ in range(self.size)]
        for index in range(first, self.size):
            if mask[index]:
                kwargs: dict[str, Any] = {"seed": seeds[index]}
                if request.options is not None:
                    kwargs["options"] = request.options
                infos[index] = self._info(self._reset_one(index, **kwargs))
                self._rules[index].was_reset()
                self._reset_once[index] = True
        return BatchResultFrame(observations=list(self._last_observations), infos=infos)

    def _step_all(self, actions: list[Any], first: int = 0) -> BatchResultFrame:
        """Step every sub-env (from ``first`` on: :meth:`_every_failure`'s rest, whose result is dropped)."""
        observations, infos = [], []
        rewards, terminated, truncated = [], [], []
        final: dict[int, dict[str, Any]] = {}
        sub_envs = zip(self.envs, actions, self._rules)
        for index, (env, action, rule) in enumerate(sub_envs if not first else islice(sub_envs, first, None), first):
            if rule.resets_instead_of_stepping():
                frame = self._reset_one(index)
                reward, done, cut = 0.0, False, False
                rule.was_reset()
            else:
                frame = env.observation_frame(env.step(action))
                reward = 0.0 if frame.reward is None else float(frame.reward)
                done, cut = bool(frame.done), bool(frame.truncated)
                self._last_observations[index] = self._observation(index, frame)
                self._last_frames[index] = frame
                if rule.stepped(done, cut):
                    final[index] = {**self._final_observation(index, frame), "info": self._info(frame)}
                    frame = self._reset_one(index)
                    rule.was_reset()  # SameStep: its episode goes on at once (a snapshot says so)
            observations.append(self._last_observations[index])
            infos.append(self._info(frame))
            rewards.append(reward)
            terminated.append(done)
            truncated.append(cut)
        return BatchResultFrame(observations, infos, rewards, terminated, truncated, final)

    def frame_of(self, sub_env: int) -> Any:
        return self.envs[sub_env].render()

    def _render_all(self) -> list[Any]:
        """Every sub-env's frame, in the render mode the session's envs were made with."""
        return [env.render() for env in self.envs]

    def _call_all(self, request: BatchCallFrame) -> BatchValuesFrame:
        """Get, set or call a public attribute of every sub-env (or of ``request.envs``, the others'
        values ``None``), as ``SyncVectorEnv`` does: as they are on a packed session, where pack
        gives them back so, else in their JSON form."""
        values: list[Any] = [None] * self.size
        new_values = request.values or []  # a set's, one per sub-env (its frame was parsed with them)
        chosen = range(self.size) if request.envs is None else request.envs
        for position, index in enumerate(chosen):
            value = answer_call(self.envs[index], request, new_values[position] if request.op == "set" else None)
            values[index] = value if self._packed and arrays.keeps(value) else _jsonable(value)
        return BatchValuesFrame(values)

    # Snapshots ----------------------------------------------------------------------------------

    async def _snapshot_frames(self, session: Session, request: BatchSnapshotRequest | ReleaseRequest) -> str:
        snapshots = self.snapshots
        if snapshots is None:
            return ErrorFrame(ErrorCode.SNAPSHOT_UNSUPPORTED, "this server keeps no snapshots").serialize()
        if isinstance(request, ReleaseRequest):
            return snapshots.release_reply(request.ids)
        try:
            self._check_indices(request.envs)
            await snapshots.store.check_supported()
            states = await session.call(lambda: [self.envs[index].snapshot() for index in request.envs])
            taken: list[SnapshotFrame] = []
            try:
                for index, state in zip(request.envs, states):
                    kept = self._kept(index, state, session.render_mode)
                    portable = snapshots.travelling(kept) if request.portable else None
                    taken.append(SnapshotFrame(id=snapshots.keep(kept), size=len(state), portable=portable))
            except BaseException:  # all or none: the ids kept so far would never reach the client
                snapshots.release(tuple(frame.id for frame in taken if frame.id is not None))
                raise
        except _BatchRefused as refused:
            return refused.frame.serialize()
        except ProtocolError as exc:
            return ErrorFrame.from_exception(exc).serialize()
        except NotImplementedError as exc:
            return ErrorFrame(ErrorCode.SNAPSHOT_UNSUPPORTED, f"snapshot: {exc}").serialize()
        except Exception as exc:
            return _execution_error("snapshot", exc, session.send_tracebacks).serialize()
        return BatchSnapshotFrame(tuple(taken), snapshots.held, snapshots.held_bytes).serialize()

    def _check_indices(self, envs: tuple[int, ...]) -> None:
        outside = [index for index in envs if index >= self.size]
        if outside:
            raise self._refuse(ErrorCode.VALIDATION_ERROR, f"sub-envs {outside} are outside 0..{self.size - 1}")

    def _kept(self, index: int, state: bytes, render_mode: str | None) -> Kept:
        """Sub-env ``index``'s state with the frame that reached it, as a plain session would keep it."""
        from .snapshots import Kept

        frame = self._last_frames[index]
        if frame is None:
            raise self._refuse(ErrorCode.SESSION_ERROR, f"snapshot before sub-env {index} was reset")
        observation = self._wire_observation(index, frame)
        info = _jsonable(frame.info) if self._packed else frame.info  # a packed session's may hold arrays
        text = ObservationFrame(observation, frame.reward, frame.done, frame.truncated, info).serialize()
        return Kept(state, text, self._rules[index].ended, render_mode)

    async def _restore(self, session: Session, request: BatchRestoreRequest) -> BatchResultFrame:
        snapshots = self.snapshots
        if snapshots is None:
            raise self._refuse(ErrorCode.SNAPSHOT_UNSUPPORTED, "this server keeps no snapshots")
        self._check_indices(request.envs)
        try:
            await snapshots.store.check_supported()
            resolve, mode = snapshots.store.resolve, session.render_mode
            kept = (
                [resolve(None, blob, mode) for blob in request.portables]
                if request.portables is not None
                else [resolve(snapshot_id, None, mode) for snapshot_id in request.ids or ()]
            )
        except ProtocolError as exc:
            raise _BatchRefused(ErrorFrame.from_exception(exc)) from exc
        never_reset = [i for i, seen in enumerate(self._reset_once) if not seen and i not in request.envs]
        if never_reset:
            raise self._refuse(
                ErrorCode.VALIDATION_ERROR,
                f"sub-envs {never_reset} were never reset: a first restore (or reset) must cover every sub-env",
            )
        try:
            return await session.call(self._restore_all, request.envs, kept)
        except NotImplementedError as exc:
            raise self._refuse(ErrorCode.SNAPSHOT_UNSUPPORTED, f"restore: {exc}") from exc

    def _restore_all(self, envs: tuple[int, ...], kept: list[Kept]) -> BatchResultFrame:
        infos: list[dict[str, Any]] = [{} for _ in range(self.size)]
        for index, one in zip(envs, kept):
            env = self.envs[index]
            try:
                env.restore(one.state)
            except SnapshotRefusedError as exc:  # refused before it changed anything
                raise self._refuse(ErrorCode.SNAPSHOT_REFUSED, f"restore of sub-env {index}: {exc}") from exc
            except Exception:
                # Half-restored, maybe: it must be reset before it steps again.
                self._reset_once[index] = False
                self.protocol.reset_needed()
                raise
            frame = parse_server_frame(one.frame)
            assert isinstance(frame, ObservationFrame)  # what _kept and plain sessions store
            self._last_frames[index] = frame
            self._last_observations[index] = self._observation(index, frame)
            self._rules[index].ended = one.ended
            self._reset_once[index] = True
            infos[index] = frame.info
        return BatchResultFrame(observations=list(self._last_observations), infos=infos)

    # Teardown -----------------------------------------------------------------------------------

    async def close(self, worker: Worker) -> bool:
        """Close every sub-environment, each with its timeout; free the session's snapshots."""
        self.protocol.close()
        if self.snapshots is not None:
            self.snapshots.close()
        in_time = True
        envs, self.envs = self.envs, []
        for env in envs:
            in_time = await worker.close_env(env) and in_time
        return in_time


def BatchSession(  # the class this was, kept for code that made one
    connection: ServerConnection,
    factory: Callable[[], Environment[Any, Any, Any]],
    size: int,
    autoreset_mode: AutoresetMode,
    *,
    send_tracebacks: bool = True,
) -> Session:
    """A :class:`Session` served by a :class:`BatchHandler`."""
    return Session(connection, BatchHandler(factory, size, autoreset_mode), send_tracebacks=send_tracebacks)


def answer_call(env: Any, request: BatchCallFrame, new_value: Any = None) -> Any:
    """One env's answer to a ``batch_call``, as ``SyncVectorEnv`` answers for each sub-env: the
    attribute got (called, if callable, for ``call``), ``new_value`` set (``None``), or whether
    the wrapper named wraps it."""
    target = getattr(env, "env", env)  # a GymEnvironment's Gymnasium env, else the env
    if request.op == "set":
        setter = getattr(target, "set_wrapper_attr", None) or (lambda name, v: setattr(target, name, v))
        setter(request.name, new_value)
        return None
    if request.op == "wrapped":
        return _is_wrapped(target, request.args)
    get = getattr(target, "get_wrapper_attr", None) or (lambda name: getattr(target, name))
    value = get(request.name)
    if request.op == "call" and callable(value):
        value = value(*request.args, **request.kwargs)
    return value


def _is_wrapped(env: Any, wrapper: list[Any]) -> bool:
    """Whether a Gymnasium wrapper of class ``wrapper`` (its module and qualified name), or of a
    subclass, wraps ``env``, as SB3's ``is_wrapped`` checks it (by name: the class is the client's)."""
    import gymnasium as gym

    layer = env
    while isinstance(layer, gym.Wrapper):
        if any([cls.__module__, cls.__qualname__] == wrapper for cls in type(layer).__mro__):
            return True
        layer = layer.env
    return False


def _failed_sub_env(exc: BaseException) -> int | None:
    """The sub-env whose call raised ``exc``: the ``index`` of the loop over sub-envs its traceback
    passes through (read after the fact, so that no step pays for bookkeeping); None if none."""
    trace = exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code in _SUB_ENV_LOOPS:
            index = trace.tb_frame.f_locals.get("index")
            return index if isinstance(index, int) else None
        trace = trace.tb_next
    return None


_SUB_ENV_LOOPS = (BatchHandler._step_all.__code__, BatchHandler._reset_masked.__code__)


def _jsonable(value: Any) -> Any:
    """:func:`openenv_gym.spaces.jsonable`, imported when first needed (plain servers never need it)."""
    from ..spaces import jsonable

    return jsonable(value)
