"""`StatelessRoutes`: OpenEnv's HTTP API on a server: ``POST /reset``, ``POST /step``, ``GET /state``,
``GET /openapi.json`` and the ``/docs`` page that renders it.

As OpenEnv's HTTP server does, each request makes a fresh environment, resets or steps it once and
closes it (an episode that lasts is a ``/ws`` session). Each such environment holds one of the
server's session slots while it lives, so the HTTP routes and the WebSocket share one limit; past it
a request gets 503 with ``Retry-After``.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pydantic

from ..protocol.http_api import ResetRequest, StepRequest, openapi_document, parse_body, response_body
from .seeding import refuse_unseedable
from .session import _accepted_kwargs, factory_error
from .task_api import task_reset_kwargs
from .worker import Worker

if TYPE_CHECKING:
    from .env_server import EnvServer
    from .environment import Environment

__all__ = ["DOCS_POLICY", "StatelessRoutes", "docs_page"]

logger = logging.getLogger(__name__)

#: What a 409 says of a step: why a fresh environment may refuse it, and where an episode lasts.
STATELESS_STEP = (
    "POST /step steps a fresh environment, as OpenEnv's HTTP API does, so an env that must be reset "
    "first cannot step there: play an episode on a WebSocket session (/ws)"
)

Answer = tuple[int, Any]  # an HTTP status and its JSON body


class StatelessRoutes:
    """The stateless routes of ``server``; :meth:`answer` gives a route's status and JSON body."""

    def __init__(self, server: EnvServer) -> None:
        self._server = server

    async def answer(self, method: str, path: str, body: bytes) -> Answer:
        """Answer ``method path`` (a route of :data:`~openenv_gym.protocol.http_api.HTTP_ROUTES`
        this class serves, with its method checked)."""
        if path == "/openapi.json":
            return await self.openapi()
        if self._server.served.games is not None:
            return 404, {
                "detail": "Not Found",
                "message": f"{path}: a multi-agent env has no stateless HTTP routes; play it on /ws or /ws/agents",
            }
        if path == "/reset":
            request = parse_body(ResetRequest, body, optional=True)
            if isinstance(request, list):
                return 422, {"detail": request}
            kwargs = request.model_dump(exclude_unset=True)
            return await self._with_env(lambda env, worker: self._reset(env, worker, kwargs))
        if path == "/step":
            request = parse_body(StepRequest, body, optional=False)
            if isinstance(request, list):
                return 422, {"detail": request}
            assert isinstance(request, StepRequest)
            action, kwargs = request.action, request.model_dump(exclude_unset=True, exclude={"action"})
            return await self._with_env(lambda env, worker: self._step(env, worker, action, kwargs))
        assert path == "/state", path
        return await self._with_env(self._state)

    async def _with_env(self, use: Callable[[Environment[Any, Any, Any], Worker], Awaitable[Answer]]) -> Answer:
        """``use`` a fresh environment that holds a session slot, and close it; it is made, called and
        closed in one thread of its own (a ``Worker``), as a session's is."""
        server = self._server
        async with server.stateless_slot() as held:
            if not held:
                return 503, {
                    "detail": f"Server at capacity: {server.active_sessions}/{server.max_sessions} sessions active",
                    "message": "every session slot is taken: try again later",
                    "active_sessions": server.active_sessions,
                    "max_sessions": server.max_sessions,
                }
            worker = Worker()
            try:
                env = await worker.call(True, server.factory)
            except Exception as exc:
                worker.shutdown()
                logger.exception("making an environment for an HTTP request failed")
                frame = factory_error(server.factory, exc, server.send_tracebacks)
                return 500, {"detail": "Internal Server Error", "message": frame.message, **frame.details}
            try:
                return await use(env, worker)
            finally:
                await worker.close_env(env)
                worker.shutdown()

    async def _reset(self, env: Environment[Any, Any, Any], worker: Worker, kwargs: dict[str, Any]) -> Answer:
        try:  # OpenEnv 0.10's split, index and task_spec: a task the env does not serve is the client's error
            refuse_unseedable(env.reset, kwargs)  # a seed it cannot take is not dropped (server/seeding.py)
            kwargs = task_reset_kwargs(env, kwargs)
        except ValueError as exc:
            return 400, {"detail": "Bad Request", "message": f"reset refused: {exc}"}
        try:
            observation = await worker.call(True, env.reset, **_accepted_kwargs(env.reset, kwargs))
            frame = env.reset_frame(observation)
        except (ValueError, TypeError) as exc:
            if not kwargs:  # nothing of the client's to refuse: the env failed
                return self._failed("reset", exc, "")
            # The arguments the client gave, refused (an unknown task_id, options of the wrong type).
            logger.info("HTTP reset refused its arguments: %s: %s", type(exc).__name__, exc)
            return 400, {"detail": "Bad Request", "message": f"reset refused: {type(exc).__name__}: {exc}"}
        except Exception as exc:
            return self._failed("reset", exc, "")
        return 200, response_body(frame.observation, frame.reward, frame.done)

    async def _step(
        self, env: Environment[Any, Any, Any], worker: Worker, action: dict[str, Any], kwargs: dict[str, Any]
    ) -> Answer:
        if env.tools and action.get("type") in ("call_tool", "list_tools"):  # a session's, never a fresh env's
            return _conflict(f"a tool env's calls run after its reset; {STATELESS_STEP}, or POST /mcp")
        try:
            parsed = env.parse_action(action)
        except pydantic.ValidationError as exc:
            return 422, {"detail": json.loads(exc.json())}  # as OpenEnv's: loc within the action, with urls
        except Exception as exc:  # a Gymnasium env's action that does not fit its space
            return 422, {"detail": [{"type": "value_error", "loc": [], "msg": str(exc), "input": action}]}
        try:
            observation = await worker.call(True, env.step, parsed, **_accepted_kwargs(env.step, kwargs))
            frame = env.observation_frame(observation)
        except Exception as exc:  # the client stepped an env nobody reset: its error, not the server's
            logger.info("HTTP step of a fresh environment refused: %s: %s", type(exc).__name__, exc)
            return _conflict(f"step failed: {type(exc).__name__}: {exc}; {STATELESS_STEP}")
        return 200, response_body(frame.observation, frame.reward, frame.done)

    async def _state(self, env: Environment[Any, Any, Any], worker: Worker) -> Answer:
        try:
            return 200, await worker.call(True, env.state_data)
        except Exception as exc:
            return self._failed("state", exc, "")

    def _failed(self, call: str, exc: Exception, hint: str) -> Answer:
        logger.warning("HTTP %s failed: %s: %s", call, type(exc).__name__, exc)
        return 500, {"detail": "Internal Server Error", "message": f"{call} failed: {type(exc).__name__}: {exc}{hint}"}

    async def openapi(self) -> Answer:
        """``/openapi.json``'s status and document."""
        from .. import __version__

        try:
            description = await self._server.describe()
        except Exception as exc:
            frame = factory_error(self._server.factory, exc, self._server.send_tracebacks)
            return 500, {"detail": "Internal Server Error", "message": frame.message}
        return 200, openapi_document(description["schema"], description["metadata"], __version__)


