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
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskCatalog", "TaskInfo", "tasks"]


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
        ValueError: the env is not a task env, or ``make_kwargs`` beside an env made already.
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
    schema = http_get_json(remote.base_url, "/schema", timeout=client.open_timeout, token=client.token)
    return TaskCatalog.from_schema(schema, where=repr(remote))
