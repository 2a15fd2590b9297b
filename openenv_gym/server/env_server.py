"""`EnvServer`: the WebSocket ``/ws`` endpoint and ``/health``, ``/schema``, ``/metadata`` on one port."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import secrets
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve, unix_serve

from ..errors import ProtocolError
from ..protocol import ErrorCode, ErrorFrame
from ..protocol.agents import AGENTS_PATH, parse_agents_query
from ..protocol.batch import BATCH_PATH, BINARY_SUBPROTOCOL, parse_batch_query
from ..protocol.harness_turns import HARNESS_PATH
from ..protocol.pickled import check_pickles_allowed, wants_pickled_factories
from ..protocol.vector import VECTOR_BACKENDS
from ..redaction import RedactingLogger
from ..startup import SNAPSHOT_KEY_ENV_VAR
from ..urls import unix_url
from .attached_session import attached_handler
from .batch_session import BatchHandler
from .connections import ConnectionLimit, default_max_connections
from .environment import Environment
from .exposure import INSECURE_WARNING
from .harness_route import TurnHarness, serve_harness_socket
from .http_bodies import BodyReadingConnection
from .http_mcp import HttpMcp
from .http_routes import HttpRoutes
from .idle_reaper import IdleReaper
from .mcp_socket import MCP_SOCKET_PATH, serve_mcp_socket
from .options import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_SEND_TIMEOUT,
    ServerOptions,
)
from .pickled_factories import PickledBatchHandler
from .plain_session import PlainHandler
from .served_env import ServedEnv
from .session import Session, SessionHandler
from .session_slots import SessionSlots
from .shutdown import close_server
from .snapshots import SnapshotStore
from .task_sets import serving_splits
from .watch import MAX_WATCHERS, WATCH_PATH, Watcher, parse_watch_query, session_listing
from .web_access import bearer_token_matches

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_SEND_TIMEOUT",
    "EnvServer",
    "ServerOptions",
    "bearer_token_matches",
]

logger = logging.getLogger(__name__)

# Frames received and not yet read, per connection: strict request/response needs few.
MAX_QUEUE = 2
# Bytes of replies buffered per connection before a send waits (websockets' default, 32 KiB).
WRITE_LIMIT = 2**15
# Close codes (RFC 6455): 1008 policy violation, 1011 internal error, 1013 try again later (the
# idle reaper's 1001, going away, is in idle_reaper.py).
CLOSE_BAD_REQUEST = 1008
CLOSE_FACTORY_FAILED = 1011
CLOSE_AT_CAPACITY = 1013


def _select_subprotocol(connection: ServerConnection, offered: Sequence[str]) -> str | None:
    """Accept the binary batch codec when offered; every client may also offer nothing (JSON)."""
    return BINARY_SUBPROTOCOL if BINARY_SUBPROTOCOL in offered else None


class EnvServer:
    """Serve an environment factory over OpenEnv's wire protocol.

    Each WebSocket connection to ``/ws`` is a session with its own environment instance. The
    same port answers ``GET /health``, ``GET /schema`` and ``GET /metadata``, and OpenEnv's HTTP
    API: ``POST /reset``, ``/step`` and ``/mcp``, ``GET /state``, ``/openapi.json`` and ``/docs``
    (:mod:`~openenv_gym.server.http_api`, :mod:`~openenv_gym.server.http_mcp`).

    Args:
        factory: makes one environment per session (an ``Environment`` subclass or any callable),
            or a :class:`~openenv_gym.server.served_env.ServedEnv` saying what it allows.
        options: every option below at once, as a :class:`~openenv_gym.server.options.ServerOptions`;
            keyword arguments replace its fields.
        **option_values: :class:`~openenv_gym.server.options.ServerOptions`' fields, one by one.

    Keyword Args:
        host (str): the address to bind; loopback unless told otherwise.
        unix_socket (str | None): listen on this Unix socket path instead of ``host``/``port`` (made
            connectable for every user who can reach its directory).
        token (str | None): when set, every request but ``GET /health`` must carry ``Authorization: Bearer
            <token>`` (HTTP 401 otherwise). A server bound beyond loopback (a ``host`` that
            :func:`~openenv_gym.urls.is_loopback_host` does not name; a Unix socket is
            local) needs one, unless ``insecure`` says otherwise.
        insecure (bool): serve beyond loopback without a token: anyone who reaches the port may run the
            env. :meth:`start` then logs a warning. For a network that admits only trusted peers
            (a container whose port is published on loopback only, a private cluster network).
        port (int): the port to bind; 0 picks a free one (read :attr:`port` after :meth:`start`).
        max_sessions (int | None): sessions served at once; more are refused with ``CAPACITY_REACHED``.
            Defaults to 1 when the factory declares ``SUPPORTS_CONCURRENT_SESSIONS = False`` (as
            ``Environment`` does unless a subclass says otherwise), else 64. A session whose
            connection ended holds its slot until its environment is closed; a newcomer that
            fits once the closing ones are gone waits for them (at most the close timeout,
            10 s) instead of being refused, so a client whose connection was cut comes back at once.
        idle_timeout (float | None): seconds a session may wait between frames before its environment is
            released and the connection closed (code 1001); ``None`` never reaps. A step that runs
            long is not idleness.
        max_frame_bytes (int): the largest frame accepted; a bigger one closes the connection with
            code 1009 and a reason naming both sizes.
        max_connections (int | None): TCP connections held at once, at whatever stage (in their handshake,
            HTTP requests, sessions, watchers, closing); past it a connection is answered ``503``
            with ``Retry-After`` and closed before its request is read. Defaults to 4096, or half
            of the open-file limit (``ulimit -n``) when that is lower
            (:func:`~openenv_gym.server.connections.default_max_connections`).
        handshake_timeout (float): seconds from accepting a connection to the end of its HTTP request
            (its body included); a connection that sends nothing, or half a request, is closed
            then. What a route does once it has the request is not counted. It never holds a
            session slot.
        send_timeout (float | None): seconds a reply may wait for the client to take it (its buffers and the
            server's ``WRITE_LIMIT`` full); then the connection is dropped and the environment
            released. ``None`` waits forever.
        send_tracebacks (bool | None): include the server-side traceback in ``EXECUTION_ERROR`` frames.
            Defaults to true on loopback only: a server exposed to a network does not show its
            internals to whoever connects.
        target (str | None): what the server serves (``openenv-gym serve TARGET``: a Gymnasium id or
            ``"module:attr"``), published as ``target`` in ``/metadata`` so a client that asks for
            one env can tell it reached a server of another. ``/metadata`` publishes
            ``max_sessions`` and ``idle_timeout`` too.
        accept_pickled_factories (bool): open batch sessions whose sub-envs are made from factories the
            client sends pickled (``/ws/batch?...&factories=pickled``, see
            :mod:`openenv_gym.protocol.pickled`). Unpickling runs the client's code, so this needs
            ``token``; without it, such sessions are refused.
        web (bool | None): serve the web debug page at ``/web``, its list of live sessions and watch mode.
            Defaults to true on loopback only; beyond it, true needs ``token``. With a token, a
            browser logs in once at ``/web?token=<token>`` (see :mod:`openenv_gym.server.web_access`).
        task_splits (str | None): for a task env, the only splits (comma-separated) a client's reset may
            reach, by id, split, index or draw (:func:`~openenv_gym.server.task_sets.serving_splits`).

    Every slot comes back within the timeouts: a silent session's environment is released once
    ``idle_timeout`` passes, an unread one's once ``send_timeout`` does (both checked every
    quarter of the shorter, at most every 5 s), and its connection closes at most websockets'
    ``close_timeout`` (10 s) later. A connection buffers at most ``(MAX_QUEUE + 1) *
    max_frame_bytes`` of received frames (reading pauses beyond ``MAX_QUEUE`` frames, plus the
    one being read), plus ``WRITE_LIMIT`` and the reply being sent; a connection that has not
    finished its handshake, at most websockets' request limits (8 KiB lines, 128 headers).
    """

    def __init__(
        self,
        factory: ServedEnv | Callable[[], Environment[Any, Any, Any]],
        *,
        options: ServerOptions | None = None,
        **option_values: Any,
    ) -> None:
        options = dataclasses.replace(options or ServerOptions(), **option_values)
        options.check()
        #: The options it was made with (the keyword arguments above, as a :class:`ServerOptions`).
        self.options = options
        local = options.local
        self.insecure = options.insecure and not local
        self.accept_pickled_factories = options.accept_pickled_factories
        #: What is served: the factory and what it allows.
        self.served = ServedEnv.of(factory)
        if options.served_splits is not None:  # the operator's choice, whatever a client's reset asks
            self.served = dataclasses.replace(
                self.served, factory=serving_splits(self.served.factory, options.served_splits)
            )
        self.max_sessions = options.max_sessions or (64 if self.served.concurrent_sessions else 1)
        if self.served.games is not None:  # a PettingZoo env: its games follow the server's options
            from .opponents import load_policies

            self.served.games.configure(
                load_policies(options.opponent_targets), options.default_opponent, options.turn_timeout
            )
        self.factory = self.served.factory
        self.target = options.target
        self.host = options.host
        self.port = options.port
        self.unix_socket = options.unix_socket
        self._token = options.token
        #: The idle, handshake and send timeouts.
        self.timeouts = options.timeouts
        self.max_frame_bytes = options.max_frame_bytes
        max_connections = options.max_connections
        #: The open connections and the limit on them.
        self.connections = ConnectionLimit(
            default_max_connections() if max_connections is None else max_connections,
            BodyReadingConnection.configured(self.handshake_timeout, self.max_frame_bytes),
        )
        send_tracebacks, web = options.send_tracebacks, options.web
        self.send_tracebacks = local if send_tracebacks is None else send_tracebacks
        self.web = local if web is None else web
        self.watchers: set[Watcher] = set()
        #: The session slots (``max_sessions``) and the open sessions holding them.
        self.slots = SessionSlots(self.max_sessions)
        self.sessions = self.slots.sessions
        self._mcp = HttpMcp(self)
        self._routes = HttpRoutes(self, self._token, self._mcp)
        #: Whether an environment's close() overran its timeout (its thread may still be stuck).
        self.stuck = False
        self._server: Server | None = None
        self._reaper = IdleReaper(self.sessions, self.idle_timeout, self.send_timeout)
        self._reaping: asyncio.Task[None] | None = None
        self._description: dict[str, Any] | None = None
        self._describe_lock = asyncio.Lock()
        key = options.snapshot_key or os.environ.get(SNAPSHOT_KEY_ENV_VAR) or secrets.token_hex(32)
        #: The snapshots the server's sessions keep.
        self.snapshots = SnapshotStore(
            key.encode(),
            self.target or self.served.name,
            options.max_snapshots,
            options.max_snapshot_bytes,
            self._snapshot_support,
            self.max_frame_bytes,
            options.max_server_snapshot_bytes,
        )

    def __repr__(self) -> str:
        return f"EnvServer({self.served.name!r}, {self.url})"

    @property
    def idle_timeout(self) -> float | None:
        """Seconds a session may wait between frames (``timeouts.idle``)."""
        return self.timeouts.idle

    @property
    def handshake_timeout(self) -> float:
        """Seconds a connection has for its handshake (``timeouts.handshake``)."""
        return self.timeouts.handshake

    @property
    def send_timeout(self) -> float | None:
        """Seconds a reply may wait for the client (``timeouts.send``)."""
        return self.timeouts.send

    @property
    def requires_token(self) -> bool:
        """Whether every request but ``/health`` must present the server's token."""
        return self._token is not None

    @property
    def url(self) -> str:
        """The HTTP base URL of the server (``http+unix://<quoted path>`` on a Unix socket)."""
        if self.unix_socket is not None:
            return unix_url(self.unix_socket)
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Bind and start accepting connections."""
        self.slots.start()
        options: dict[str, Any] = {
            "process_request": self._routes.process_request,
            "max_size": self.max_frame_bytes,
            "compression": None,  # frames are small: deflate costs more CPU than it saves bytes
            "ping_interval": None,  # the idle reaper, not pings, decides when a session is gone
            "max_queue": MAX_QUEUE,
            "write_limit": WRITE_LIMIT,
            "open_timeout": None,  # BodyReadingConnection times the request's arrival (handshake_timeout)
            "create_connection": self.connections.connection_class,
            "select_subprotocol": _select_subprotocol,
            # websockets logs handshake lines at DEBUG: the login's ?token= and the credential headers go.
            "logger": RedactingLogger(logging.getLogger("websockets.server"), [self._token] if self._token else []),
        }
        if self.insecure:
            logger.warning(INSECURE_WARNING, self.host)
        if self.unix_socket is not None:
            self._server = await unix_serve(self._handle_connection, self.unix_socket, **options)
            # Who may connect is decided by who can reach the socket's directory.
            os.chmod(self.unix_socket, 0o666)
        else:
            self._server = await serve(self._handle_connection, self.host, self.port, **options)
            self.port = self._server.sockets[0].getsockname()[1]
        if self._reaper.needed:
            self._reaping = asyncio.get_running_loop().create_task(self._reaper.run())

    async def stop(self) -> None:
        """Close every session (each environment's ``close()`` runs) and stop listening."""
        if self._reaping is not None:
            self._reaping.cancel()
            await asyncio.gather(self._reaping, return_exceptions=True)
        if self._server is not None:
            await close_server(self._server)  # every client told why, none waited on for long
        await self._mcp.close_all()

    async def __aenter__(self) -> EnvServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # HTTP ---------------------------------------------------------------------------------------

    async def describe(self) -> dict[str, Any]:
        """Schema and metadata, read once from a probe instance that is closed right after.

        ``openenv-gym serve`` calls it before it listens, so an environment that cannot be made
        stops the server at start-up with the reason, instead of failing every client later.

        Raises:
            Exception: whatever the factory raised.
        """
        async with self._describe_lock:  # concurrent first requests share one probe
            if self._description is None:
                env = await asyncio.to_thread(self.factory)
                try:
                    metadata = env.get_metadata().model_dump()
                    if self.target is not None:
                        metadata["target"] = self.target
                    if self.accept_pickled_factories:
                        metadata["pickled_factories"] = True
                    # Our extension: the limits a client meets, so a checker knows what to expect
                    # (OpenEnv's servers say their max only in the CAPACITY_REACHED refusal).
                    metadata["max_sessions"] = self.max_sessions
                    metadata["idle_timeout"] = self.idle_timeout
                    if isinstance(env, TurnHarness):  # ours: the agent OpenEnv's /harness would run
                        metadata["harness"] = env.harness_name
                    schema = await asyncio.to_thread(env.schema)  # the snapshot probe steps the env
                finally:
                    await asyncio.to_thread(env.close)
                backends = self.served.vector_backends
                if backends is not None:  # our extension: the vector envs a vector session may use
                    offered, unavailable = await asyncio.to_thread(backends.describe)
                    schema.update(vector_backends=offered, vector_backends_unavailable=unavailable)
                self._description = {"schema": schema, "metadata": metadata}
        return self._description

    async def _snapshot_support(self) -> dict[str, Any]:
        """What ``/schema["snapshot"]`` says (the env's probe), for the sessions' snapshot frames."""
        schema = (await self.describe())["schema"]
        return schema.get("snapshot") or {"supported": False, "reason": "the env says nothing of snapshots"}

    # WebSocket ----------------------------------------------------------------------------------

    @property
    def active_sessions(self) -> int:
        """Environments held by open sessions (a batch session holds several) and by stateless HTTP requests."""
        return self.slots.active

    def capacity_refusal(self, requested: int = 1) -> ErrorFrame:
        """The ``CAPACITY_REACHED`` refusal of a session needing ``requested`` slots, in OpenEnv's words."""
        active = self.active_sessions
        return ErrorFrame(
            ErrorCode.CAPACITY_REACHED,
            f"Server at capacity: {active}/{self.max_sessions} sessions active. Cannot accept new connections.",
            {"active_sessions": active, "max_sessions": self.max_sessions, "requested": requested},
        )

    def take_slot(self) -> bool:
        """Hold one session slot for the env of an HTTP request or of an HTTP MCP session; ``False``:
        all are taken. :meth:`release_slot` gives it back."""
        return self.slots.take()

    async def release_slot(self) -> None:
        """Give back a slot :meth:`take_slot` held."""
        await self.slots.release()

    def stateless_slot(self) -> contextlib.AbstractAsyncContextManager[bool]:
        """Hold a session slot for a stateless HTTP request's env while it lives; ``False``: all are taken."""
        return self.slots.held()

    def _new_session(self, connection: ServerConnection) -> Session:
        """The session a handshake asked for; raises ProtocolError for a bad batch query."""
        assert connection.request is not None
        path, _, query = connection.request.path.partition("?")
        attached = attached_handler(self._mcp, path, query, self.factory)  # OpenEnv 0.10's /ws?session_id=
        if attached is not None:
            return Session(connection, attached, send_tracebacks=self.send_tracebacks)
        handler: SessionHandler
        if path == AGENTS_PATH:
            handler, render_mode = self._agents_handler(query)
        elif path != BATCH_PATH:
            render_mode = urllib.parse.parse_qs(query).get("render_mode", [None])[0]
            factory = self._render_factory(render_mode)
            if self.served.games is not None:  # a PettingZoo env: the session plays one seat
                from .seat_env import parse_seat_query

                factory = functools.partial(self.served.factory, parse_seat_query(query), render_mode=render_mode)
            handler = PlainHandler(factory, self.snapshots.session())
        else:
            handler, render_mode = self._batch_handler(query)
        session = Session(connection, handler, send_tracebacks=self.send_tracebacks)
        session.render_mode = render_mode
        return session

    def _agents_handler(self, query: str) -> tuple[SessionHandler, str | None]:
        """The multi-agent handler of a ``/ws/agents`` query, and its render mode."""
        from .agents_session import AgentsHandler

        agents = self.served.agents
        assert agents is not None  # the route is open only then
        api, render_mode = parse_agents_query(query)
        if render_mode is not None:
            self._render_factory(render_mode)  # refuses a mode the env does not render

        def make() -> Any:
            return agents.make(api, render_mode)

        make.__name__ = agents.name
        return AgentsHandler(make, api), render_mode

    def _batch_handler(self, query: str) -> tuple[SessionHandler, str | None]:
        """The batch or vector handler of a ``/ws/batch`` query, and its render mode."""
        size, mode, backend, render_mode = parse_batch_query(query, self.max_sessions)
        if wants_pickled_factories(query):
            check_pickles_allowed(self.accept_pickled_factories, self._token is not None)
            if render_mode is not None:
                raise ProtocolError(
                    ErrorCode.VALIDATION_ERROR.value,
                    f"render_mode={render_mode}: pickled factories make their envs in their own render mode",
                )
            return PickledBatchHandler(size, mode), None
        if backend is None:
            factory = self._render_factory(render_mode)
            return BatchHandler(factory, size, mode, self.snapshots.session()), render_mode
        backends = self.served.vector_backends
        if backends is None:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"backend={backend}: this server has no vector backends"
            )
        if backend not in VECTOR_BACKENDS:  # a name no server knows is a bad request, not a failed factory
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"backend={backend}: expected one of {list(VECTOR_BACKENDS)}"
            )
        if render_mode is not None:
            described = ((self._description or {}).get("schema", {}).get("vector_backends") or {}).get(backend, {})
            self._check_render_mode(render_mode, described.get("render_modes"), f"the {backend} vector env's")
        from .vector_session import VectorHandler  # numpy and gymnasium: only servers of Gymnasium envs

        def build(num_envs: int, autoreset_mode: Any) -> Any:
            return backends.make(backend, num_envs, autoreset_mode, render_mode)

        build.__name__ = f"{backend} vector env"
        return VectorHandler(build, size, mode), render_mode

    def _render_factory(self, render_mode: str | None) -> Callable[[], Environment[Any, Any, Any]]:
        """The server's factory, or one making its env in ``render_mode`` (a Gymnasium env
        renders in the mode it is made with); for a ``/ws`` session, or each env of a batch one.

        Raises:
            ProtocolError: VALIDATION_ERROR: the env renders nothing, or not in that mode.
        """
        if render_mode is None:
            return self.factory
        if not self.served.takes_render_mode:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"render_mode={render_mode}: this server's env renders nothing"
            )
        modes = ((self._description or {}).get("schema", {}).get("render") or {}).get("modes")
        self._check_render_mode(render_mode, modes, "this env's")
        return self.served.maker(render_mode)

    @staticmethod
    def _check_render_mode(render_mode: str, modes: list[str] | None, whose: str) -> None:
        """Refuse a render mode the published ``modes`` lack (``None``: not described yet), and
        ``human`` always (none publish it)."""
        if render_mode == "human":
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value,
                "render_mode=human would open a window where the env runs: ask rgb_array for its frames, "
                "or watch the session on this server's /web page",
            )
        if modes is not None and render_mode not in modes:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"render_mode={render_mode} is not one of {whose} {modes}"
            )

    async def _handle_connection(self, connection: ServerConnection) -> None:
        assert connection.request is not None
        if connection.request.path.partition("?")[0] == WATCH_PATH:
            await self._watch(connection)
            return
        if connection.request.path.partition("?")[0] == MCP_SOCKET_PATH:
            await serve_mcp_socket(connection, self._mcp, self.idle_timeout)
            return
        if connection.request.path.partition("?")[0] == HARNESS_PATH:
            await serve_harness_socket(connection, self)
            return
        try:
            session = self._new_session(connection)
        except ProtocolError as exc:
            await self._refuse(connection, exc)
            return
        await self.slots.wait_for_closing(session.size)
        if self.active_sessions + session.size > self.max_sessions:
            refusal = self.capacity_refusal(session.size)
            await connection.send(refusal.serialize())
            await connection.close(CLOSE_AT_CAPACITY, "server at capacity")
            return
        self.sessions.add(session)
        await self.slots.changed()  # a newcomer waiting on closing sessions may now be hopeless
        try:
            failure = await session.open()
            if failure is not None:
                await connection.send(failure.serialize())
                await connection.close(CLOSE_FACTORY_FAILED, "environment factory failed")
                return
            await session.run()
        finally:
            # The slot stays taken until the environment is closed, so an environment that
            # allows one session never has two instances alive.
            session.end_watches("the session closed")
            self.slots.closing.add(session)
            if not await session.close():
                self.stuck = True
            self.slots.closing.discard(session)
            self.sessions.discard(session)
            await self.slots.changed()

    async def _refuse(self, connection: ServerConnection, exc: ProtocolError) -> None:
        await connection.send(ErrorFrame.from_exception(exc).serialize())
        # A close reason may hold 123 bytes: cut the UTF-8, not the characters.
        await connection.close(CLOSE_BAD_REQUEST, exc.message.encode()[:120].decode(errors="ignore"))

    async def _watch(self, connection: ServerConnection) -> None:
        """Serve ``/web/watch?session=ID[&env=I]``: a read-only view of a live session (sub-env I of a
        batch or vector session)."""
        assert connection.request is not None
        try:
            session_id, fps, sub_env = parse_watch_query(connection.request.path.partition("?")[2])
            session = next((s for s in self.sessions if s.id == session_id), None)
            if session is None or not session.live:
                raise ValueError(f"no session {session_id} is live here (see /web/sessions)")
            if sub_env >= session.size:
                raise ValueError(f"env={sub_env}: session {session_id} has {session.size} sub-env(s)")
            if len(self.watchers) >= MAX_WATCHERS:
                raise ValueError(f"{MAX_WATCHERS} watch connections are open already")
        except ValueError as exc:
            await self._refuse(connection, ProtocolError(ErrorCode.VALIDATION_ERROR.value, str(exc)))
            return
        watcher = Watcher(connection, session, fps, sub_env)
        self.watchers.add(watcher)
        session.watchers.add(watcher)
        try:
            await watcher.run(session_listing(session, asyncio.get_running_loop().time()))
        finally:
            session.watchers.discard(watcher)
            self.watchers.discard(watcher)
