"""`tasks()`: what a task env's server publishes of its task set, read on the client.

A task env (``openenv/Coding-v0``, ``CodingTools-v0``, ``Git-v0``, ``ReasoningGym-v0``, an env
``openenv-gym init`` scaffolds) publishes its task set in ``/schema["tasks"]``: how many tasks,
their splits and difficulties, the fields a task has, and each task's id, difficulty and split
(never a field's value: hidden tests stay on the server)::

    import openenv_gym
    catalog = openenv_gym.tasks("openenv/Git-v0")            # starts a server, reads, stops it
    catalog.ids(split="test")                                # what reset(options={"task_id": ...}) takes
    env.reset(options={"split": "test", "index": 0})         # the same task, by its place

The ids feed a sampler of :mod:`openenv_gym.task_sampling`.

A task env written with OpenEnv 0.10 publishes no ``/schema["tasks"]``: its server answers 0.10's
Task API instead (``/list_environments``, ``/{env}/splits``, ``/{env}/task_range``...), and
:func:`tasks` reads that (:meth:`TaskCatalog.from_task_api`). Each task's id is its spec's
``task_id`` or ``id`` (``split/index`` when the specs name none), and the env's sessions take the
same ``reset(options=...)`` as ours (:func:`task_resets_of` says how they travel).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client.task_api import TaskEntry
    from .client.task_resets import TaskResets

__all__ = ["TaskCatalog", "TaskInfo", "attached_split", "task_resets_of", "tasks"]


@dataclass(frozen=True)
class TaskInfo:
    """One task as the catalog lists it."""

    task_id: str
    difficulty: str
    split: str


@dataclass(frozen=True)
class TaskCatalog:
    """A task env's task set, as its server publishes it (:meth:`from_schema`).

    Attributes:
        entries: every task, in the set's order (the order ``index`` counts in, within a split).
        splits: each split's task count.
        difficulties: each difficulty's task count.
        fields: the fields a task of this env has; ``hidden_fields`` of them only the grader reads.
        split_source: ``"seed"`` (cut by ``split_seed``) or ``"tasks"`` (the tasks name their split).
        default_split: the split a reset without options draws from (``None``: the whole set).
    """

    entries: tuple[TaskInfo, ...]
    splits: dict[str, int]
    difficulties: dict[str, int]
    fields: tuple[str, ...] = ()
    hidden_fields: tuple[str, ...] = ()
    split_source: str = "seed"
    split_seed: int | None = None
    default_split: str | None = None
    reset_options: tuple[str, ...] = field(default=("task_id", "split", "index"))

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], where: str = "the server") -> TaskCatalog:
        """The catalog of a ``/schema`` (the whole document, or its ``"tasks"``).

        Raises:
            ValueError: the schema publishes no task set (not a task env), or a malformed one.
        """
        data = schema if "entries" in schema else schema.get("tasks")
        if not isinstance(data, Mapping) or "entries" not in data:
            raise ValueError(f"{where} publishes no task set in /schema (it is not a task env)")
        try:
            entries = tuple(
                TaskInfo(str(entry["task_id"]), str(entry["difficulty"]), str(entry["split"]))
                for entry in data["entries"]
            )
            return cls(
                entries=entries,
                splits={name: int(split["count"]) for name, split in data["splits"].items()},
                difficulties={name: int(count) for name, count in data["difficulties"].items()},
                fields=tuple(data.get("fields", ())),
                hidden_fields=tuple(data.get("hidden_fields", ())),
                split_source=str(data.get("split_source", "seed")),
                split_seed=data.get("split_seed"),
                default_split=data.get("default_split"),
                reset_options=tuple(data.get("reset_options", ("task_id", "split", "index"))),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{where} publishes a malformed task set: {type(exc).__name__}: {exc}") from None

    @classmethod
    def from_task_api(cls, entries: Sequence[TaskEntry]) -> TaskCatalog:
        """The catalog of an OpenEnv 0.10 server's tasks (read by its Task API): split by split, in
        the server's order, so that ``ids(split)[i]`` is what ``reset(split=, index=i)`` plays."""
        splits: dict[str, int] = {}
        difficulties: dict[str, int] = {}
        for entry in entries:
            splits[entry.split] = splits.get(entry.split, 0) + 1
            difficulties[entry.difficulty] = difficulties.get(entry.difficulty, 0) + 1
        return cls(
            entries=tuple(TaskInfo(entry.task_id, entry.difficulty, entry.split) for entry in entries),
            splits=splits,
            difficulties=difficulties,
            split_source="tasks",
            reset_options=("task_id", "split", "index", "task_spec"),
        )

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[TaskInfo]:
        return iter(self.entries)

    def ids(self, split: str | None = None, difficulty: str | None = None) -> list[str]:
        """The task ids, in set order, of one split and one difficulty (``None``: any).

        Raises:
            ValueError: a split or difficulty the set does not have.
        """
        if split is not None and split not in self.splits:
            raise ValueError(f"unknown split {split!r}; the set has {sorted(self.splits)}")
        if difficulty is not None and difficulty not in self.difficulties:
            raise ValueError(f"unknown difficulty {difficulty!r}; the set has {sorted(self.difficulties)}")
        return [
            entry.task_id
            for entry in self.entries
            if (split is None or entry.split == split) and (difficulty is None or entry.difficulty == difficulty)
        ]

    def difficulty_of(self) -> dict[str, str]:
        """Each task id's difficulty (to group results by it)."""
        return {entry.task_id: entry.difficulty for entry in self.entries}


