"""`SampleTasks`: a vector env whose sub-envs play the tasks a sampler picks, one episode at a time.

::

    envs = gym.make_vec("openenv/ReasoningGym-v0", num_envs=8, autoreset_mode="Disabled")
    envs = SampleTasks(envs, PassRateCurriculum(openenv_gym.tasks(envs).ids(split="train")), group_size=8)

Every sub-env's episode is reset to a task the sampler picked (``options={"task_id": ...}``). With
``group_size`` G, a task's G episodes make a group (as GRPO's groups: G episodes of one task, on
whichever sub-envs come free), and when its last episode ends the sampler hears the group's
returns. An episode's end autoresets its sub-env in the same step (Gymnasium's ``SAME_STEP``: the
observation is the next episode's first, the last one is in ``info["final_obs"]``), so the wrapped
env must not autoreset itself (``autoreset_mode="Disabled"``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from openenv_gym.task_sampling import TaskSampler

from .vector_items import info_of, item_of

__all__ = ["SampleTasks"]


class SampleTasks(VectorWrapper):
    """Reset each sub-env's episodes to the tasks ``sampler`` picks, and tell it how they went.

    Args:
        env: a vector env of a task env, made with ``autoreset_mode="Disabled"``.
        sampler: hands out task ids (:mod:`openenv_gym.task_sampling`).
        group_size: episodes per sampled task; the sampler hears a task's returns once all of
            its group's episodes ended.

    Raises:
        ValueError: the env autoresets itself, or ``group_size`` is not positive.
    """

    def __init__(self, env: VectorEnv, sampler: TaskSampler, *, group_size: int = 1) -> None:
        super().__init__(env)
        mode = env.metadata.get("autoreset_mode")
        if AutoresetMode(mode.value if isinstance(mode, AutoresetMode) else mode) != AutoresetMode.DISABLED:
            raise ValueError(
                f"SampleTasks resets sub-envs itself: make the env with autoreset_mode='Disabled', not {mode}"
            )
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        self.sampler = sampler
        self.group_size = group_size
        self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
        self.tasks: list[str | None] = [None] * env.num_envs  # each sub-env's current task
        self.groups_done = 0  # groups whose returns the sampler heard
        self._returns = np.zeros(env.num_envs)
        self._pending: deque[str] = deque()  # episodes of sampled groups not started yet
        self._group_returns: dict[int, list[float]] = {}
        self._group_of: list[int | None] = [None] * env.num_envs
        self._group_task: dict[int, str] = {}
        self._open: dict[int, int] = {}  # episodes of a group not yet ended
        self._next_group = 0
        self._queue: deque[int] = deque()  # the groups of the pending episodes, in order

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env to a sampled task (``seed + i`` seeds sub-env ``i``'s generator first)."""
        if options:
            raise ValueError(f"SampleTasks picks the tasks; reset takes no options, got {sorted(options)}")
        self.env.reset(seed=seed)  # the server's first reset selects every sub-env; then each gets its task
        infos: dict[str, Any] = {}
        observations: Any = None
        for index in range(self.num_envs):
            observations, info = self._start(index)
            infos = self._merged(infos, info, index)
        self._returns[:] = 0.0
        return observations, infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        self._returns += rewards
        ended = np.flatnonzero(np.logical_or(terminations, truncations))
        if ended.size:
            infos = dict(infos)
            final_obs = np.empty(self.num_envs, dtype=object)
            final_info = np.empty(self.num_envs, dtype=object)
            for index in map(int, ended):
                final_obs[index] = item_of(observations, index)
                final_info[index] = info_of(infos, index)
                self._finish(index, float(self._returns[index]))
                self._returns[index] = 0.0
            for index in map(int, ended):
                observations, info = self._start(index)
                infos = self._merged(infos, info, index)
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[ended] = True
            infos.update(final_obs=final_obs, _final_obs=mask, final_info=final_info, _final_info=mask.copy())
        return observations, rewards, terminations, truncations, infos

    def _start(self, index: int) -> tuple[Any, dict[str, Any]]:
        """Reset sub-env ``index`` to its next episode's task (sampling a new group when none is pending)."""
        if not self._queue:
            task_id = self.sampler.sample()
            if task_id is None:
                raise RuntimeError("the task sampler has no task left: the evaluation pass is over")
            group = self._next_group
            self._next_group += 1
            self._group_task[group], self._open[group], self._group_returns[group] = task_id, self.group_size, []
            self._queue.extend([group] * self.group_size)
        group = self._queue.popleft()
        self._group_of[index], self.tasks[index] = group, self._group_task[group]
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[index] = True
        observations, infos = self.env.reset(options={"reset_mask": mask, "task_id": self._group_task[group]})
        return observations, info_of(infos, index)

    def _finish(self, index: int, episode_return: float) -> None:
        group = self._group_of[index]
        assert group is not None
        self._group_returns[group].append(episode_return)
        self._open[group] -= 1
        if self._open[group] == 0:
            self.sampler.update(self._group_task.pop(group), self._group_returns.pop(group))
            del self._open[group]
            self.groups_done += 1

    def _merged(self, infos: dict[str, Any], info: dict[str, Any], index: int) -> dict[str, Any]:
        return VectorEnv._add_info(self, dict(infos), info, index)
