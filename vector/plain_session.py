"""`PlainSessionBatch`: one plain ``/ws`` session presented as a batch of one sub-env.

It lets the vector env run over servers that speak only OpenEnv's protocol (no ``/ws/batch``),
with Gymnasium's autoreset applied on the client by the same rule the batch server applies.
"""

from __future__ import annotations

from typing import Any

from openenv_gym.batch_protocol import AutoresetMode, AutoresetRule, BatchResultFrame
from openenv_gym.client import AsyncEnvClient

__all__ = ["PlainSessionBatch"]


class PlainSessionBatch:
    """The batch-client interface (``reset_batch``/``step_batch`` for one sub-env) over ``/ws``."""

    envs = 1

    def __init__(self, base_url: str, autoreset_mode: AutoresetMode, **kwargs: Any) -> None:
        self.client = AsyncEnvClient(base_url, **kwargs)
        self.rule = AutoresetRule(autoreset_mode)

    async def connect(self) -> PlainSessionBatch:
        await self.client.connect()
        return self

    async def close(self) -> None:
        await self.client.close()

    async def reset_batch(
        self,
        seeds: list[int | None] | None = None,
        options: dict[str, Any] | None = None,
        mask: list[bool] | None = None,
    ) -> BatchResultFrame:
        kwargs: dict[str, Any] = {}
        if seeds and seeds[0] is not None:
            kwargs["seed"] = seeds[0]
        if options is not None:
            kwargs["options"] = options
        frame = await self.client.reset(**kwargs)
        self.rule.was_reset()
        return BatchResultFrame([frame.observation], [frame.info])

    async def step_batch(self, actions: list[dict[str, Any]]) -> BatchResultFrame:
        self.rule.check_can_step(0)
        if self.rule.resets_instead_of_stepping():
            frame = await self.client.reset()
            self.rule.was_reset()
            return BatchResultFrame([frame.observation], [frame.info], [0.0], [False], [False])
        frame = await self.client.step(actions[0])
        reward = 0.0 if frame.reward is None else float(frame.reward)
        done, cut = bool(frame.done), bool(frame.truncated)
        final: dict[int, dict[str, Any]] = {}
        if self.rule.stepped(done, cut):
            final[0] = {"observation": frame.observation, "info": frame.info}
            frame = await self.client.reset()
        return BatchResultFrame([frame.observation], [frame.info], [reward], [done], [cut], final)
