"""OpenEnv 0.10's Task API on a server of a task env: its routes (:class:`TaskApi`), and the task a
reset names by 0.10's ``split``, ``index`` and ``task_spec`` (:func:`task_reset_kwargs`).

The routes read the set of an env the server makes once, as ``/schema`` does, and closed at once
(what :class:`~openenv_gym.server.task_sets.TaskSet` holds as ``task_set``, with the splits its
operator closed, ``serve --task-splits``, already left out). A task is given by its public fields,
its split and its index there: never a hidden field (tests, answers, checks), which stays on the
server.

The env's name (``/list_environments``) is the short name of what the server serves: ``Coding-v0``
for ``openenv/Coding-v0``, ``attr`` for ``module:attr``; the factory's name for a server made in
Python (as 0.10 names its env by its class). It is matched in any case, as 0.10 matches it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.http_api import parse_body
from ..protocol.task_api import (
    TASK_API_OPERATIONS,
    GetTaskRangeRequest,
    GetTaskRequest,
    TaskApiRoute,
    split_type,
    task_api_route,
)
from ..startup import PICKLED_FACTORIES_TARGET
from .session import factory_error
from .task_sets import BaseTask, TaskSet, choice_error, unknown_task_error

if TYPE_CHECKING:
    from .env_server import EnvServer

__all__ = ["TASK_RESET_ARGUMENTS", "ServedTasks", "TaskApi", "task_env_name", "task_reset_kwargs"]

#: ``reset``'s keyword arguments by which 0.10's clients name a task.
TASK_RESET_ARGUMENTS = ("split", "index", "task_spec")

Answer = tuple[int, Any]  # an HTTP status and its JSON body


def task_env_name(target: str | None, factory: Any) -> str:
    """The env's name in the Task API's paths: the short name of the served ``target``, else the
    name of what ``factory`` makes (through a ``functools.partial`` or a wrapper).

    >>> task_env_name("openenv/Coding-v0", None), task_env_name("games:make", None)
    ('Coding-v0', 'make')
    >>> from openenv_gym.envs.echo import EchoEnvironment
    >>> task_env_name(None, functools.partial(EchoEnvironment))
    'EchoEnvironment'
    """
    if target is not None and target != PICKLED_FACTORIES_TARGET:
        return target.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    factory = inspect.unwrap(factory)
    while isinstance(factory, functools.partial):
        factory = inspect.unwrap(factory.func)
    return str(getattr(factory, "__name__", type(factory).__name__))


def public_task_spec(task: BaseTask, split: str, index: int) -> dict[str, Any]:
    """What the Task API gives of ``task``, the ``index``-th of ``split``: its public fields only."""
    model = type(task)  # its declared fields alone: a computed one may derive from a hidden one
    public = task.model_dump(mode="json", include=set(model.model_fields) - {*model.hidden_fields, "split"})
    return {
        "task_id": public.pop("task_id"),
        "difficulty": public.pop("difficulty"),
        "split": split,
        "index": index,
        **public,
    }


@dataclass(frozen=True)
class ServedTasks:
    """The tasks a server serves, split by split, each as the Task API gives it.

    Attributes:
        splits: each served split's task specs, in the order ``index`` counts.
        closed: the splits the operator closed (named in a refusal, their tasks never listed).
    """

    splits: dict[str, list[dict[str, Any]]]
    closed: tuple[str, ...]

    @classmethod
    def of(cls, task_set: TaskSet[Any]) -> ServedTasks:
        return cls(
            {
                name: [public_task_spec(task, name, index) for index, task in enumerate(tasks)]
                for name, tasks in task_set.splits.items()
            },
            tuple(task_set.closed_splits),
        )

    def split_refusal(self, split: str) -> str | None:
        """Why ``split`` is not served (``None``: it is). Split names are no secret; a closed one's ids are."""
        if split in self.closed:
            return f"split {split!r} is closed on this server (its operator's choice): it serves {', '.join(self.splits)} alone"
        if split not in self.splits:
            return str(choice_error("split", split, list(self.splits)))
        return None


