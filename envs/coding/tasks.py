"""Coding tasks: the model of one task, and loading a task set from JSONL or a Hugging Face dataset.

A task file has one JSON object per line with the columns of :class:`Task`::

    {"task_id": "count-vowels", "difficulty": "easy", "prompt": "...",
     "signature": "def count_vowels(text: str) -> int:", "entry_point": "count_vowels",
     "tests": [{"args": ["hello"], "expected": 2}, {"args": [5], "raises": "TypeError"}]}

The tests are hidden from the agent: only their arguments enter the sandbox, and results are
compared with the expected values outside it (:mod:`.scoring`). A test is *visible* when the
prompt writes out its call (``count_vowels("hello")``, as in "For example, ..."): feedback may
name a visible test's arguments and expected value, never a hidden one's.
"""

from __future__ import annotations

import ast
import functools
import json
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from openenv_gym.server.task_sets import BaseTask, TaskSource, load_task_set, select_task_set

__all__ = [
    "BUILTIN_TASKS",
    "MAX_PROMPT_LENGTH",
    "MAX_TESTS",
    "Task",
    "TestCase",
    "load_tasks",
    "select_tasks",
    "task_ids",
]

BUILTIN_TASKS = Path(__file__).with_name("tasks.jsonl")
MAX_TESTS = 100
MAX_PROMPT_LENGTH = 8192
_PRINTABLE = frozenset(string.printable)


class TestCase(BaseModel):
    """One hidden test: call the function with ``args``; expect ``expected``, or an exception named ``raises``."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid")

    args: list[Any]
    expected: Any = None
    raises: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_outcome(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("expected" in data) == (data.get("raises") is not None):
            raise ValueError("a test needs exactly one of 'expected' and 'raises'")
        return data


class Task(BaseTask):
    """A function-writing task with hidden tests."""

    hidden_fields = ("tests",)

    prompt: str = Field(min_length=1)
    signature: str = Field(pattern=r"^(async )?def \w+\(.*\).*:\s*$")
    entry_point: str = Field(pattern=r"^[A-Za-z_]\w*$")
    tests: list[TestCase] = Field(min_length=1, max_length=MAX_TESTS)

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        name = self.signature.split("def ", 1)[1].split("(", 1)[0]
        if name != self.entry_point:
            raise ValueError(f"entry_point {self.entry_point!r} is not the function of the signature ({name!r})")
        text = self.statement
        if len(text) > MAX_PROMPT_LENGTH or not _PRINTABLE.issuperset(text):
            raise ValueError(f"prompt and signature must be printable ASCII, at most {MAX_PROMPT_LENGTH} characters")
        return self

    @property
    def statement(self) -> str:
        """What the agent is shown: the prompt and the signature to implement."""
        return f"{self.prompt}\n\nWrite this function:\n{self.signature}"

    @functools.cached_property
    def visible_tests(self) -> tuple[int, ...]:
        """The indices of the tests the prompt shows: those whose call, with the same arguments, it writes out.

        Example:
            >>> task = Task(task_id="t", difficulty="easy", prompt="For example, double([1]) returns [1, 1].",
            ...             signature="def double(items):", entry_point="double",
            ...             tests=[{"args": [[2]], "expected": [2, 2]}, {"args": [[1]], "expected": [1, 1]}])
            >>> task.visible_tests
            (1,)
        """
        shown = set(_calls_in(self.prompt, self.entry_point))
        return tuple(index for index, test in enumerate(self.tests) if json.dumps(test.args) in shown)


def load_tasks(source: TaskSource = None) -> list[Task]:
    """Load a task set.

    Args:
        source: ``None`` for the tasks shipped with the environment; a path to a JSONL file; a
            Hugging Face dataset file as ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl``
            (downloaded once with ``huggingface_hub`` and read from its cache afterwards, also
            offline); or a list of task dicts.

    Raises:
        ValueError: the file is not a valid task set; the message names the line and the field.
        FileNotFoundError: no such file.
    """
    return load_task_set(source, Task, BUILTIN_TASKS)


def select_tasks(source: TaskSource = None, difficulties: Sequence[str] | None = None) -> list[Task]:
    """The tasks of ``source`` (as :func:`load_tasks` takes it) whose difficulty is one of ``difficulties`` (``None``: all).

    Raises:
        ValueError: a difficulty that is not one of ``"easy"``, ``"medium"``, ``"hard"``, no task left, or a bad task set.
    """
    return select_task_set(source, Task, BUILTIN_TASKS, difficulties)


def task_ids(tasks: TaskSource = None, difficulties: Sequence[str] | None = None) -> list[str]:
    """The ids of a task set, in its order: what ``reset(options={"task_id": ...})`` accepts.

    Args:
        tasks: as the env's ``tasks`` argument: ``None`` for the shipped set, a JSONL path,
            ``hf://datasets/...``, or a list of task dicts.
        difficulties: only the tasks of these difficulties (``"easy"``, ``"medium"``, ``"hard"``).

    Raises:
        ValueError: an unknown difficulty (the message lists the valid ones), or a bad task set.

    Example:
        >>> from openenv_gym.envs.coding import task_ids
        >>> task_ids(difficulties=["hard"])[:3]
        ['cheapest-route', 'transposition-distance', 'build-order']
    """
    return [task.task_id for task in select_tasks(tasks, difficulties)]


def _calls_in(text: str, name: str) -> list[str]:
    """The arguments of every call ``name(literal, ...)`` written in ``text``, as JSON text."""
    found = []
    start = 0
    while (at := text.find(name + "(", start)) != -1:
        start = at + 1
        if at and (text[at - 1].isalnum() or text[at - 1] == "_"):
            continue  # the end of a longer name
        opening = at + len(name) + 1
        closing = opening
        while (closing := text.find(")", closing)) != -1:  # the first ")" that ends a valid argument list
            inner = text[opening:closing]
            try:
                args = ast.literal_eval(f"({inner},)") if inner.strip() else ()
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                closing += 1
                continue
            try:
                found.append(json.dumps(_as_json(list(args))))
            except (TypeError, ValueError):
                pass  # a literal no test can hold (a set, bytes)
            break
    return found


def _as_json(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value
