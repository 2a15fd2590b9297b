"""`TaskGroup`: a GRPO group of episodes on the pool, all on the task a sampler picked.

An agent loop that trains with GRPO on an :class:`~openenv_gym.AsyncEnvPool` plays groups: G
episodes of one task, whose returns are compared with each other. :meth:`TaskGroup.start` asks
the sampler for the task, takes G sessions from the pool and resets each to it; the loop plays
them (``group.envs``, from ``group.observations`` and ``group.infos``); :meth:`TaskGroup.finish`
gives the sampler the group's returns and the sessions back to the pool::

    async with openenv_gym.AsyncEnvPool("openenv/ReasoningGym-v0", size=64) as pool:
        sampler = PassRateCurriculum(openenv_gym.tasks("openenv/ReasoningGym-v0").ids(split="train"))
        group = await TaskGroup.start(pool, sampler, size=8)
        returns = await asyncio.gather(*(play(env, obs) for env, obs in zip(group.envs, group.observations)))
        await group.finish(returns)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .task_sampling import TaskSampler

__all__ = ["TaskGroup"]


@dataclass
class TaskGroup:
    """``size`` pool episodes on one sampled task (made by :meth:`start`)."""

    task_id: str
    envs: list[Any]
    observations: list[Any]
    infos: list[dict[str, Any]]
    sampler: TaskSampler

    @classmethod
    async def start(cls, pool: Any, sampler: TaskSampler, size: int, *, seed: int | None = None) -> TaskGroup:
        """Sample a task, take ``size`` sessions from ``pool`` and reset each to it (``seed + i``
        seeds the ``i``-th, when given).

        Raises:
            ValueError: ``size`` is not positive.
            RuntimeError: the sampler has no task left.
        """
        if size < 1:
            raise ValueError(f"a group needs at least one episode, got size={size}")
        task_id = sampler.sample()
        if task_id is None:
            raise RuntimeError("the task sampler has no task left")
        envs = list(await asyncio.gather(*(pool.acquire() for _ in range(size))))
        try:
            resets = await asyncio.gather(
                *(
                    env.reset(seed=None if seed is None else seed + index, options={"task_id": task_id})
                    for index, env in enumerate(envs)
                )
            )
        except BaseException:
            await asyncio.gather(*(env.aclose() for env in envs), return_exceptions=True)
            raise
        return cls(task_id, envs, [obs for obs, _ in resets], [info for _, info in resets], sampler)

    async def finish(self, returns: Sequence[float | None]) -> None:
        """Tell the sampler the group's returns (``None``: an episode that could not be played, left
        out) and give the sessions back to the pool.

        Raises:
            ValueError: not one return per episode.
        """
        if len(returns) != len(self.envs):
            raise ValueError(f"a group of {len(self.envs)} episodes needs {len(self.envs)} returns, got {len(returns)}")
        try:
            played = [float(value) for value in returns if value is not None]
            if played:
                self.sampler.update(self.task_id, played)
        finally:
            await asyncio.gather(*(env.aclose() for env in self.envs))
