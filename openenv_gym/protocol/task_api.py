"""OpenEnv's Task API (``openenv`` 0.10) on the wire: its routes, the bodies of its requests and of
their answers as pydantic models, and the OpenAPI paths that describe them.

A server whose env has a task set answers it::

    GET  /list_environments          ["Coding-v0"]
    GET  /{env_name}/splits          [{"name": "train", "type": "train", "num_tasks": 20}, ...]
    POST /{env_name}/tasks           {"split": "test"}            -> {"tasks": [...], "env_name": ...}
    POST /{env_name}/num_tasks       {"split": "test"}            -> {"num_tasks": 6}
    POST /{env_name}/task            {"split": "test", "index": 2} -> {"task": {...}}
    POST /{env_name}/task_range      {"split": "test", "start": 0, "stop": 3} -> {"tasks": [...]}

``env_name`` is matched case-insensitively, as 0.10's server does. Its status codes are 0.10's: 404
for another env's name, 501 where the env has no task set, 400 for an index (or a split) the set
does not serve, 422 for a body that does not validate (FastAPI's ``{"detail": [...]}``).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "LIST_ENVIRONMENTS_PATH",
    "TASK_API_OPERATIONS",
    "GetTaskRangeRequest",
    "GetTaskRequest",
    "ListTasksRequest",
    "NumTasksRequest",
    "TaskApiRoute",
    "split_type",
    "task_api_openapi",
    "task_api_route",
]

LIST_ENVIRONMENTS_PATH = "/list_environments"


class _TaskApiRequest(BaseModel):
    # As 0.10's BaseMessage: a field it does not know is a 422, not silently dropped.
    model_config = ConfigDict(extra="forbid")

    split: str = Field(description="Task split name")


class ListTasksRequest(_TaskApiRequest):
    """The body of ``POST /{env_name}/tasks``."""


class NumTasksRequest(_TaskApiRequest):
    """The body of ``POST /{env_name}/num_tasks``."""


class GetTaskRequest(_TaskApiRequest):
    """The body of ``POST /{env_name}/task``."""

    index: int = Field(description="Task index within the split")


class GetTaskRangeRequest(_TaskApiRequest):
    """The body of ``POST /{env_name}/task_range``: Python slice bounds."""

    start: int | None = Field(default=None, description="Inclusive start index")
    stop: int | None = Field(default=None, description="Exclusive stop index")


class SplitDescriptor(BaseModel):
    """One split, as ``GET /{env_name}/splits`` lists it (0.10's ``{"name", "type"}``, and its size)."""

    name: str
    type: str = Field(description="train, validation or test")
    num_tasks: int = Field(description="How many tasks the split serves")


class TaskSpec(BaseModel):
    """A task as the Task API gives it: its public fields only (never a hidden one, such as its
    tests or answer), its split and its index there (what ``reset(split=, index=)`` takes)."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    difficulty: str
    split: str
    index: int


class ListTasksResponse(BaseModel):
    tasks: list[TaskSpec]
    env_name: str


class NumTasksResponse(BaseModel):
    num_tasks: int


class GetTaskResponse(BaseModel):
    task: TaskSpec


class GetTaskRangeResponse(BaseModel):
    tasks: list[TaskSpec]


#: Each operation under ``/{env_name}/``: its method, request model, answer model and the
#: ``TaskProvider`` method 0.10 names in its 501 (``"list_splits is not supported ..."``).
TASK_API_OPERATIONS: dict[str, tuple[str, type[BaseModel] | None, type[BaseModel], str]] = {
    "splits": ("GET", None, SplitDescriptor, "list_splits"),
    "tasks": ("POST", ListTasksRequest, ListTasksResponse, "list_tasks"),
    "num_tasks": ("POST", NumTasksRequest, NumTasksResponse, "num_tasks"),
    "task": ("POST", GetTaskRequest, GetTaskResponse, "get_task"),
    "task_range": ("POST", GetTaskRangeRequest, GetTaskRangeResponse, "get_task_range"),
}


class TaskApiRoute(BaseModel):
    """A path of the Task API: ``operation`` (``"list_environments"`` or one of
    :data:`TASK_API_OPERATIONS`) and the env name it names (``None`` for ``/list_environments``)."""

    operation: str
    env_name: str | None = None

    @property
    def method(self) -> str:
        return "GET" if self.env_name is None else TASK_API_OPERATIONS[self.operation][0]


def task_api_route(path: str) -> TaskApiRoute | None:
    """The Task API route ``path`` (without its query) is, or ``None``.

    >>> task_api_route("/Coding-v0/task_range")
    TaskApiRoute(operation='task_range', env_name='Coding-v0')
    >>> task_api_route("/list_environments").operation, task_api_route("/ws")
    ('list_environments', None)
    """
    if path == LIST_ENVIRONMENTS_PATH:
        return TaskApiRoute(operation="list_environments")
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "" and parts[1] and parts[2] in TASK_API_OPERATIONS:
        return TaskApiRoute(operation=parts[2], env_name=urllib.parse.unquote(parts[1]))
    return None


def split_type(name: str) -> str:
    """A split's type as 0.10 normalizes a split given by name: its name when that is train,
    validation or test, else validation."""
    return name if name in ("train", "validation", "test") else "validation"


_SUMMARIES = {
    "splits": "The splits the env serves, each with its type and size",
    "tasks": "Every task of a split",
    "num_tasks": "How many tasks a split has",
    "task": "One task of a split, by its index there",
    "task_range": "The tasks of a split in [start, stop), as a Python slice",
}


def task_api_openapi(ref_template: str) -> tuple[dict[str, Any], list[type[BaseModel]]]:
    """The OpenAPI paths of the Task API, and the models they reference (by ``ref_template``; their
    errors reference an ``ErrorResponse`` the caller defines)."""

    def ref(name: str) -> dict[str, str]:
        return {"$ref": ref_template.format(model=name)}

    described = {
        400: "The split, or the index in it, is not one the set serves",
        404: "No environment of that name on this server",
        422: "The body does not validate",
        501: "The environment has no task set",
    }

    def answers(ok: dict[str, Any], *errors: int) -> dict[str, Any]:
        error = {"content": {"application/json": {"schema": ref("ErrorResponse")}}}
        return {
            "200": {"description": "OK", "content": {"application/json": {"schema": ok}}},
            **{str(status): {"description": described[status], **error} for status in errors},
        }

    env_name = {
        "name": "env_name",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": "The env's name, as /list_environments gives it (in any case)",
    }
    paths: dict[str, Any] = {
        LIST_ENVIRONMENTS_PATH: {
            "get": {
                "tags": ["Task API"],
                "summary": "The name of the environment this server serves, in a list",
                "operationId": "list_environments",
                "responses": answers({"type": "array", "items": {"type": "string"}}),
            }
        }
    }
    models: list[type[BaseModel]] = [TaskSpec]
    for operation, (method, request, answer, name) in TASK_API_OPERATIONS.items():
        operation_document: dict[str, Any] = {
            "tags": ["Task API"],
            "summary": _SUMMARIES[operation],
            "operationId": name,
            "parameters": [env_name],
        }
        if request is None:
            operation_document["responses"] = answers({"type": "array", "items": ref(answer.__name__)}, 404, 501)
        else:
            operation_document["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref(request.__name__)}},
            }
            operation_document["responses"] = answers(ref(answer.__name__), 400, 404, 422, 501)
            models.append(request)
        models.append(answer)
        paths[f"/{{env_name}}/{operation}"] = {method.lower(): operation_document}
    return paths, models