class TaskApi:
    """The Task API's routes on ``server``: :meth:`answer` gives a route's status and JSON body."""

    def __init__(self, server: EnvServer) -> None:
        self._server = server
        self.env_name = task_env_name(server.target, server.served.factory)
        self._lock = asyncio.Lock()
        self._probed = False
        self._tasks: ServedTasks | None = None

    @staticmethod
    def methods(path: str) -> tuple[str, ...] | None:
        """The methods a Task API ``path`` takes; ``None`` for a path that is not one."""
        route = task_api_route(path)
        return None if route is None else (route.method,)

    async def answer(self, path: str, body: bytes) -> Answer:
        """Answer the Task API route ``path`` (its method checked), in the order 0.10's FastAPI does:
        the body's validation (422), the env's name (404), its task set (501), the split and index (400)."""
        route = task_api_route(path)
        assert route is not None, path
        if route.env_name is None:
            return 200, [self.env_name]
        _, request_model, _, provider_method = TASK_API_OPERATIONS[route.operation]
        request = None if request_model is None else parse_body(request_model, body, optional=False)
        if isinstance(request, list):
            return 422, {"detail": request}
        if route.env_name.lower() != self.env_name.lower():
            return 404, {
                "detail": f"unknown environment {route.env_name!r}",
                "message": f"this server serves {self.env_name!r} (GET /list_environments)",
            }
        try:
            tasks = await self._served_tasks()
        except Exception as exc:
            frame = factory_error(self._server.factory, exc, self._server.send_tracebacks)
            return 500, {"detail": "Internal Server Error", "message": frame.message}
        if tasks is None:
            return 501, {
                "detail": f"{provider_method} is not supported for this environment",
                "message": "the env has no task set",
            }
        return self._answer_from(route, request, tasks)

    def _answer_from(self, route: TaskApiRoute, request: Any, tasks: ServedTasks) -> Answer:
        if route.operation == "splits":
            return 200, [
                {"name": name, "type": split_type(name), "num_tasks": len(specs)}
                for name, specs in tasks.splits.items()
            ]
        refusal = tasks.split_refusal(request.split)
        if refusal is not None:
            return 400, {"detail": "Invalid split", "message": refusal}
        specs = tasks.splits[request.split]
        if route.operation == "tasks":
            return 200, {"tasks": specs, "env_name": self.env_name}
        if route.operation == "num_tasks":
            return 200, {"num_tasks": len(specs)}
        if isinstance(request, GetTaskRequest):
            if not 0 <= request.index < len(specs):
                return 400, {
                    "detail": "Invalid task index",
                    "message": f"index {request.index} is not a task of split {request.split!r}: "
                    f"expected an int in [0, {len(specs)})",
                }
            return 200, {"task": specs[request.index]}
        assert isinstance(request, GetTaskRangeRequest)
        return 200, {"tasks": specs[request.start : request.stop]}

    async def _served_tasks(self) -> ServedTasks | None:
        """The served env's tasks (``None``: it has no task set), read once from an env made for it."""
        async with self._lock:  # concurrent first requests share one env
            if not self._probed:
                if self._server.served.games is None:  # a seat in a game has no task set
                    env = await asyncio.to_thread(self._server.factory)
                    try:
                        task_set = getattr(env, "task_set", None)
                        self._tasks = ServedTasks.of(task_set) if isinstance(task_set, TaskSet) else None
                    finally:
                        await asyncio.to_thread(env.close)
                self._probed = True
        return self._tasks


def task_reset_kwargs(env: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``reset``'s keyword arguments with 0.10's ``split``, ``index`` and ``task_spec`` turned into
    the ``options`` a task env reads (:meth:`TaskSet.pick`); as they are for an env with no task set.

    ``task_spec`` names a task of the set by its ``task_id``; any other field it carries must be
    the served task's (as the Task API gave it): a client names a task, it never defines one, so
    tests and answers stay the server's.

    Raises:
        ValueError: the task they name is not one the env serves (a split its operator closed
            included: the reason is said), they name it twice (``task_spec`` beside ``split`` or
            ``index``, or beside ``options``), or a ``task_spec`` that is not one of the set's.
    """
    given = {name: kwargs[name] for name in TASK_RESET_ARGUMENTS if kwargs.get(name) is not None}
    task_set = getattr(env, "task_set", None)
    if not given or not isinstance(task_set, TaskSet):
        return kwargs
    rest = {name: value for name, value in kwargs.items() if name not in TASK_RESET_ARGUMENTS}
    if rest.get("options"):
        raise ValueError("reset names a task by options or by split, index and task_spec: not both")
    if "task_spec" in given:
        if len(given) > 1:
            raise ValueError("reset names a task by task_spec, or by split and index: not both")
        options: dict[str, Any] = {"task_id": _named_task(task_set, given["task_spec"]).task_id}
    else:
        options = given
    task_set.pick(options, random.Random(0))  # refuse here, with the reason, before the env resets
    return {**rest, "options": options}


def _named_task(task_set: TaskSet[Any], spec: Any) -> BaseTask:
    """The served task a ``task_spec`` names; refused unless every field it carries is that task's."""
    task_id = spec.get("task_id") if isinstance(spec, Mapping) else None
    if not isinstance(task_id, str):
        raise ValueError(
            "task_spec names a task of the env's set by its task_id (as the Task API gives it): "
            "a client cannot define a task of its own"
        )
    task = task_set.by_id.get(task_id)
    if task is None:
        raise unknown_task_error(task_id)
    split = task_set.split_of[task_id]
    served = public_task_spec(task, split, task_set.splits[split].index(task))
    for field, value in spec.items():
        if field in type(task).hidden_fields:
            raise ValueError(f"task_spec carries {field!r}, a field of the task only the server holds: leave it out")
        if field not in served or served[field] != value:
            raise ValueError(
                f"task_spec's {field!r} is not the served task's: a client names a task of the set, it cannot change one"
            )
    return task
