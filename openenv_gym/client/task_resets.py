"""`TaskResets`: a reset's task options as a server with OpenEnv 0.10's Task API takes them.

Our clients pick a task with ``reset(options={"task_id": ...})``, ``{"split": ..., "index": ...}``
or ``{"split": ...}`` (a draw), and a server of ours takes those options as they are. OpenEnv
0.10's server passes ``reset``'s keyword arguments to its env by name (``split=``, ``index=``,
``task_spec=``) and hands an unknown ``options`` to an env that takes ``**kwargs``, which ignores
it. So for a Task API server the options move to the top: ``task_id`` becomes its ``split`` and
``index`` (the tasks are read from the Task API once, when a reset first names one), a default
split (``gym.make(..., base_url=..., split="train")``) names the split of a reset that picks no
task, and the session's reset reply says which task it played in ``info["task_id"]``, as our task
envs' do. Nothing here does I/O but the ``entries`` it is handed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from .task_api import TaskEntry

__all__ = ["TaskResets"]

#: The options that pick a task, taken out of ``options`` for a Task API server.
TASK_OPTIONS = ("task_id", "split", "index", "task_spec")


class TaskResets:
    """What a session's resets send for their task options (see the module's doc).

    Args:
        splits: the server's splits.
        default_split: the split of a reset whose options pick no task.
        entries: reads the server's tasks (called once, when a reset first names a task).

    Raises:
        ValueError: a default split the server does not have.
    """

    def __init__(
        self,
        splits: Sequence[str],
        default_split: str | None,
        entries: Callable[[], list[TaskEntry]],
    ) -> None:
        if default_split is not None and default_split not in splits:
            raise ValueError(f"unknown split {default_split!r}; the server has {list(splits)}")
        self.splits = tuple(splits)
        self.default_split = default_split
        self._read_entries = entries
        self._entries: list[TaskEntry] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TaskResets(splits={list(self.splits)}, default_split={self.default_split!r})"

    def entries(self) -> list[TaskEntry]:
        """The server's tasks, read on first use (and kept: a task set does not change under a server)."""
        with self._lock:
            if self._entries is None:
                self._entries = list(self._read_entries())
            return self._entries

    def wire_kwargs(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The reset's keyword arguments to send for ``kwargs`` (``seed``, ``options``...), and the
        task it plays when known (``None``: the server draws it).

        Raises:
            ValueError: an unknown split or task id, or options that pick a task twice.
        """
        options = dict(kwargs.get("options") or {})
        wire = {key: value for key, value in kwargs.items() if key != "options"}
        task_id, split, index, spec = (options.pop(name, None) for name in TASK_OPTIONS)
        if task_id is not None:
            if split is not None or index is not None or spec is not None:
                raise ValueError("reset options pick a task once: task_id, or split and index, or task_spec")
            entry = self._entry(lambda entry: entry.task_id == task_id)
            if entry is None:
                raise ValueError(f"unknown task_id {task_id!r}: the server lists no task of that id")
            split, index = entry.split, entry.index
        elif split is None and spec is None:
            split = self.default_split
        if split is not None:
            if split not in self.splits:
                raise ValueError(f"unknown split {split!r}; the server has {list(self.splits)}")
            wire["split"] = split
        elif index is not None:
            raise ValueError("reset option index needs a split (options={'split': ..., 'index': ...})")
        if index is not None:
            wire["index"] = index
        if spec is not None:
            wire["task_spec"] = spec
        if options:  # anything else goes on as before (an env that takes options reads it)
            wire["options"] = options
        if task_id is None and index is not None:
            found = self._entry(lambda entry: (entry.split, entry.index) == (split, index))
            task_id = found.task_id if found is not None else None
        return wire, None if task_id is None else str(task_id)

    def _entry(self, matches: Callable[[TaskEntry], bool]) -> TaskEntry | None:
        return next((entry for entry in self.entries() if matches(entry)), None)