def tasks(env: Any, **make_kwargs: Any) -> TaskCatalog:
    """The task set a task env publishes.

    Args:
        env: a registered id (``"openenv/Git-v0"``: its server is started, read and stopped, with
            ``make_kwargs`` as ``gym.make`` takes them, such as ``difficulties=["easy"]``), or an
            env made already (a :class:`~openenv_gym.RemoteEnv`, wrapped or not).

    Raises:
        ValueError: the env is not a task env (its server publishes no task set in ``/schema``
            and serves no Task API), or ``make_kwargs`` beside an env made already.
        TypeError: ``env`` is neither an id nor a remote env.
    """
    import gymnasium as gym

    from .client import http_get_json
    from .env import RemoteEnv

    if isinstance(env, str):
        made = gym.make(env, **make_kwargs)
        try:
            return tasks(made)
        finally:
            made.close()
    if make_kwargs:
        raise ValueError(f"make_kwargs are for an id; {env!r} is made already")
    remote = getattr(env, "unwrapped", env)
    if not isinstance(remote, RemoteEnv):
        raise TypeError(f"tasks() takes an env id or a remote env, got {type(env).__name__}")
    client = remote._client
    task_resets = client.kind.task_resets
    if task_resets is not None:  # an OpenEnv 0.10 server's Task API
        return TaskCatalog.from_task_api(task_resets.entries())
    schema = http_get_json(remote.base_url, "/schema", timeout=client.open_timeout, token=client.token)
    return TaskCatalog.from_schema(schema, where=repr(remote))


def attached_split(options: dict[str, Any]) -> str | None:
    """Take ``split`` out of ``gym.make``'s keyword arguments ``options`` when they attach to a running
    server (``base_url=``, ``base_urls=``): it is then the default split of the env's resets on an
    OpenEnv Task API server (:func:`task_resets_of`). A server that is started takes it as an
    argument of its env, as a local ``gym.make`` would (``None`` is returned, ``options`` kept)."""
    attached = options.get("base_url") is not None or bool(options.get("base_urls"))
    return options.pop("split", None) if attached else None


def task_resets_of(
    base_url: str, schema: Mapping[str, Any], timeout: float, token: str | None, split: str | None = None
) -> TaskResets | None:
    """How the resets of sessions on the server at ``base_url`` (whose ``/schema`` is ``schema``)
    send their task options, with ``split`` as the default split (``gym.make(..., base_url=...,
    split=...)``); ``None``: as they are given (a server of ours takes them itself).

    A server that publishes neither our spaces nor our tasks in ``/schema`` (one of OpenEnv's) is
    asked for OpenEnv 0.10's Task API (``GET /list_environments``, then its env's splits); its
    tasks are read when a reset first names one.

    Raises:
        ValueError: ``split`` for a server of ours (its env's split is set where it is started), one
            without a task set, or a split the server does not have.
        ServerConnectError: the server does not answer.
    """
    from .client.task_api import task_api_of
    from .client.task_resets import TaskResets

    ours = "tasks" in schema or "spaces" in schema
    api = None if ours else task_api_of(base_url, timeout, token)
    if api is not None:
        return TaskResets(api.splits(), split, api.entries)
    if split is not None:
        raise ValueError(
            f"split={split!r} is for a server with OpenEnv's Task API; {base_url} "
            + (
                "is openenv-gym's: set its env's split where it is started (--env-kwargs), or reset with options={'split': ...}"
                if ours
                else "has no task set (none in /schema, no Task API)"
            )
        )
    return None
