"""Task sets of the task envs (Coding, Git): loaded from JSONL, a Hugging Face dataset or dicts, picked per reset, and an episode's task and draws kept in a snapshot.

A task set has one JSON object per line, each a task of the env's own model (a subclass of
:class:`BaseTask`: every task has an id and a difficulty). The envs share how a set is read and
checked (errors name the line and the field), filtered by difficulty, kept from the sandbox's
view, and how a reset picks a task: ``options={"task_id": ...}``, else one drawn by the seed.
A snapshot of such an episode (:func:`episode_snapshot`) names its task by id, never holds it:
the task's hidden tests stay on the server, and a portable snapshot the client holds has none.
"""

from __future__ import annotations

import difflib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openenv_gym.errors import SnapshotRefusedError

__all__ = [
    "DIFFICULTIES",
    "HF_PREFIX",
    "BaseTask",
    "TaskSource",
    "choice_error",
    "episode_snapshot",
    "hidden_task_files",
    "load_task_set",
    "pick_task",
    "reset_options",
    "restored_episode",
    "select_task_set",
]

HF_PREFIX = "hf://datasets/"
DIFFICULTIES = ("easy", "medium", "hard")

#: What the envs' ``tasks`` argument takes: ``None`` (the shipped set), a path, ``hf://datasets/...``, or dicts.
TaskSource = str | Path | list[dict[str, Any]] | None


class BaseTask(BaseModel):
    """What every task has: an id that ``reset(options={"task_id": ...})`` names, and a difficulty."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(min_length=1, max_length=200)
    difficulty: Literal["easy", "medium", "hard"]


TaskT = TypeVar("TaskT", bound=BaseTask)


def load_task_set(source: TaskSource, model: type[TaskT], builtin: Path) -> list[TaskT]:
    """Load a task set of ``model`` tasks.

    Args:
        source: ``None`` for the env's shipped tasks (``builtin``); a path to a JSONL file; a
            Hugging Face dataset file as ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl``
            (downloaded once with ``huggingface_hub`` and read from its cache afterwards, also
            offline); or a list of task dicts.
        model: the env's task model.
        builtin: the env's shipped task file.

    Raises:
        ValueError: the file is not a valid task set; the message names the line and the field.
        FileNotFoundError: no such file.
    """
    if source is None:
        source = builtin
    if isinstance(source, list):
        rows: list[tuple[str, Any]] = [(f"task {index}", row) for index, row in enumerate(source)]
    else:
        path = _download(str(source)) if str(source).startswith(HF_PREFIX) else Path(source)
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"{path.name} line {number}", json.loads(line)))
                except ValueError as exc:
                    raise ValueError(f"{path.name} line {number}: not JSON ({exc})") from None
    tasks, seen = [], set()
    for where, row in rows:
        try:
            task = model.model_validate(row)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "task"
            raise ValueError(f"{where}: {field}: {error['msg']}") from None
        if task.task_id in seen:
            raise ValueError(f"{where}: task_id {task.task_id!r} appears twice")
        seen.add(task.task_id)
        tasks.append(task)
    if not tasks:
        raise ValueError(f"no tasks in {source}")
    return tasks


def select_task_set(
    source: TaskSource, model: type[TaskT], builtin: Path, difficulties: Sequence[str] | None = None
) -> list[TaskT]:
    """The tasks of ``source`` (as :func:`load_task_set` takes it) whose difficulty is one of ``difficulties`` (``None``: all).

    Raises:
        ValueError: a difficulty that is not one of :data:`DIFFICULTIES`, no task left, or a bad task set.
    """
    if difficulties is not None:
        for difficulty in difficulties:
            if difficulty not in DIFFICULTIES:
                raise choice_error("difficulty", difficulty, DIFFICULTIES)
    tasks = load_task_set(source, model, builtin)
    if difficulties is not None:
        tasks = [task for task in tasks if task.difficulty in difficulties]
        if not tasks:
            raise ValueError(f"no task has a difficulty in {list(difficulties)}")
    return tasks


def hidden_task_files(source: TaskSource, builtin: Path) -> list[str | Path]:
    """The files of a task set that sandboxed runs must not read (it holds what the checks expect).

    A task set from the Hub or a list of dicts has no file on the host to hide.
    """
    if isinstance(source, list):
        return []
    path = builtin if source is None else source
    return [] if str(path).startswith(HF_PREFIX) else [path]


def reset_options(options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The options of a reset (``None``: none), checked to hold nothing but ``task_id``.

    Raises:
        ValueError: naming the unknown options.
    """
    options = options or {}
    unknown = set(options) - {"task_id"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(unknown)}; the env takes 'task_id'")
    return options


