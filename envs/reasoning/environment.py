"""`ReasoningGymEnvironment`: answer one generated question; the package's verifier scores the answer.

:meth:`~ReasoningGymEnvironment.reset` picks a task (the task API of
:class:`~openenv_gym.server.TaskSet`: by id, by split and index, or drawn by the seed) and shows
its question. One answer ends the episode: through Gymnasium the action is the answer's text
(``env.step("42")``); an OpenEnv client sends ``{"answer": "42"}``; a tool-calling agent calls
``answer(text)`` (``gym.make(..., tool_calls=True)``). The reward is the verifier's score in
[0, 1]: 1 for a right answer, less for a wrong or partly right one (some verifiers give any wrong
answer of the right form 0.01). An answer that shows nothing, echoes the question, is absurdly
long or holds a NaN or an infinity scores 0 before any verifier reads it (``info["answer_rejected"]``
says why), and a verifier that raises or returns anything but a number in [0, 1] scores 0
(``info["grader_error"]``): see :mod:`.scoring`. The answer and the metadata the verifier reads stay
on the server; the observation after the answer says only its score.
"""

from __future__ import annotations

import random
import string
import uuid
from typing import Any

from pydantic import Field

from openenv_gym.rewards import Composition, RewardPart
from openenv_gym.server import Action, Environment, EnvironmentMetadata, Observation, State, ToolResult, tool
from openenv_gym.server.task_sets import TaskSet, TaskSource, episode_snapshot, load_task_set, restored_episode

from .scoring import MAX_ANSWER_LENGTH, answer_length_limit, score_answer
from .tasks import DEFAULT_SIZES, ReasoningTask, make_tasks, refusal

__all__ = [
    "MAX_ANSWER_LENGTH",
    "AnswerAction",
    "ReasoningGymEnvironment",
    "ReasoningObservation",
    "ReasoningState",
]

_FEEDBACK_ROOM = 64  # the observation after an answer: "Your answer scored 0.25." and the like


class AnswerAction(Action):
    """The agent's answer, as text."""

    answer: str = Field(max_length=MAX_ANSWER_LENGTH)


class ReasoningObservation(Observation):
    """The question (after a reset), or what the answer scored (after it)."""

    observation: str = ""


class ReasoningState(State):
    """The episode's task, and whether its answer was given."""

    task_id: str | None = None
    answered: bool = False


