"""OpenEnv's HTTP API, as openenv-core 0.3's server answers it: the bodies of ``POST /reset`` and
``/step`` and of their answers as pydantic models, the routes and the methods each takes, the errors
(FastAPI's ``{"detail": ...}``), and the OpenAPI document that describes them.

Each request is stateless, as OpenEnv defines it: the server makes an environment for it, resets or
steps it once, and closes it. An episode that lasts is a WebSocket session (``/ws``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import models_json_schema

from .frames import observation_fields
from .task_api import task_api_openapi

__all__ = [
    "HTTP_ROUTES",
    "WEBSOCKET_PATHS",
    "HealthResponse",
    "ObservationResponse",
    "ResetRequest",
    "StepRequest",
    "body_errors",
    "openapi_document",
    "parse_body",
    "response_body",
]


class ResetRequest(BaseModel):
    """The body of ``POST /reset`` (optional): ``reset``'s keyword arguments, unknown ones passed on."""

    model_config = ConfigDict(extra="allow")

    seed: int | None = Field(default=None, ge=0, description="Seed of the episode's randomness")
    episode_id: str | None = Field(default=None, max_length=255, description="An id for the episode")


class StepRequest(BaseModel):
    """The body of ``POST /step``: the action (the env's action model as JSON), and keyword arguments
    of ``step``, unknown ones passed on."""

    model_config = ConfigDict(extra="allow")

    action: dict[str, Any] = Field(description="The action, as the env's action schema (/schema) says")
    timeout_s: float | None = Field(default=None, gt=0, description="Seconds the step may take")
    request_id: str | None = Field(default=None, max_length=255, description="An id for the request")


class ObservationResponse(BaseModel):
    """What ``POST /reset`` and ``/step`` answer: the observation's fields, its reward and whether the
    episode is done (OpenEnv's ``ResetResponse`` and ``StepResponse``)."""

    model_config = ConfigDict(extra="forbid")

    observation: dict[str, Any] = Field(description="The observation's fields, as the env's observation schema says")
    reward: float | None = Field(default=None, description="The step's reward; null when there is none")
    done: bool = Field(default=False, description="Whether the episode has ended")


class HealthResponse(BaseModel):
    """What ``GET /health`` answers."""

    status: str = "healthy"


class ErrorResponse(BaseModel):
    """What a refused request gets: FastAPI's ``detail``, and a sentence saying what to do."""

    detail: Any = Field(description="FastAPI's detail: a short reason, or the list of validation errors")
    message: str | None = Field(default=None, description="What went wrong and what to do instead")


#: The HTTP routes, each with the methods it takes (a request with another gets 405 and ``Allow``).
HTTP_ROUTES: dict[str, tuple[str, ...]] = {
    "/reset": ("POST",),
    "/step": ("POST",),
    "/mcp": ("POST",),
    "/state": ("GET",),
    "/health": ("GET",),
    "/schema": ("GET",),
    "/metadata": ("GET",),
    "/openapi.json": ("GET",),
    "/docs": ("GET",),
}
#: Paths only a WebSocket handshake (a GET) opens.
WEBSOCKET_PATHS = ("/ws",)


def body_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """A request body's validation errors as FastAPI lists them: ``loc`` from ``"body"``, no ``url``.

    Example:
        >>> try:
        ...     StepRequest.model_validate({})
        ... except ValidationError as exc:
        ...     body_errors(exc)
        [{'type': 'missing', 'loc': ['body', 'action'], 'msg': 'Field required', 'input': {}}]
    """
    errors = json.loads(exc.json(include_url=False))  # JSON-safe: a ctx's exception becomes its text
    return [{**error, "loc": ["body", *error["loc"]]} for error in errors]


