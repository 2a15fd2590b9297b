"""`PlainSessionBatch`: one plain ``/ws`` session presented as a batch of one sub-env.

It lets the vector env run over servers that speak only OpenEnv's protocol (no ``/ws/batch``),
with Gymnasium's autoreset applied on the client by the same rule the batch server applies.
"""

from __future__ import annotations

import enum
from typing import Any

from openenv_gym.client.sync_client import EnvClient
from openenv_gym.protocol import ObservationFrame
from openenv_gym.protocol.batch import AutoresetMode, AutoresetRule, BatchResultFrame

__all__ = ["PlainSessionBatch"]


class _Pending(enum.Enum):
    """What :meth:`PlainSessionBatch.complete` must turn into a batch result."""

    NONE = "none"
    RESET = "reset"  # a reset the caller asked for
    AUTORESET = "autoreset"  # NextStep: this step of an ended sub-env is its reset
    STEP = "step"


class PlainSessionBatch:
    """The batch-client interface (``begin_batch_*``/``complete`` for one sub-env) over ``/ws``."""

    envs = 1

    def __init__(self, base_url: str, autoreset_mode: AutoresetMode, **kwargs: Any) -> None:
        self.client = EnvClient(base_url, **kwargs)
        self.rule = AutoresetRule(autoreset_mode)
        self._pending = _Pending.NONE

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
        self,
        seeds: list[int | None] | None = None,
        options: dict[str, Any] | None = None,
        mask: list[bool] | None = None,
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
            self.client.begin_step(actions[0])
            self._pending = _Pending.STEP

    def complete(self, timeout: float | None = None) -> BatchResultFrame:
        frame: ObservationFrame = self.client.complete(timeout)
        pending, self._pending = self._pending, _Pending.NONE
        if pending in (_Pending.RESET, _Pending.AUTORESET):
            self.rule.was_reset()
            if pending is _Pending.RESET:
                return BatchResultFrame([frame.observation], [frame.info])
            return BatchResultFrame([frame.observation], [frame.info], [0.0], [False], [False])
        reward = 0.0 if frame.reward is None else float(frame.reward)
        terminated, truncated = bool(frame.done), bool(frame.truncated)
        final: dict[int, dict[str, Any]] = {}
        if self.rule.stepped(terminated, truncated):  # SameStep: reset now, in a second round trip
            final[0] = {"observation": frame.observation, "info": frame.info}
            frame = self.client.reset()
        return BatchResultFrame([frame.observation], [frame.info], [reward], [terminated], [truncated], final)

    def reset_batch(self, *args: Any, **kwargs: Any) -> BatchResultFrame:
        self.begin_batch_reset(*args, **kwargs)
        return self.complete()
