"""`HttpRoutes`: what a server answers over plain HTTP (``/health``, ``/schema``, ``/metadata``, the web
page, OpenEnv's HTTP API), the token and browser checks before them, and which paths go on to a
WebSocket handshake."""

from __future__ import annotations

import asyncio
import http
import json
import logging
import urllib.parse
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..errors import ProtocolError
from ..protocol.agents import AGENTS_PATH
from ..protocol.batch import BATCH_PATH
from ..protocol.harness_turns import HARNESS_PATH
from ..protocol.http_api import HTTP_ROUTES, WEBSOCKET_PATHS
from ..protocol.pickled import names_factories
from ..urls import is_loopback_host
from .harness_route import harness_refusal
from .http_api import DOCS_POLICY, StatelessRoutes, docs_page
from .http_mcp import HttpMcp
from .mcp_socket import is_mcp_socket
from .session import factory_error
from .task_api import TaskApi
from .watch import SESSIONS_PATH, WATCH_PATH, session_listing, watch_refusal
from .web_access import browser_refusal, cookie_name, has_token, login_response, single_header, token_refusal
from .web_page import is_web_path, web_response

if TYPE_CHECKING:
    from .env_server import EnvServer

__all__ = ["HttpRoutes", "json_response"]

logger = logging.getLogger(__name__)


def _response(status: int, content_type: str, payload: bytes) -> Response:
    headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(payload)))])
    return Response(status, http.HTTPStatus(status).phrase, headers, payload)


def json_response(status: int, body: Any) -> Response:
    """An HTTP response of ``status`` whose body is ``body`` as JSON."""
    return _response(status, "application/json", json.dumps(body).encode())


def _wrong_method(path: str, methods: tuple[str, ...]) -> Response:
    """405, with the methods ``path`` takes in ``Allow`` (as FastAPI answers)."""
    response = json_response(405, {"detail": "Method Not Allowed", "message": f"{path} takes {', '.join(methods)}"})
    response.headers["Allow"] = ", ".join(methods)
    return response