def _conflict(message: str) -> Answer:
    """409 Conflict: the request needs an env in a state a fresh one is not in (reset)."""
    return 409, {"detail": "Conflict", "message": message}


#: The /docs page runs no script and loads nothing: its own styles only.
DOCS_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def docs_page(document: dict[str, Any]) -> bytes:
    """The ``/docs`` page: the OpenAPI ``document`` rendered as HTML on the server (no script, no CDN):
    each route's method, summary, request body and answers, their schemas in full below."""
    info = document["info"]
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>{html.escape(info['title'])}</title>",
        "<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
        "code,pre{font:13px ui-monospace,monospace}pre{background:#f4f4f4;padding:.6rem;overflow:auto}"
        ".m{display:inline-block;min-width:3.5rem;font-weight:bold}</style></head><body>",
        f"<h1>{html.escape(info['title'])}</h1><p>{html.escape(info.get('description', ''))}</p>",
        f"<p>Version {html.escape(info['version'])}; the machine-readable form: <a href=openapi.json><code>/openapi.json</code></a>.</p>",
        "<h2>Routes</h2>",
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            parts.append(
                f"<h3><span class=m>{method.upper()}</span> <code>{html.escape(path)}</code></h3>"
                f"<p>{html.escape(operation.get('summary', ''))}</p>"
            )
            body = operation.get("requestBody")
            if body is not None:
                schema = body["content"]["application/json"]["schema"]
                needed = "required" if body.get("required") else "optional"
                parts.append(f"<p>Body ({needed}): {_schema_name(schema)}</p>")
            answers = "".join(
                f"<li><code>{status}</code> {html.escape(answer['description'])}"
                + (f": {_schema_name(answer['content']['application/json']['schema'])}" if "content" in answer else "")
                + "</li>"
                for status, answer in operation["responses"].items()
            )
            parts.append(f"<ul>{answers}</ul>")
    parts.append("<h2>Schemas</h2>")
    for name, schema in document["components"]["schemas"].items():
        text = html.escape(json.dumps(schema, indent=2))
        parts.append(f"<h3 id={html.escape(name, quote=True)}>{html.escape(name)}</h3><pre>{text}</pre>")
    parts.append("</body></html>")
    return "".join(parts).encode()


def _schema_name(schema: dict[str, Any]) -> str:
    reference = schema.get("$ref")
    if reference is None:
        return "<code>JSON object</code>"
    name = html.escape(reference.rsplit("/", 1)[-1])
    return f"<a href=#{name}><code>{name}</code></a>"
