"""Task sets of the task envs (Coding, CodingTools, Git, ReasoningGym): loaded, split, published and picked per reset.

A task set is a list of tasks of the env's own model (a subclass of :class:`BaseTask`: every
task has an id and a difficulty, and may name its split). It comes from a JSONL file, a Hugging
Face dataset (``hf://datasets/ORG/NAME[@REVISION][/PATH]``, or the same layout in a local folder,
read by ``datasets``), or a Python iterable of dicts. The envs share how a set is read and
checked (errors name the row and the field), filtered by difficulty, split, kept from the
sandbox's view, published in ``/schema["tasks"]`` (:meth:`TaskSet.describe`), and how a reset
picks a task (:meth:`TaskSet.pick`)::

    reset(options={"task_id": "count-vowels"})      # that task
    reset(options={"split": "test", "index": 3})     # the split's 4th task, in set order
    reset(options={"split": "train"})                # one of the split's, drawn by the seed
    reset()                                          # one of the env's ``split`` (else of all), drawn by the seed

Whoever resets chooses the task this way: the trainer's client, never the model it trains (see
``docs/tasks.md``). A server's operator may close splits to every client
(``openenv-gym serve --task-splits train``, :func:`serving_splits`): their tasks are then neither
picked, drawn nor restored, and ``/schema`` publishes their names and counts but not their ids. An
unknown id is refused without naming any other: an error a model reads never lists the catalogue.

A set whose tasks name no split is split by ``split_seed``: each difficulty's tasks are shuffled
by it and cut in the ``splits`` fractions (80 % train, 20 % test by default), so every server of
the same set and seed has the same splits.

A snapshot of such an episode (:func:`episode_snapshot`) names its task by id, never holds it:
the task's hidden tests stay on the server, and a portable snapshot the client holds has none.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import random
import reprlib
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openenv_gym.errors import SnapshotRefusedError

__all__ = [
    "DEFAULT_SPLITS",
    "DIFFICULTIES",
    "HF_PREFIX",
    "RESET_OPTIONS",
    "BaseTask",
    "Difficulty",
    "TaskSet",
    "TaskSource",
    "choice_error",
    "episode_snapshot",
    "hidden_task_files",
    "load_task_set",
    "restored_episode",
    "select_task_set",
    "serving_splits",
    "unknown_task_error",
]

HF_PREFIX = "hf://datasets/"
#: How hard a task is.
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = get_args(Difficulty)
#: How a set whose tasks name no split is cut, unless the env is given ``splits``.
DEFAULT_SPLITS: Mapping[str, float] = {"train": 0.8, "test": 0.2}
#: What ``reset(options=...)`` of a task env takes.
RESET_OPTIONS = ("task_id", "split", "index")

#: What the envs' ``tasks`` argument takes: ``None`` (the shipped set), a path (a JSONL file or a
#: dataset folder), ``hf://datasets/...``, or an iterable of task dicts.
TaskSource = str | Path | Iterable[Mapping[str, Any]] | None


class BaseTask(BaseModel):
    """What every task has: an id that ``reset(options={"task_id": ...})`` names, a difficulty, and maybe its split.

    Attributes:
        hidden_fields: the fields only the grader reads (published by name, never by value).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    hidden_fields: ClassVar[tuple[str, ...]] = ()

    task_id: str = Field(min_length=1, max_length=200)
    difficulty: Difficulty
    split: str | None = Field(default=None, min_length=1, max_length=64)


TaskT = TypeVar("TaskT", bound=BaseTask)


def load_task_set(source: TaskSource, model: type[TaskT], builtin: Path | None = None) -> list[TaskT]:
    """Load a task set of ``model`` tasks.

    Args:
        source: ``None`` for the env's shipped tasks (``builtin``); a path to a JSONL file; a
            Hugging Face dataset file as ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl``
            (downloaded once with ``huggingface_hub`` and read from its cache afterwards, also
            offline); a whole Hugging Face dataset as ``hf://datasets/ORG/NAME[@REVISION]``, or
            a local folder of one (its data files, or what ``Dataset.save_to_disk`` wrote), read
            by ``datasets`` with its splits; or an iterable of task dicts. In a dataset, a column
            holding JSON text is decoded where the task's field is a list or an object (Arrow
            tables cannot hold lists of mixed types, such as test arguments).
        model: the env's task model.
        builtin: the env's shipped task file (``None``: it ships none, and ``source`` is needed).

    Raises:
        ValueError: the source is not a valid task set; the message names the row and the field.
        FileNotFoundError: no such file.
        ImportError: a dataset source without the ``datasets`` package.
    """
    if source is None:
        if builtin is None:
            raise ValueError("no task set given, and the env ships none")
        source = builtin
    if isinstance(source, (str, Path)):
        rows = _source_rows(source, model)
    else:
        rows = [(f"task {index}", row) for index, row in enumerate(source)]
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


