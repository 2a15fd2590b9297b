"""`PlainSessionBatch`: one plain ``/ws`` session presented as a batch of one sub-env.

It lets the vector env run over servers that speak only OpenEnv's protocol (no ``/ws/batch``),
with Gymnasium's autoreset applied on the client by the same rule the batch server applies. A
:class:`~openenv_gym.face.Face` converts actions and frames: :class:`~openenv_gym.face.WireFace`
passes wire objects through (the vector env decodes them with the spaces, a batch at a time),
:class:`~openenv_gym.tool_face.ToolFace` makes tool calls of text. (``Face`` and ``WireFace`` are
re-exported here, where they were defined before.) On a server with OpenEnv 0.10's Task API, its
client's resets (the caller's and the autoresets) pick tasks as that server takes them
(:class:`~openenv_gym.client.task_resets.TaskResets`).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from openenv_gym.client.sync_client import EnvClient
from openenv_gym.errors import RemoteError
from openenv_gym.face import Face, StepResult, WireFace
from openenv_gym.protocol import ErrorCode, ObservationFrame, RenderFrame
from openenv_gym.protocol.batch import (
    AutoresetMode,
    AutoresetRule,
    BatchCallFrame,
    BatchResultFrame,
    BatchValuesFrame,
    Mask,
    Seeds,
)

if TYPE_CHECKING:
    from openenv_gym.client.task_resets import TaskResets

__all__ = ["Face", "PlainSessionBatch", "WireFace"]


class _Pending(enum.Enum):
    """What :meth:`PlainSessionBatch.complete` must turn into a batch result."""

    NONE = "none"
    RESET = "reset"  # a reset the caller asked for
    AUTORESET = "autoreset"  # NextStep: this step of an ended sub-env is its reset
    STEP = "step"
    ANSWERED = "answered"  # the face answered the action itself: nothing was sent
    RENDER = "render"
    CALL = "call"  # a batch_call of the one sub-env: its reply is a batch of one value


class PlainSessionBatch:
    """The batch-client interface (``begin_batch_*``/``complete`` for one sub-env) over ``/ws``."""

    envs = 1

    def __init__(
        self,
        base_url: str,
        autoreset_mode: AutoresetMode,
        face: Face | None = None,
        *,
        render_mode: str | None = None,
        task_resets: TaskResets | None = None,
        **kwargs: Any,
    ) -> None:
        self.client = EnvClient(base_url, **kwargs)
        self.client.kind.task_resets = task_resets
        if render_mode is not None:
            self.client.ask_render_mode(render_mode)
        self.rule = AutoresetRule(autoreset_mode)
        self.face: Face = face or WireFace()
        self._pending = _Pending.NONE
        self._answer: StepResult | None = None

    @property
    def url(self) -> str:
        """The session's ``ws://`` URL, as :class:`~openenv_gym.client.BatchClient` has one."""
        return self.client.url

    def connect(self) -> PlainSessionBatch:
        self.client.connect()
        return self

    def close(self) -> None:
        self.client.close()

    def begin_batch_reset(
        self, seeds: Seeds | None = None, options: dict[str, Any] | None = None, mask: Mask | None = None
    ) -> None:
        kwargs: dict[str, Any] = {}
        if seeds and seeds[0] is not None:
            kwargs["seed"] = seeds[0]
        if options is not None:
            kwargs["options"] = options
        self.client.begin_reset(**kwargs)
        self._pending = _Pending.RESET

    def begin_batch_step(self, actions: list[dict[str, Any]]) -> None:
        self.rule.check_can_step(0)
        if self.rule.resets_instead_of_stepping():
            self.client.begin_reset()
            self._pending = _Pending.AUTORESET
        else:
            wire = self.face.to_wire(actions[0])
            if isinstance(wire, tuple):
                self._answer, self._pending = wire, _Pending.ANSWERED
            else:
                self.client.begin_step(wire)
                self._pending = _Pending.STEP

    def begin_render(self) -> None:
        self.client.begin_render()
        self._pending = _Pending.RENDER

    def begin_batch_call(self, frame: BatchCallFrame) -> None:
        """Send a ``batch_call`` of the sub-env (get, set or call its attribute): the server has it."""
        self.client.connect()
        self.client.begin("batch_call", self.client.kind.call, frame)
        self._pending = _Pending.CALL

    def complete(self, timeout: float | None = None) -> BatchResultFrame | RenderFrame | BatchValuesFrame:
        pending, self._pending = self._pending, _Pending.NONE
        if pending is _Pending.RENDER:  # a batch of one frame
            return RenderFrame([self.client.complete(timeout).frame])
        if pending is _Pending.CALL:
            try:
                values: BatchValuesFrame = self.client.complete(timeout)
            except RemoteError as error:
                if error.code != ErrorCode.UNKNOWN_TYPE.value:
                    raise
                raise NotImplementedError(  # OpenEnv's own servers: not openenv-gym's frame
                    f"{self.url} takes no batch_call: its server (OpenEnv's own) cannot reach the sub-env's attributes"
                ) from error
            return values
        if pending is _Pending.ANSWERED:
            assert self._answer is not None
            (observation, reward, terminated, truncated, info), self._answer = self._answer, None
        else:
            frame: ObservationFrame = self.client.complete(timeout)
            if pending in (_Pending.RESET, _Pending.AUTORESET):
                self.rule.was_reset()
                observation, info = self.face.reset_result(frame)
                if pending is _Pending.RESET:
                    return BatchResultFrame([observation], [info])
                return BatchResultFrame([observation], [info], [0.0], [False], [False])
            observation, reward, terminated, truncated, info = self.face.step_result(frame)
        final: dict[int, dict[str, Any]] = {}
        if self.rule.stepped(terminated, truncated):  # SameStep: reset now, in a second round trip
            final[0] = {"observation": observation, "info": info}
            observation, info = self.face.reset_result(self.client.reset())
        return BatchResultFrame([observation], [info], [reward], [terminated], [truncated], final)

    def reset_batch(self, *args: Any, **kwargs: Any) -> BatchResultFrame:
        self.begin_batch_reset(*args, **kwargs)
        result = self.complete()
        assert isinstance(result, BatchResultFrame)  # a reset was in flight, not a render
        return result