def parse_body(model: type[BaseModel], body: bytes, *, optional: bool) -> BaseModel | list[dict[str, Any]]:
    """The request ``model`` that ``body`` holds, or FastAPI's validation errors for it.

    Any content type is read as JSON (curl's ``-d`` sends a form type). An ``optional`` body that is
    empty is the model's defaults, as ``POST /reset``'s is.

    Example:
        >>> parse_body(ResetRequest, b'{"seed": 3}', optional=True)
        ResetRequest(seed=3, episode_id=None)
        >>> parse_body(ResetRequest, b'{"seed":', optional=True)[0]["type"]
        'json_invalid'
    """
    if not body.strip():
        if optional:
            return model()
        return [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = exc.pos if isinstance(exc, json.JSONDecodeError) else exc.start
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.reason
        return [
            {
                "type": "json_invalid",
                "loc": ["body", where],
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": reason},
            }
        ]
    if data is None and optional:
        data = {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return body_errors(exc)


def response_body(observation: dict[str, Any], reward: Any, done: bool) -> dict[str, Any]:
    """What ``/reset`` and ``/step`` answer for a frame's observation, reward and flag: OpenEnv's
    metadata is dropped from the observation (openenv-core's ``serialize_observation`` drops it) and
    a reward is a float.

    Example:
        >>> response_body({"x": 1, "metadata": {"k": 2}}, True, False)
        {'observation': {'x': 1}, 'reward': 1.0, 'done': False}
    """
    return {
        "observation": observation_fields(observation),
        "reward": None if reward is None else float(reward),
        "done": bool(done),
    }


# OpenAPI ---------------------------------------------------------------------------------------

_REF = "#/components/schemas/{model}"
_JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _hoisted(schema: dict[str, Any], name: str, schemas: dict[str, Any]) -> None:
    """Put an env's JSON schema into ``schemas`` as ``name``, its ``$defs`` beside it (prefixed by
    ``name``), with every ``#/$defs/X`` reference pointing there."""
    schema = copy.deepcopy(schema)
    definitions = schema.pop("$defs", {})

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: (
                    _REF.format(model=name + value.removeprefix("#/$defs/"))
                    if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/")
                    else rewrite(value)
                )
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    for definition, body in definitions.items():
        schemas[name + definition] = rewrite(body)
    schemas[name] = rewrite(schema)


def _responses(ok: dict[str, Any], *errors: int) -> dict[str, Any]:
    described = {
        "400": "The request cannot be read, or the env refuses its arguments (an unknown task, a closed split)",
        "401": "The server's token is missing or wrong",
        "409": "A fresh environment (one is made for each request) cannot take this step: it needs a reset first",
        "422": "The body, or the action in it, does not validate",
        "500": "The environment failed",
        "503": "The server is at its limit of sessions; try again later",
    }
    responses = {"200": ok}
    for status in errors:
        responses[str(status)] = {
            "description": described[str(status)],
            "content": {_JSON: {"schema": _ref("ErrorResponse")}},
        }
    return responses


def openapi_document(env_schema: dict[str, Any], metadata: dict[str, Any], version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of a server's HTTP routes: the request and answer models above, with
    the env's own action, observation and state schemas (its ``/schema``) in their place.

    Args:
        env_schema: the server's ``/schema`` (``action``, ``observation`` and ``state`` JSON schemas).
        metadata: the server's ``/metadata`` (its name and description title the document).
        version: the version of the API's implementation.
    """
    models: list[type[BaseModel]] = [ResetRequest, StepRequest, ObservationResponse, HealthResponse, ErrorResponse]
    _, generated = models_json_schema([(model, "validation") for model in models], ref_template=_REF)
    schemas: dict[str, Any] = dict(generated.get("$defs", {}))
    for part, name in (("action", "Action"), ("observation", "Observation"), ("state", "State")):
        _hoisted(env_schema.get(part) or {"type": "object"}, name, schemas)
    schemas["StepRequest"]["properties"]["action"] = {**_ref("Action"), "description": "The env's action"}
    free_form = {"type": "object", "additionalProperties": True}

    def json_body(schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"description": description, "content": {_JSON: {"schema": schema}}}

    paths = {
        "/reset": {
            "post": {
                "tags": ["Environment Control"],
                "summary": "Reset a fresh environment and return its first observation",
                "operationId": "reset",
                "requestBody": {"required": False, "content": {_JSON: {"schema": _ref("ResetRequest")}}},
                "responses": _responses(
                    json_body(_ref("ObservationResponse"), "The first observation"), 400, 422, 500, 503
                ),
            }
        },
        "/step": {
            "post": {
                "tags": ["Environment Control"],
                "summary": "Step a fresh environment once (an episode that lasts is a /ws session)",
                "operationId": "step",
                "requestBody": {"required": True, "content": {_JSON: {"schema": _ref("StepRequest")}}},
                "responses": _responses(
                    json_body(_ref("ObservationResponse"), "The step's result"), 409, 422, 500, 503
                ),
            }
        },
        "/mcp": {
            "post": {
                "tags": ["MCP"],
                "summary": "MCP's JSON-RPC: tools/list and tools/call on a fresh environment, or in a session "
                "(openenv/session/create, a session_id in the params, openenv/session/close)",
                "operationId": "mcp",
                "requestBody": {"required": True, "content": {_JSON: {"schema": free_form}}},
                "responses": {"200": json_body(free_form, "The JSON-RPC response, an error included")},
            }
        },
        "/state": {
            "get": {
                "tags": ["State Management"],
                "summary": "The state of a fresh environment",
                "operationId": "state",
                "responses": _responses(json_body(_ref("State"), "The environment's state"), 500, 503),
            }
        },
        "/metadata": {
            "get": {
                "tags": ["Environment Info"],
                "summary": "What the server serves: the env's name and description, the server's limits",
                "operationId": "metadata",
                "responses": _responses(json_body(free_form, "The environment's metadata"), 500),
            }
        },
        "/schema": {
            "get": {
                "tags": ["Schema"],
                "summary": "The env's action, observation and state JSON schemas, its spaces and tools",
                "operationId": "schema",
                "responses": _responses(json_body(free_form, "The schemas"), 500),
            }
        },
        "/health": {
            "get": {
                "tags": ["Health"],
                "summary": "Whether the server answers (no token needed)",
                "operationId": "health",
                "responses": _responses(json_body(_ref("HealthResponse"), "The server answers")),
            }
        },
    }
    if "tasks" in env_schema:  # a task env's server answers OpenEnv 0.10's Task API
        task_paths, task_models = task_api_openapi(_REF)
        paths.update(task_paths)
        schemas.update(
            models_json_schema([(model, "validation") for model in task_models], ref_template=_REF)[1]["$defs"]
        )
    name = str(metadata.get("target") or metadata.get("name") or "environment")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"{name}: OpenEnv Environment HTTP API",
            "version": version,
            "description": (
                f"{metadata.get('description') or name}. Each HTTP request makes a fresh environment, "
                "as OpenEnv's HTTP API does; an episode that lasts is a WebSocket session at /ws."
            ),
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
