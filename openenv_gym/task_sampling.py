"""Which task the next episode (or GRPO group) plays: uniform, sequential, or a pass-rate curriculum.

A sampler hands out task ids (:meth:`TaskSampler.sample`) and hears how each group of episodes
on a task went (:meth:`TaskSampler.update`, the group's rewards). In GRPO a group whose
episodes all succeed or all fail has zero reward variance, so zero advantage and no gradient:
under uniform sampling of a task set where most tasks are always or never solved, most groups
are wasted. :class:`PassRateCurriculum` keeps sampling the tasks whose recent pass rate is
strictly between 0 and 1, explores tasks it has not seen, and re-checks the ones it dropped
(a policy that improves turns never-solved tasks into informative ones).

Samplers are pure Python and seeded: the same seed and the same updates give the same tasks.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Iterable, Sequence
from typing import Protocol

__all__ = ["PassRateCurriculum", "SequentialSampler", "TaskSampler", "UniformSampler", "pass_rate"]


def pass_rate(rewards: Sequence[float], success_at: float = 1.0) -> float:
    """The share of ``rewards`` that count as a success (at least ``success_at``).

    Raises:
        ValueError: no rewards.
    """
    if not rewards:
        raise ValueError("a group needs at least one reward")
    return sum(1 for reward in rewards if reward >= success_at) / len(rewards)


class TaskSampler(Protocol):
    """Hands out task ids and hears how they went."""

    def sample(self) -> str | None:
        """The next task's id (``None``: there is none left, for a sampler that has an end)."""
        ...

    def update(self, task_id: str, rewards: Sequence[float]) -> None:
        """How a group of episodes on ``task_id`` went: their rewards."""
        ...


def _task_list(tasks: Iterable[str]) -> list[str]:
    found = list(dict.fromkeys(tasks))  # each id once, in order
    if not found:
        raise ValueError("a sampler needs at least one task")
    return found


class UniformSampler:
    """Every task with the same chance, each time (what plain random sampling does)."""

    def __init__(self, tasks: Iterable[str], seed: int | None = None) -> None:
        self.tasks = _task_list(tasks)
        self._rng = random.Random(seed)

    def sample(self) -> str:
        return self._rng.choice(self.tasks)

    def update(self, task_id: str, rewards: Sequence[float]) -> None:
        """Uniform sampling learns nothing from results."""


class SequentialSampler:
    """Each task once, in order (shuffled by ``seed`` when given), then ``None``: an evaluation pass."""

    def __init__(self, tasks: Iterable[str], seed: int | None = None) -> None:
        self.tasks = _task_list(tasks)
        if seed is not None:
            random.Random(seed).shuffle(self.tasks)
        self._next = 0

    @property
    def remaining(self) -> int:
        """Tasks not handed out yet."""
        return len(self.tasks) - self._next

    def sample(self) -> str | None:
        if self._next >= len(self.tasks):
            return None
        self._next += 1
        return self.tasks[self._next - 1]

    def update(self, task_id: str, rewards: Sequence[float]) -> None:
        """An evaluation pass learns nothing from results."""


class PassRateCurriculum:
    """Sample the tasks whose recent pass rate is strictly between 0 and 1.

    Each task keeps the pass rates of its last ``window`` groups. A sample is, in order:

    * an unseen task, with probability ``explore`` (or when no task is informative yet);
    * a dropped task (recent pass rate 0 or 1) to re-check, with probability ``recheck`` (or
      when no task is informative and none is unseen);
    * else an informative task, uniformly.

    Args:
        tasks: the task ids.
        window: how many of a task's recent groups its pass rate is taken over.
        explore: the chance of trying an unseen task while informative ones exist.
        recheck: the chance of re-checking a dropped task while informative ones exist.
        success_at: a reward counts as a success from this value up.
        seed: the sampler's random generator's seed.
    """

    def __init__(
        self,
        tasks: Iterable[str],
        *,
        window: int = 2,
        explore: float = 0.05,
        recheck: float = 0.02,
        success_at: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if not (0 <= explore <= 1 and 0 <= recheck <= 1 and explore + recheck <= 1):
            raise ValueError(f"explore ({explore}) and recheck ({recheck}) must be chances that add up to at most 1")
        self.tasks = _task_list(tasks)
        self.window = window
        self.explore = explore
        self.recheck = recheck
        self.success_at = success_at
        self._rng = random.Random(seed)
        self._position = {task: index for index, task in enumerate(self.tasks)}
        self._rates: dict[str, collections.deque[float]] = {}
        self._unseen = list(self.tasks)  # in task order; a sample draws from it
        self._informative: set[str] = set()

    def sample(self) -> str:
        informative = sorted(self._informative, key=self._position.__getitem__)  # a set's order is not seeded
        dropped = [task for task in self._rates if task not in self._informative]
        draw = self._rng.random()
        if self._unseen and (draw < self.explore or not informative):
            return self._rng.choice(self._unseen)
        if dropped and (draw < self.explore + self.recheck or not informative):
            return self._rng.choice(dropped)
        return self._rng.choice(informative or self.tasks)

    def update(self, task_id: str, rewards: Sequence[float]) -> None:
        """Record the group's pass rate for ``task_id``.

        Raises:
            KeyError: a task the sampler does not have.
        """
        if task_id not in self._rates and task_id not in self._unseen:
            raise KeyError(f"{task_id!r} is not one of the sampler's tasks")
        rates = self._rates.setdefault(task_id, collections.deque(maxlen=self.window))
        if task_id in self._unseen:
            self._unseen.remove(task_id)
        rates.append(pass_rate(rewards, self.success_at))
        mean = sum(rates) / len(rates)
        if 0 < mean < 1:
            self._informative.add(task_id)
        else:
            self._informative.discard(task_id)

    def counts(self) -> dict[str, int]:
        """How many tasks are informative, dropped (pass rate 0 or 1) and unseen."""
        return {
            "informative": len(self._informative),
            "dropped": len(self._rates) - len(self._informative),
            "unseen": len(self._unseen),
        }