class HttpRoutes:
    """The HTTP side of ``server``'s one port: its :meth:`process_request` is websockets' hook, which
    answers a request or lets a WebSocket handshake go on.

    Args:
        server: the server whose env, sessions and options the routes describe.
        token: the server's token (``None``: the server needs none).
        mcp: the server's HTTP MCP sessions (``POST /mcp``).
    """

    def __init__(self, server: EnvServer, token: str | None, mcp: HttpMcp) -> None:
        self._server = server
        self._token = token
        self._mcp = mcp
        self._stateless = StatelessRoutes(server)
        self._tasks = TaskApi(server)

    async def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """Answer an HTTP request, or let a WebSocket handshake go on (``None``).

        A request the routes cannot read (a value they refuse, a header given twice...) is a 400
        and one line in the log: never websockets' 500 with a traceback, and never before the
        token check has refused a request without the token.
        """
        try:
            refusal = watch_refusal(request.path.partition("?")[0], connection, self._token is not None)
            response = (
                json_response(403, {"message": refusal})
                if refusal is not None
                else await self._route(request, getattr(connection, "request_body", b""))
            )
        except Exception as exc:
            path = request.path.partition("?")[0]  # the query may hold a token (the page's login)
            logger.warning("refused a malformed request for %s: %s: %s", path, type(exc).__name__, exc)
            detail = exc.message if isinstance(exc, ProtocolError) else "the server could not read it"
            response = json_response(400, {"detail": "Bad Request", "message": f"malformed request: {detail}"})
        if response is not None:  # an HTTP answer: websockets closes the connection after it
            response.headers["Connection"] = "close"
        return response

    def _is_agents_path(self, path: str) -> bool:
        """``/ws/agents``, on a server of a PettingZoo env (the only one that opens it)."""
        return path == AGENTS_PATH and self._server.served.agents is not None

    def _methods(self, path: str) -> tuple[str, ...] | None:
        """The methods ``path`` takes; ``None`` for a path that is no route."""
        if path in HTTP_ROUTES:
            return HTTP_ROUTES[path]
        if path in (*WEBSOCKET_PATHS, BATCH_PATH, WATCH_PATH, HARNESS_PATH) or self._is_agents_path(path):
            return ("GET",)  # a WebSocket handshake
        if path == SESSIONS_PATH or is_web_path(path):
            return ("GET",)
        return TaskApi.methods(path)

    async def _route(self, request: Request, body: bytes = b"") -> Response | None:
        server = self._server
        path, _, query = request.path.partition("?")
        if path == "/health":  # open: health probes carry no secrets, and it tells none
            return (
                json_response(200, {"status": "healthy"}) if request.method == "GET" else _wrong_method(path, ("GET",))
            )
        refusal = browser_refusal(request, is_loopback_host(server.host) and server.unix_socket is None)
        if refusal is not None:
            return refusal
        if self._token is not None:  # before any route: without the token, nothing but /health is told
            # The page's cookie opens what the page uses; pickled factories (code) need the header.
            cookie = None if names_factories(query) else cookie_name(single_header(request, "Host"))
            if path == "/web" and "token=" in query and server.web:  # the login: the token leaves the address bar
                login = login_response(query, self._token, cookie_name(single_header(request, "Host")))
                return login or json_response(401, {"message": "wrong token"})
            if not has_token(request, self._token, cookie):
                return json_response(401, {"message": token_refusal(request, cookie)})
        if is_mcp_socket(path, request):  # MCP over a WebSocket, beside POST /mcp (mcp_socket.py)
            return None
        methods = self._methods(path)
        if methods is not None and request.method not in methods:
            return _wrong_method(path, methods)
        if path.startswith("/web") and not server.web:
            return json_response(404, {"message": "the web page is off on this server; serve --web turns it on"})
        if path in ("/ws", BATCH_PATH, WATCH_PATH) or self._is_agents_path(path):
            return None  # go on with the WebSocket handshake
        if path == HARNESS_PATH:  # OpenEnv 0.10's turn-based harness socket (harness_route.py)
            harness = (await server.describe())["metadata"].get("harness")
            closed = harness_refusal(harness, server.options.harness_model_url)
            return None if closed is None else json_response(404, {"detail": "Not Found", "message": closed})
        if path == SESSIONS_PATH:
            now = asyncio.get_running_loop().time()
            return json_response(200, {"sessions": [session_listing(s, now) for s in server.sessions]})
        if is_web_path(path):  # the page's own files, after the routes under /web above
            return web_response(path, single_header(request, "Host"))
        if path in ("/schema", "/metadata"):
            try:
                description = await server.describe()
                if path == "/schema" and "vector_backend=" in query:
                    return await self._schema_with_backend(description["schema"], request.path)
            except Exception as exc:
                logger.exception("describing the environment failed")
                frame = factory_error(server.factory, exc, server.send_tracebacks)
                return json_response(500, frame.data())
            return json_response(200, description[path[1:]])
        if path == "/mcp":  # JSON-RPC: every answer is a 200, errors included, as OpenEnv's
            return json_response(200, await self._mcp.answer(body))
        if path == "/docs":
            status, document = await self._stateless.openapi()
            if status != 200:
                return json_response(status, document)
            response = _response(200, "text/html; charset=utf-8", docs_page(document))
            response.headers["Content-Security-Policy"] = DOCS_POLICY
            return response
        if TaskApi.methods(path) is not None:  # OpenEnv 0.10's Task API
            return json_response(*await self._tasks.answer(path, body))
        if path in HTTP_ROUTES:
            status, answer = await self._stateless.answer(request.method, path, body)
            response = json_response(status, answer)
            if status == 503:
                response.headers["Retry-After"] = "1"
            return response
        routes = "/ws, /health, /schema, /metadata, /reset, /step, /state, /mcp, /docs" + (
            " or /web" if server.web else ""
        )
        return json_response(404, {"detail": "Not Found", "message": f"no route {path}; try {routes}"})

    async def _schema_with_backend(self, schema: dict[str, Any], path: str) -> Response:
        """``/schema?vector_backend=NAME``: the schema with that backend described in full (EnvPool's
        spaces are found only when asked for, since importing EnvPool takes over a second)."""
        name = urllib.parse.parse_qs(path.partition("?")[2]).get("vector_backend", [""])[0]
        backends = self._server.served.vector_backends
        offered, unavailable = (
            dict(schema.get("vector_backends", {})),
            dict(schema.get("vector_backends_unavailable", {})),
        )
        if backends is not None and name in offered:
            try:
                offered[name] = await asyncio.to_thread(backends.describe_one, name)
            except Exception as exc:
                del offered[name]
                unavailable[name] = str(exc)
        return json_response(200, {**schema, "vector_backends": offered, "vector_backends_unavailable": unavailable})