def _source_rows(source: str | Path, model: type[BaseTask]) -> list[tuple[str, Any]]:
    """The rows of a file, folder or ``hf://`` source, each with where it is (for errors)."""
    text = str(source)
    if text.startswith(HF_PREFIX):
        repo, revision, filename = _hf_parts(text)
        if filename.endswith(".jsonl"):
            return _jsonl_rows(_download(repo, revision, filename))
        return _dataset_rows(repo, model, revision=revision, data_dir=filename or None)
    path = Path(source)
    if path.is_dir():
        return _dataset_rows(str(path), model)
    return _jsonl_rows(path)


def _jsonl_rows(path: Path) -> list[tuple[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append((f"{path.name} line {number}", json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path.name} line {number}: not JSON ({exc})") from None
    return rows


def _dataset_rows(
    name: str, model: type[BaseTask], *, revision: str | None = None, data_dir: str | None = None
) -> list[tuple[str, Any]]:
    """The rows of every split of a Hugging Face dataset (a Hub id or a local folder), each row's
    ``split`` set to its split's name unless the row names one."""
    try:
        import datasets
    except ImportError:
        raise ImportError(f"reading the dataset {name!r} needs the datasets package: pip install datasets") from None
    folder = Path(name)
    if folder.is_dir() and any((folder / marker).exists() for marker in ("dataset_dict.json", "state.json")):
        loaded = datasets.load_from_disk(str(folder))  # what save_to_disk wrote
    else:
        loaded = datasets.load_dataset(name, revision=revision, data_dir=data_dir)
    splits = loaded if isinstance(loaded, datasets.DatasetDict) else {None: loaded}
    rows: list[tuple[str, Any]] = []
    for split, dataset in splits.items():
        for index, row in enumerate(dataset):
            row = _decoded_json_columns(row, model)
            if split is not None and row.get("split") is None:
                row["split"] = split
            rows.append((f"{split or 'dataset'} row {index}", row))
    return rows


def _decoded_json_columns(row: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """``row`` with JSON text decoded where the model's field is not text, and with the columns
    Arrow filled with ``None`` (absent in this row) left out, so that the field's default holds."""
    decoded: dict[str, Any] = {}
    for key, value in row.items():
        field = model.model_fields.get(key)
        if value is None and field is not None and not field.is_required():
            continue
        if isinstance(value, str) and field is not None and not _takes_text(field.annotation):
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, (list, dict)):
                value = parsed
        decoded[key] = value
    return decoded


def _takes_text(annotation: Any) -> bool:
    """Whether a field of this annotation takes a string as it is (``str``, ``str | None``, ``Any``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_takes_text(member) for member in typing.get_args(annotation))
    return annotation is str or annotation is Any


def select_task_set(
    source: TaskSource, model: type[TaskT], builtin: Path | None = None, difficulties: Sequence[str] | None = None
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

    A task set from the Hub or an iterable of dicts has no file on the host to hide (the Hub's
    cache is outside what a sandbox sees); a local dataset folder is hidden whole.
    """
    if source is None:
        return [builtin]
    if not isinstance(source, (str, Path)):
        return []
    return [] if str(source).startswith(HF_PREFIX) else [source]


class TaskSet(Generic[TaskT]):
    """A task env's tasks, split, published in ``/schema["tasks"]`` and picked per reset.

    Args:
        tasks: the tasks, in the set's order (:func:`select_task_set` loads them).
        splits: for a set whose tasks name no split: the fraction of each split, by name
            (default :data:`DEFAULT_SPLITS`). Every difficulty is cut in these fractions.
        split_seed: the seed of the cut: the same set and seed give the same splits everywhere.
        split: the split a reset draws from when its options name none (``None``: the whole set).

    Raises:
        ValueError: fractions that are not positive or do not sum to 1, ``splits`` given for a
            set whose tasks name theirs, some tasks naming a split and others not, or an
            unknown ``split``.
    """

    def __init__(
        self,
        tasks: Sequence[TaskT],
        *,
        splits: Mapping[str, float] | None = None,
        split_seed: int = 0,
        split: str | None = None,
    ) -> None:
        self.tasks = list(tasks)
        self.by_id = {task.task_id: task for task in self.tasks}
        self.split_seed = split_seed
        named = [task.split is not None for task in self.tasks]
        if any(named):
            if not all(named):
                unnamed = next(task.task_id for task in self.tasks if task.split is None)
                raise ValueError(
                    f"some tasks name their split and task {unnamed!r} does not: name every task's or none"
                )
            if splits is not None:
                raise ValueError("the tasks name their own splits; drop splits=")
            self.split_of = {task.task_id: str(task.split) for task in self.tasks}
            self.split_source = "tasks"
        else:
            self.split_of = _cut(self.tasks, dict(DEFAULT_SPLITS if splits is None else splits), split_seed)
            self.split_source = "seed"
        self.splits: dict[str, list[TaskT]] = {}
        for task in self.tasks:
            self.splits.setdefault(self.split_of[task.task_id], []).append(task)
        if split is not None and split not in self.splits:
            raise choice_error("split", split, list(self.splits))
        self.default_split = split
        #: The splits :meth:`serve_only` closed, with their tasks (none until it is called).
        self.closed_splits: dict[str, list[TaskT]] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[TaskT]:
        return iter(self.tasks)

    def describe(self) -> dict[str, Any]:
        """What ``/schema["tasks"]`` says: counts, splits, fields, difficulties, and every task's
        id, difficulty and split (never a field's value: the hidden ones stay on the server)."""
        model = type(self.tasks[0])
        return {
            "count": len(self.tasks),
            "fields": [name for name in model.model_fields if name != "split"],
            "hidden_fields": list(model.hidden_fields),
            "difficulties": _difficulty_counts(self.tasks),
            "splits": {
                name: {"count": len(tasks), "difficulties": _difficulty_counts(tasks)}
                for name, tasks in self.splits.items()
            },
            "split_source": self.split_source,
            "split_seed": self.split_seed if self.split_source == "seed" else None,
            "default_split": self.default_split,
            # Closed by the server's operator: named and counted, their ids withheld.
            "closed_splits": {
                name: {"count": len(tasks), "difficulties": _difficulty_counts(tasks)}
                for name, tasks in self.closed_splits.items()
            },
            "reset_options": list(RESET_OPTIONS),
            "entries": [
                {"task_id": task.task_id, "difficulty": task.difficulty, "split": self.split_of[task.task_id]}
                for task in self.tasks
            ],
        }

    def pick(self, options: Mapping[str, Any] | None, rng: random.Random) -> TaskT:
        """The task a reset's ``options`` name, else one drawn by ``rng`` from the split they (or the env) name.

        Raises:
            ValueError: an unknown option, id or split (an unknown id is refused without naming
                any task: the error may reach a model), a closed split (:meth:`serve_only`),
                ``task_id`` beside ``split`` or ``index``, or an index out of range.
        """
        options = options or {}
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; a task env takes {', '.join(RESET_OPTIONS)}")
        if "task_id" in options:
            if "split" in options or "index" in options:
                raise ValueError("reset options name a task by task_id, or by split and index: not both")
            task_id = options["task_id"]
            task = self.by_id.get(task_id) if isinstance(task_id, str) else None
            if task is None:  # a closed split's id too: whether one exists is not told either
                raise unknown_task_error(task_id)
            return task
        split = options.get("split", self.default_split if "index" not in options else None)
        if split is not None:
            self._check_split(split)
        pool = self.tasks if split is None else self.splits[split]
        if "index" not in options:
            return rng.choice(pool)
        index = options["index"]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pool):
            where = f"split {split!r}" if split is not None else "the task set"
            raise ValueError(f"index {_shown(index)} is not a task of {where}: expected an int in [0, {len(pool)})")
        return pool[index]

    def _check_split(self, split: Any) -> None:
        """Refuse a split this set does not serve: a closed one with the reason, an unknown one by
        naming the served ones (split names are no secret; their tasks' ids are)."""
        if isinstance(split, str) and split in self.closed_splits:
            raise ValueError(
                f"split {split!r} is closed on this server (its operator's choice): it serves "
                f"{', '.join(self.splits)} alone"
            )
        if not isinstance(split, str) or split not in self.splits:
            raise choice_error("split", split, list(self.splits))

    def serve_only(self, splits: Sequence[str]) -> None:
        """Serve the tasks of ``splits`` alone from now on: the others' tasks are neither picked by
        id, split or index, nor drawn by a reset without options, nor restored from a snapshot,
        and :meth:`describe` names those splits with their counts but lists none of their ids.

        What ``openenv-gym serve --task-splits`` does to every environment it makes
        (:func:`serving_splits`); ``index`` without ``split`` then counts the served tasks alone.

        Raises:
            ValueError: no split, one the set does not have, or a set whose resets draw from a
                split (its ``split`` argument) left out.
        """
        wanted = list(dict.fromkeys(splits))
        if not wanted:
            raise ValueError("serve_only needs at least one split")
        for name in wanted:
            if name not in self.splits:
                raise choice_error("split", name, list(self.splits))
        if self.default_split is not None and self.default_split not in wanted:
            raise ValueError(
                f"the env's resets draw from split {self.default_split!r}, which the served splits "
                f"({', '.join(wanted)}) leave out"
            )
        self.closed_splits.update((name, tasks) for name, tasks in self.splits.items() if name not in wanted)
        self.splits = {name: self.splits[name] for name in wanted}
        self.tasks = [task for task in self.tasks if self.split_of[task.task_id] in self.splits]
        self.by_id = {task.task_id: task for task in self.tasks}


def serving_splits(factory: Callable[..., Any], splits: Sequence[str]) -> Callable[..., Any]:
    """``factory``, whose environments serve the tasks of ``splits`` alone (:meth:`TaskSet.serve_only`).

    What a server's ``task_splits`` option does (``openenv-gym serve --task-splits train``): its
    operator, not its clients, decides which splits a reset may reach. A task env keeps its set
    as ``task_set``, as every task env of this package and ``openenv-gym init``'s do.

    The environment it makes raises ``ValueError`` (and is closed) when it holds no task set or
    lacks one of ``splits``.
    """
    wanted = tuple(splits)

    def make(*args: Any, **kwargs: Any) -> Any:
        env = factory(*args, **kwargs)
        try:
            task_set = getattr(env, "task_set", None)
            if not isinstance(task_set, TaskSet):
                raise ValueError(f"task_splits={','.join(wanted)}: {type(env).__name__} serves no task set")
            task_set.serve_only(wanted)
        except BaseException:
            env.close()
            raise
        return env

    # Its name and doc, for the errors that name a factory; not its attributes (a class's are its methods).
    return functools.update_wrapper(make, factory, updated=())


def _cut(tasks: Sequence[BaseTask], fractions: dict[str, float], seed: int) -> dict[str, str]:
    """Each task's split: every difficulty's tasks shuffled by ``seed`` and cut in ``fractions``
    (largest remainders get the leftover tasks, earlier splits first on ties)."""
    if not fractions or any(not isinstance(f, (int, float)) or f <= 0 for f in fractions.values()):
        raise ValueError(f"splits must map names to positive fractions, got {fractions!r}")
    if not math.isclose(sum(fractions.values()), 1.0, abs_tol=1e-9):
        raise ValueError(f"split fractions must sum to 1, got {sum(fractions.values())} ({fractions!r})")
    split_of: dict[str, str] = {}
    for difficulty in DIFFICULTIES:
        group = [task.task_id for task in tasks if task.difficulty == difficulty]
        random.Random(f"{seed}:{difficulty}").shuffle(group)
        shares = {name: fraction * len(group) for name, fraction in fractions.items()}
        counts = {name: math.floor(share) for name, share in shares.items()}
        leftover = len(group) - sum(counts.values())
        for name in sorted(shares, key=lambda name: counts[name] - shares[name])[:leftover]:
            counts[name] += 1
        start = 0
        for name, count in counts.items():
            split_of.update(dict.fromkeys(group[start : start + count], name))
            start += count
    return split_of


def _difficulty_counts(tasks: Sequence[BaseTask]) -> dict[str, int]:
    return {difficulty: sum(1 for task in tasks if task.difficulty == difficulty) for difficulty in DIFFICULTIES}


def choice_error(what: str, value: Any, choices: Sequence[str]) -> ValueError:
    """The error for a ``value`` of ``what`` that is none of ``choices``: the nearest one, if any is
    near, and them all. For public choices only (a mode, a split's name): never a task id
    (:func:`unknown_task_error`)."""
    nearest = difflib.get_close_matches(str(value), choices, n=1)
    hint = f" Did you mean: {nearest[0]!r}?" if nearest else ""
    return ValueError(f"unknown {what} {_shown(value)}.{hint} Expected one of: {', '.join(choices)}")


def unknown_task_error(task_id: Any) -> ValueError:
    """The error for a ``task_id`` the set does not serve. It names no other id, nor the nearest:
    a model that resets (an MCP bridge's operator may let it) must not read the catalogue, the
    held-out split's included, out of its errors. The trainer reads the ids in ``/schema``."""
    return ValueError(
        f"unknown task_id {_shown(task_id)}: this env serves no task of that id "
        "(its ids are published in the server's /schema: openenv_gym.tasks(...))"
    )


def _shown(value: Any) -> str:
    """A value a client sent, as an error shows it: its repr, cut short whatever its size."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 80  # the constructor takes them from Python 3.12 only
    return shown.repr(value)


def _hf_parts(url: str) -> tuple[str, str | None, str]:
    """``hf://datasets/ORG/NAME[@REVISION][/PATH]`` as the repo, the revision and the path ("" for none)."""
    parts = url[len(HF_PREFIX) :].split("/", 2)
    if len(parts) < 2 or not all(parts):
        raise ValueError(f"expected hf://datasets/ORG/NAME[@REVISION][/PATH], got {url!r}")
    org, name = parts[0], parts[1]
    name, _, revision = name.partition("@")
    return f"{org}/{name}", revision or None, parts[2] if len(parts) == 3 else ""


def _download(repo: str, revision: str | None, filename: str) -> Path:
    """Fetch one file of a Hub dataset through the Hugging Face cache."""
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision))


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
