"""Run under OpenEnv 0.10: a stock task env served by its own ``create_app`` under uvicorn on
127.0.0.1:``argv[1]``, written only against ``openenv``'s base classes.

Arithmetic questions in two splits, ``train`` (six) and ``test`` (three), each a task spec
``{"id": ..., "question": ..., "difficulty": ...}`` (the answer stays on the server). The env
implements 0.10's ``TaskProvider`` methods (``list_splits``, ``list_tasks``, ``num_tasks``,
``get_task``, ``get_task_range``) and takes ``split``, ``index`` and ``task_spec`` in ``reset``, as
0.10's Task API guide has it: ``reset(split=..., index=...)`` plays that task, ``reset(split=...)``
draws one of the split by the seed, ``reset(task_spec={...})`` plays the spec given. The
observation carries the prompt; a step whose ``answer`` is right pays 1.0 and ends the episode, a
wrong one pays 0.0 and ends it too. The observation's metadata names the task played.

``argv[2] == "--no-task-api"`` serves the same env without the ``TaskProvider`` methods (0.10's
Task API routes then answer 501), still taking ``split`` and ``index`` in ``reset``;
``"--no-task-range"`` one whose ``get_task_range`` raises ``NotImplementedError`` (a 501 there alone).
"""

from __future__ import annotations

import random
import sys
import uuid
from typing import Any

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app

TASKS: dict[str, list[dict[str, Any]]] = {
    "train": [
        {"id": "add-1", "question": "What is 2 + 3?", "answer": "5", "difficulty": "easy"},
        {"id": "add-2", "question": "What is 7 + 8?", "answer": "15", "difficulty": "easy"},
        {"id": "mul-1", "question": "What is 6 * 7?", "answer": "42", "difficulty": "medium"},
        {"id": "mul-2", "question": "What is 12 * 11?", "answer": "132", "difficulty": "medium"},
        {"id": "pow-1", "question": "What is 2 ** 10?", "answer": "1024", "difficulty": "hard"},
        {"id": "sub-1", "question": "What is 100 - 58?", "answer": "42", "difficulty": "easy"},
    ],
    "test": [
        {"id": "add-9", "question": "What is 19 + 23?", "answer": "42", "difficulty": "easy"},
        {"id": "mul-9", "question": "What is 9 * 9?", "answer": "81", "difficulty": "medium"},
        {"id": "pow-9", "question": "What is 3 ** 5?", "answer": "243", "difficulty": "hard"},
    ],
}


def public(task: dict[str, Any]) -> dict[str, Any]:
    """A task's spec as the Task API lists it: every field but the answer."""
    return {key: value for key, value in task.items() if key != "answer"}


class ArithmeticAction(Action):
    answer: str


class ArithmeticObservation(Observation):
    prompt: str = ""


def split_tasks(split: str) -> list[dict[str, Any]]:
    if split not in TASKS:
        raise IndexError(f"unknown split {split!r}")
    return TASKS[split]


class ArithmeticEnv(Environment[ArithmeticAction, ArithmeticObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._task: dict[str, Any] = {}

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        task_spec: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> ArithmeticObservation:
        if task_spec is not None:
            task = dict(task_spec)
        else:
            tasks = split_tasks(split or "train")
            if index is None:
                index = random.Random(seed).randrange(len(tasks))
            task = tasks[index]
        self._task = task
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return ArithmeticObservation(prompt=task["question"], metadata={"task": task.get("id")})

    def step(self, action: ArithmeticAction, timeout_s: float | None = None, **kwargs: Any) -> ArithmeticObservation:
        self._state.step_count += 1
        right = action.answer.strip() == str(self._task.get("answer"))
        return ArithmeticObservation(
            prompt=self._task["question"],
            reward=1.0 if right else 0.0,
            done=True,
            metadata={"task": self._task.get("id")},
        )

    @property
    def state(self) -> State:
        return self._state


class ArithmeticTaskEnv(ArithmeticEnv):
    """The env with 0.10's Task API (its ``TaskProvider`` methods, implemented structurally)."""

    def list_splits(self) -> list[str]:
        return list(TASKS)

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [public(task) for task in split_tasks(split)]

    def num_tasks(self, split: str) -> int:
        return len(split_tasks(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        tasks = split_tasks(split)
        if not 0 <= index < len(tasks):
            raise IndexError(index)
        return public(tasks[index])

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        return [public(task) for task in split_tasks(split)[start:stop]]


class ArithmeticTaskEnvWithoutRanges(ArithmeticTaskEnv):
    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError


ENVS = {"--no-task-api": ArithmeticEnv, "--no-task-range": ArithmeticTaskEnvWithoutRanges}

if __name__ == "__main__":
    env = ENVS.get(sys.argv[2] if len(sys.argv) > 2 else "", ArithmeticTaskEnv)
    app = create_app(env, ArithmeticAction, ArithmeticObservation, env_name="arithmetic", max_concurrent_envs=8)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
