"""`TaskApiClient`: OpenEnv 0.10's Task API read from a server (``GET /list_environments``,
``GET /{env}/splits``, ``POST /{env}/tasks``, ``/num_tasks``, ``/task``, ``/task_range``).

The routes and request bodies are :mod:`openenv_gym.protocol.task_api`'s. The answers are read as
0.10 gives them: a split is ``{"name": ..., "type": ...}``, a task any JSON the env returns (0.10
leaves its form to the env); :meth:`TaskApiClient.entries` names each task (its ``id`` or
``task_id`` field when every task has a distinct one, else ``split/index``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ServerConnectError
from ..protocol.task_api import (
    LIST_ENVIRONMENTS_PATH,
    GetTaskRangeRequest,
    GetTaskRequest,
    ListTasksRequest,
    NumTasksRequest,
)
from ._http import DEFAULT_OPEN_TIMEOUT, http_get_json, http_post_json

__all__ = ["TaskApiClient", "TaskEntry", "task_api_of"]

#: What a server without the Task API answers its routes: 0.3 has no such route (404), a 0.10 env
#: without task methods answers 501, and a server that takes no POST closes (405 elsewhere).
_NOT_SERVED = frozenset({404, 405, 501})
#: The fields of a task spec that may name it, in order of preference.
_ID_FIELDS = ("task_id", "id")


@dataclass(frozen=True)
class TaskEntry:
    """One task of a Task API server: its name here, its difficulty (``"unknown"`` when the spec
    gives none), and where ``reset(split=, index=)`` finds it."""

    task_id: str
    difficulty: str
    split: str
    index: int


class TaskApiClient:
    """The Task API of the server at ``base_url``, for its env ``env_name`` (see :func:`task_api_of`)."""

    def __init__(
        self, base_url: str, env_name: str, timeout: float = DEFAULT_OPEN_TIMEOUT, token: str | None = None
    ) -> None:
        self.base_url = base_url
        self.env_name = env_name
        self.timeout = timeout
        self.token = token

    def __repr__(self) -> str:
        return f"TaskApiClient({self.base_url}, {self.env_name!r})"

    def _path(self, operation: str) -> str:
        return f"/{urllib.parse.quote(self.env_name, safe='')}/{operation}"

    def _post(self, operation: str, body: Mapping[str, Any], absent: frozenset[int] = frozenset()) -> Any:
        return http_post_json(self.base_url, self._path(operation), dict(body), self.timeout, self.token, absent=absent)

    def splits(self) -> list[str]:
        """The names of the splits, in the server's order.

        Raises:
            ServerConnectError: the server does not answer, or answers an error or no list of splits.
        """
        answer = http_get_json(self.base_url, self._path("splits"), self.timeout, self.token)
        if not isinstance(answer, list):
            raise ServerConnectError(self.base_url, f"/splits answered {type(answer).__name__}, not a list")
        return [str(split["name"]) if isinstance(split, Mapping) else str(split) for split in answer]

    def tasks(self, split: str) -> list[Any]:
        """``POST /{env}/tasks``: the split's task specs (an env may list only a preview of a large one)."""
        return list(self._post("tasks", ListTasksRequest(split=split).model_dump())["tasks"])

    def num_tasks(self, split: str) -> int:
        """``POST /{env}/num_tasks``: how many tasks the split has."""
        return int(self._post("num_tasks", NumTasksRequest(split=split).model_dump())["num_tasks"])

    def task(self, split: str, index: int) -> Any:
        """``POST /{env}/task``: the split's task at ``index`` (a 400 for an index out of range)."""
        return self._post("task", GetTaskRequest(split=split, index=index).model_dump())["task"]

    def task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        """``POST /{env}/task_range``: the split's tasks in ``[start, stop)``."""
        body = GetTaskRangeRequest(split=split, start=start, stop=stop).model_dump()
        return list(self._post("task_range", body)["tasks"])

    def specs(self) -> dict[str, list[Any]]:
        """Every split's every task spec: ``task_range`` over its ``num_tasks`` (``tasks`` may be a
        preview), or ``tasks`` where the env has no ``get_task_range`` (a 501)."""
        return {split: self._whole_split(split) for split in self.splits()}

    def _whole_split(self, split: str) -> list[Any]:
        body = GetTaskRangeRequest(split=split, start=0, stop=self.num_tasks(split)).model_dump()
        answer = self._post("task_range", body, absent=_NOT_SERVED)
        return self.tasks(split) if answer is None else list(answer["tasks"])

    def entries(self) -> list[TaskEntry]:
        """Every task, split by split in the server's order, named (see the module's doc)."""
        specs = self.specs()
        located = [(split, index, spec) for split, tasks in specs.items() for index, spec in enumerate(tasks)]
        names = [_spec_id(spec) for _, _, spec in located]
        named = all(name is not None for name in names) and len(set(names)) == len(names)
        return [
            TaskEntry(
                name if named and name is not None else f"{split}/{index}",
                _spec_difficulty(spec),
                split,
                index,
            )
            for (split, index, spec), name in zip(located, names)
        ]


def task_api_of(base_url: str, timeout: float = DEFAULT_OPEN_TIMEOUT, token: str | None = None) -> TaskApiClient | None:
    """The Task API of the server at ``base_url``, or ``None`` where it serves none (an OpenEnv 0.3
    server, a 0.10 env without task methods): ``GET /list_environments``, then its env's splits.

    Raises:
        ServerConnectError: the server does not answer, or answers another error.
    """
    names = http_get_json(base_url, LIST_ENVIRONMENTS_PATH, timeout, token, absent=_NOT_SERVED)
    if not isinstance(names, list) or len(names) != 1 or not isinstance(names[0], str):
        return None  # none served, or several: which one a session plays is not said
    client = TaskApiClient(base_url, names[0], timeout, token)
    if http_get_json(base_url, client._path("splits"), timeout, token, absent=_NOT_SERVED) is None:
        return None
    return client


def _spec_id(spec: Any) -> str | None:
    if isinstance(spec, Mapping):
        for field in _ID_FIELDS:
            value = spec.get(field)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
                return str(value)
    return None


def _spec_difficulty(spec: Any) -> str:
    value = spec.get("difficulty") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else "unknown"