class ReasoningGymEnvironment(Environment[AnswerAction, ReasoningObservation, ReasoningState]):
    """Questions from reasoning-gym's procedural generators, scored by the package's verifiers.

    Args:
        generators: the generators served (default :data:`~.tasks.DEFAULT_GENERATORS`, 71 of them).
        sizes: items per generator and split (default ``{"train": 20, "test": 5}``); each split
            of each generator is made from its own seed.
        data_seed: the seed the items are made from: equal seeds, equal task sets.
        tasks: a task set made before (JSONL, a dataset folder, ``hf://datasets/...`` or dicts
            of :class:`~.tasks.ReasoningTask` fields) instead of generating one.
        difficulties: only tasks of these difficulties (``"easy"``, ``"medium"``, ``"hard"``).
        split: the split resets draw from when their options name none (``None``: all tasks).

    Raises:
        ValueError: an unknown generator, a refused one (:func:`~.tasks.refusal`: its verifier runs
            the answer as code or pays a constant answer 1), also in a task set made before, or
            bad sizes.
        ImportError: reasoning-gym is not installed (``pip install 'openenv-gym[reasoning]'``).
    """

    action_type = AnswerAction
    observation_type = ReasoningObservation
    state_type = ReasoningState
    SUPPORTS_CONCURRENT_SESSIONS = True  # sessions share the task set, read only
    blocking = True  # a verifier may take a while (a maze, a sudoku)
    max_episode_steps = 1  # one answer
    reward_composition = Composition(
        (RewardPart("verifier", 1.0, description="the reasoning-gym verifier's score of the answer, in [0, 1]"),)
    )

    def __init__(
        self,
        generators: list[str] | None = None,
        sizes: dict[str, int] | None = None,
        data_seed: int = 0,
        tasks: TaskSource = None,
        difficulties: list[str] | None = None,
        split: str | None = None,
    ) -> None:
        if tasks is not None:
            made = load_task_set(tasks, ReasoningTask)
            for generator in sorted({task.generator for task in made}):
                if (refused := refusal(generator)) is not None:
                    raise ValueError(refused)
        else:
            made = make_tasks(generators, sizes if sizes is not None else dict(DEFAULT_SIZES), data_seed)
        if difficulties is not None:
            made = [task for task in made if task.difficulty in difficulties]
            if not made:
                raise ValueError(f"no task has a difficulty in {difficulties}")
        self.task_set = TaskSet(made, split=split)
        self.space_descriptions = _space_descriptions(self.task_set)
        self._length_limits = _length_limits(self.task_set)
        self._rng = random.Random()
        self._task: ReasoningTask | None = None
        self._state = ReasoningState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ReasoningObservation:
        """Pick a task (by ``options``, else one drawn by ``seed``) and show its question."""
        if seed is not None:
            self._rng = random.Random(seed)
        task = self.task_set.pick(kwargs.get("options"), self._rng)
        self._task = task
        self._state = ReasoningState(episode_id=episode_id or str(uuid.uuid4()), task_id=task.task_id)
        return ReasoningObservation(observation=task.question, reward=0.0, info=self._about(task))

    def step(self, action: AnswerAction) -> ReasoningObservation:
        """Score the answer; the episode ends."""
        score, info = self._score(action.answer)
        return ReasoningObservation(observation=f"Your answer scored {score:.4g}.", reward=score, done=True, info=info)

    @tool
    def answer(self, text: str) -> ToolResult:
        """Give your final answer to the question; it is scored and the episode ends.

        Args:
            text: the answer, exactly as the question asks for it.
        """
        if len(text) > MAX_ANSWER_LENGTH:
            raise ValueError(f"the answer is longer than {MAX_ANSWER_LENGTH} characters")
        score, info = self._score(text)
        return ToolResult(f"Your answer scored {score:.4g}.", reward=score, done=True, metadata=info, info=info)

    @property
    def state(self) -> ReasoningState:
        return self._state

    def snapshot(self) -> bytes:
        """The episode: its task (by id), whether it was answered, and the generator that draws tasks."""
        return episode_snapshot(self._rng, self._state)

    def restore(self, state: bytes) -> None:
        self._rng, self._state, self._task, _ = restored_episode(state, ReasoningState, self.task_set.by_id)

    def parse_action(self, data: dict[str, Any]) -> AnswerAction:
        """Accept ``{"answer": ...}`` and the Gymnasium wire form ``{"action": ...}`` of a Text action."""
        if "action" in data and "answer" not in data:
            data = {"answer": data["action"], **{key: value for key, value in data.items() if key != "action"}}
        return AnswerAction.model_validate(data)

    def task_catalog(self) -> dict[str, Any]:
        return self.task_set.describe()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="reasoning_gym_env",
            description="Questions from reasoning-gym's procedural generators; its verifiers score the answers",
            version="0.1.0",
        )

    def _score(self, answer: str) -> tuple[float, dict[str, Any]]:
        """The answer's score in [0, 1] (see :func:`.scoring.score_answer`), once per episode."""
        task = self._task
        if task is None:
            raise RuntimeError("reset before answering")
        if self._state.answered:
            raise RuntimeError("the question was answered: the episode has ended; reset for a new one")
        self._state.answered = True
        self._state.step_count += 1
        score, why = score_answer(task, answer, self._length_limits[task.generator])
        info = {**self._about(task), **why, "score": score, "reward_components": {"verifier": score}}
        return score, info

    @staticmethod
    def _about(task: ReasoningTask) -> dict[str, Any]:
        return {"task_id": task.task_id, "difficulty": task.difficulty, "generator": task.generator}


def _length_limits(task_set: TaskSet[ReasoningTask]) -> dict[str, int]:
    """Each generator's longest answer scored, from its longest right answer in the set (an item
    checked against its metadata alone has none: its generator takes any answer the action allows)."""
    longest: dict[str, int] = {}
    for task in task_set.tasks:
        length = MAX_ANSWER_LENGTH if task.answer is None else len(task.answer)
        longest[task.generator] = max(longest.get(task.generator, 0), length)
    return {generator: answer_length_limit(length) for generator, length in longest.items()}


def _space_descriptions(task_set: TaskSet[ReasoningTask]) -> dict[str, Any]:
    """Text spaces whose charset holds every character of the set's questions and answers (some
    have emoji and box drawing) and printable ASCII; the observation fits the longest question."""
    tasks = task_set.tasks
    charset = "".join(
        sorted(set(string.printable).union(*(task.question for task in tasks), *(task.answer or "" for task in tasks)))
    )
    longest = max(len(task.question) for task in tasks)
    return {
        "action": {"type": "Text", "min_length": 0, "max_length": MAX_ANSWER_LENGTH, "charset": charset},
        "observation": {
            "type": "Text",
            "min_length": 0,
            "max_length": max(longest, _FEEDBACK_ROOM),
            "charset": charset,
        },
    }