def pick_task(
    tasks: Sequence[TaskT], by_id: Mapping[str, TaskT], options: Mapping[str, Any], rng: random.Random
) -> TaskT:
    """The task ``options["task_id"]`` names, else one drawn by ``rng``.

    Raises:
        ValueError: an unknown id (the message names the nearest, and them all).
    """
    if "task_id" not in options:
        return rng.choice(list(tasks))
    try:
        return by_id[options["task_id"]]
    except (KeyError, TypeError):
        raise choice_error("task_id", options["task_id"], list(by_id)) from None


def choice_error(what: str, value: Any, choices: Sequence[str]) -> ValueError:
    """The error for a ``value`` of ``what`` that is none of ``choices``: the nearest one, if any is near, and them all."""
    nearest = difflib.get_close_matches(str(value), choices, n=1)
    hint = f" Did you mean: {nearest[0]!r}?" if nearest else ""
    return ValueError(f"unknown {what} {value!r}.{hint} Expected one of: {', '.join(choices)}")


def _download(url: str) -> Path:
    """Fetch ``hf://datasets/ORG/NAME[@REVISION]/PATH`` through the Hugging Face cache."""
    from huggingface_hub import hf_hub_download

    parts = url[len(HF_PREFIX) :].split("/", 2)
    if len(parts) < 3 or not all(parts):
        raise ValueError(f"expected hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl, got {url!r}")
    org, name, filename = parts
    name, _, revision = name.partition("@")
    return Path(hf_hub_download(f"{org}/{name}", filename, repo_type="dataset", revision=revision or None))


StateT = TypeVar("StateT", bound=BaseModel)


def episode_snapshot(rng: random.Random, state: BaseModel, extra: Mapping[str, Any] | None = None) -> bytes:
    """A task env's episode as bytes (its ``Environment.snapshot()``): the generator that draws its
    tasks, its state (which names the task by id) and ``extra`` JSON of the env's own."""
    version, internal, gauss = rng.getstate()
    data = {"rng": [version, list(internal), gauss], "state": state.model_dump(mode="json"), "extra": dict(extra or {})}
    return json.dumps(data, separators=(",", ":")).encode()


def restored_episode(
    data: bytes, state_type: type[StateT], by_id: Mapping[str, TaskT]
) -> tuple[random.Random, StateT, TaskT | None, dict[str, Any]]:
    """The generator, state, task and ``extra`` of bytes :func:`episode_snapshot` made.

    Raises:
        SnapshotRefusedError: the bytes are not such a snapshot, or name a task this env's set
            lacks (a snapshot of a server serving another task set).
    """
    try:
        loaded = json.loads(data)
        version, internal, gauss = loaded["rng"]
        rng = random.Random()
        rng.setstate((version, tuple(internal), gauss))
        state = state_type.model_validate(loaded["state"])
        extra = dict(loaded.get("extra") or {})
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotRefusedError(f"not a snapshot of this env's episodes: {type(exc).__name__}: {exc}") from None
    task_id = getattr(state, "task_id", None)
    if task_id is not None and task_id not in by_id:
        raise SnapshotRefusedError(
            f"the snapshot's task {task_id!r} is not in this env's task set (a snapshot of another set?)"
        )
    return rng, state, (by_id[task_id] if task_id is not None else None), extra
