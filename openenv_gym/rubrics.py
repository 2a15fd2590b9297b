"""OpenEnv's rubrics as reward parts: :func:`rubric_reward` makes a rubric a :class:`~openenv_gym.rewards.RewardFunction`.

A rubric (OpenEnv's RFC 004: ``openenv.core.rubrics.Rubric`` and its containers ``Sequential``,
``Gate``, ``WeightedSum``, ``LLMJudge``, trajectory rubrics) is any object an OpenEnv env calls as
``rubric(action, observation)`` in each step, for a number (or an awaitable of one, when the rubric
or a child of it is async), and whose ``reset()``, when it has one, forgets the episode. Those two
calls are all this module uses, so it imports nothing of ``openenv``: a rubric of ``openenv``
0.10, of ``openenv-core`` 0.3 or one of your own that keeps the protocol will do.

An OpenEnv env hands its rubric its typed action and observation (attributes: ``action.code``,
``observation.done``, ``observation.metadata``). A Gymnasium env's step gives values, so the
rubric gets views with the same attributes (:func:`rubric_action`, :func:`rubric_observation`):
the fields of a dict as attributes, and on the observation ``done`` (terminated or truncated),
``reward`` (the env's) and ``metadata`` (the step's info).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from .rewards import RewardFunction, StepView

if TYPE_CHECKING:
    from .trajectories import Trajectory

__all__ = ["rubric_action", "rubric_observation", "rubric_reward"]


def rubric_reward(
    rubric: Any,
    *,
    name: str | None = None,
    weight: float = 1.0,
    per: Literal["step", "episode"] = "episode",
) -> RewardFunction:
    """``rubric`` as a reward part of the user's, scored on the client as its OpenEnv env would score it.

    ``per="step"``: each step's value is what ``rubric(action, observation)`` returns for it, the
    rubric reset before each episode's first step. ``per="episode"``: at the episode's last step,
    the rubric is reset and called on each step in order, as the env calls it, and the part is what
    it returned for the last one: a trajectory rubric's ``score_trajectory`` (its last observation
    is ``done``), a plain rubric's score of the last step. ``openenv-gym rescore`` and
    :func:`~openenv_gym.rewards.rescored` replay it from a record the same way.

    One rubric object serves every env the part is given to. A rubric that keeps state between
    steps (a trajectory rubric) scores ``per="step"`` on one env at a time only; on a vector env
    or the pool's async envs, whose episodes interleave, give it ``per="episode"`` (each episode
    replayed whole) or a part of its own per env.

    Args:
        rubric: an object with OpenEnv's rubric protocol (see the module's text).
        name: the component's name (default: the rubric's class name).
        weight, per: as :class:`~openenv_gym.rewards.RewardFunction` takes them.

    Example:
        >>> class Short:  # the protocol, no openenv needed
        ...     def __call__(self, action, observation):
        ...         return float(len(action) <= 8)
        >>> part = rubric_reward(Short(), per="step", weight=0.1)
        >>> (part.name, part.weight, part.on_step(StepView("obs", "12", 1.0, True, False, {}, 0)))
        ('Short', 0.1, 1.0)
    """
    if not callable(rubric):
        raise TypeError(f"a rubric is called as rubric(action, observation); {rubric!r} is not callable")
    return RewardFunction(_RubricScore(rubric, per), name=name or type(rubric).__name__, weight=weight, per=per)


def rubric_action(action: Any) -> Any:
    """What a rubric gets for a Gymnasium action: a dict's fields as attributes (``action.code``), any
    other action as it is (a text env's string, a discrete env's integer)."""
    if isinstance(action, Mapping) and all(isinstance(key, str) for key in action):
        return SimpleNamespace(**action)
    return action


def rubric_observation(observation: Any, *, reward: float, done: bool, info: Mapping[str, Any]) -> SimpleNamespace:
    """What a rubric gets for a Gymnasium observation: the attributes of an OpenEnv observation
    (``done``, ``reward``, ``metadata``: here the step's info) and, for a dict, its fields as
    attributes; any other observation is the attribute ``observation``."""
    if isinstance(observation, Mapping) and all(isinstance(key, str) for key in observation):
        fields = dict(observation)
    else:
        fields = {"observation": observation}
    return SimpleNamespace(**{**fields, "done": done, "reward": reward, "metadata": dict(info)})


@dataclass(frozen=True)
class _RubricScore:
    """The function a rubric's :class:`RewardFunction` calls, of a step or of a trajectory."""

    rubric: Any
    per: Literal["step", "episode"]

    def __call__(self, seen: StepView | Trajectory) -> float:
        if isinstance(seen, StepView):
            if seen.step == 0:  # an OpenEnv env resets its rubric in reset()
                self._reset()
            done = seen.terminated or seen.truncated
            return self._score(seen.action, seen.observation, seen.reward, done, seen.info)
        return self._score_episode(seen)

    def _score_episode(self, trajectory: Trajectory) -> float:
        self._reset()
        observations = trajectory.decoded_observations()
        actions = trajectory.decoded_actions()
        value = 0.0
        for index in range(trajectory.length):
            done = trajectory.done and index == trajectory.length - 1
            reward = float(trajectory.env_rewards[index])
            value = self._score(actions[index], observations[index + 1], reward, done, trajectory.infos[index + 1])
        return value

    def _score(self, action: Any, observation: Any, reward: float, done: bool, info: Mapping[str, Any]) -> float:
        seen = rubric_observation(observation, reward=reward, done=done, info=info)
        return float(_settled(self.rubric(rubric_action(action), seen)))

    def _reset(self) -> None:
        reset = getattr(self.rubric, "reset", None)
        if callable(reset):
            _settled(reset())


def _settled(value: Any) -> Any:
    """``value``, or what it resolves to when it is awaitable (an async rubric's score)."""
    if not inspect.isawaitable(value):
        return value

    async def awaited() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaited())
    # Called from a coroutine (the pool's async envs): its loop waits for this call, so the
    # rubric's coroutine runs on a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-gym-rubric") as worker:
        return worker.submit(asyncio.run, awaited()).result()
