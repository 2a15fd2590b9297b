"""One environment session as a Model Context Protocol server over stdio: ``openenv-gym mcp TARGET``.

An MCP client (an agent harness, an IDE, the SDK's ``stdio_client``) runs
``openenv-gym mcp openenv/Echo-v0``. The bridge starts the env's server (the process provider,
on loopback), or attaches to a running one (``--url``), opens one session, resets it, and offers

* each tool the env lists (``list_tools``: name, description, input schema) as an MCP tool,
  whose calls are forwarded as ``call_tool`` steps, the observation becoming the MCP result;
* ``reset``: a new episode; its result is the first observation, as text its ``prompt`` when it
  has one, else the observation as JSON, and the observation itself as structured content.

The model calls ``reset``, so it takes no arguments: the env draws the episode's task (from the
split the operator serves it, ``--env-kwargs '{"split": "train"}'``), and a model cannot pick a
task it has memorised, nor a held-out one, by id, split, index or seed. ``--allow-task-choice``
(the operator's) offers ``seed`` (an integer) and ``options`` (an object, as the env's reset takes
them) again, for a harness whose model is meant to choose.

Each result reports the env's step in its ``_meta``: ``openenv-gym/reward`` (a number, or
``null`` when the env gave none), ``openenv-gym/done`` and ``openenv-gym/truncated``
(booleans), and ``openenv-gym/error_type`` when the env refused the call. They travel in
``_meta``, not in the structured content, because that is the tool's own result (what the
model reads, what a client may check against a schema), while the reward is for the harness.

A failed call is a result with ``isError: true`` and the reason as its text, never a JSON-RPC
error, so the model reads it and can try again: an unknown tool, arguments that do not fit the
schema, a tool that raised or overran its time limit, an error frame, a lost session (``reset``
opens a new one). After ``done`` or ``truncated`` every tool call but ``reset`` is refused that
way (``EpisodeEndedError``), never sent to the env nor scored, until the harness calls ``reset``.

stdout carries MCP messages and nothing else: the SDK's ``stdio_server`` points file descriptor
1 at stderr while it serves, the env server writes to a log of its own, and logs go to stderr.
When the client closes stdin (or exits), or on SIGTERM, SIGINT or SIGHUP, the session is closed
and the server the bridge started is stopped; that server also stops by itself if the bridge is
killed outright (it watches a pipe only the bridge holds).

Needs the MCP Python SDK 2 (``pip install 'openenv-gym[mcp]'``): the low-level ``Server`` with
``on_list_tools``/``on_call_tool`` handlers that 2.0 introduced.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import signal
from collections.abc import Mapping
from typing import Any

import anyio
import pydantic

from .. import __version__
from ..client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT, AsyncEnvClient
from ..errors import (
    CapacityReachedError,
    ConnectionLostError,
    OpenEnvGymError,
    RemoteError,
    RequestTimeoutError,
    ServerStartError,
    ToolCallError,
)
from ..protocol import ObservationFrame
from ..protocol._json import dumps
from ..protocol.tools import LIST_TOOLS, call_tool_action, result_text
from ..providers.base import DEFAULT_STARTUP_TIMEOUT
from ..providers.fleet import Fleet

#: What to run when the SDK is missing or too old (pyproject's ``mcp`` extra).
INSTALL_HINT = "pip install 'openenv-gym[mcp]'"


def _sdk_missing_message(exc: ImportError) -> str:
    if isinstance(exc, ModuleNotFoundError):
        return f"the MCP bridge needs the MCP Python SDK (mcp>=2,<3): {INSTALL_HINT}"
    try:
        found = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        found = "?"
    # A name missing inside mcp: a 1.x SDK, whose low-level Server registered handlers with decorators.
    return f"the MCP bridge needs the MCP Python SDK 2 (mcp>=2,<3), not mcp {found}: {INSTALL_HINT}"


try:
    from mcp import types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # pragma: no cover - depends on what is installed
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
        raise  # the SDK is there but one of its own dependencies is broken: that error says which
    raise ModuleNotFoundError(_sdk_missing_message(exc), name="mcp") from exc

__all__ = [
    "DONE_KEY",
    "ERROR_TYPE_KEY",
    "INSTALL_HINT",
    "RESET_TOOL",
    "RESET_TOOL_WITH_CHOICE",
    "REWARD_KEY",
    "TRUNCATED_KEY",
    "EnvBridge",
    "call_result",
    "mcp_tool",
    "one_line",
    "reset_kwargs",
    "reset_result",
    "resolve_target",
    "serve",
]

logger = logging.getLogger(__name__)

#: The ``_meta`` keys of every result (MCP's ``prefix/name`` form, the prefix being ours).
REWARD_KEY = "openenv-gym/reward"
DONE_KEY = "openenv-gym/done"
TRUNCATED_KEY = "openenv-gym/truncated"
ERROR_TYPE_KEY = "openenv-gym/error_type"

_RESET = "reset"

_RESET_DESCRIPTION = (
    "Start a new episode of the environment and return its first observation (the task, when it "
    "has one). The episode's tools act on the new episode afterwards."
)

#: The bridge's own tool, as the model is offered it: no arguments, the env draws the task. Its
#: name is one no env tool may take (OpenEnv reserves it too).
RESET_TOOL = types.Tool(
    name=_RESET,
    description=_RESET_DESCRIPTION,
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)

#: ``reset`` with the env's ``seed`` and ``options`` (a task id, a split), offered only when the
#: bridge's operator lets the model choose its task (``--allow-task-choice``).
RESET_TOOL_WITH_CHOICE = types.Tool(
    name=_RESET,
    description=_RESET_DESCRIPTION,
    input_schema={
        "type": "object",
        "properties": {
            "seed": {"type": "integer", "description": "seed of the episode, for a reproducible one"},
            "options": {
                "type": "object",
                "description": "options of the environment's reset, such as a task id",
                "additionalProperties": True,
            },
        },
        "additionalProperties": False,
    },
)

_CONTENT: pydantic.TypeAdapter[types.ContentBlock] = pydantic.TypeAdapter(types.ContentBlock)


# Pure conversions ----------------------------------------------------------------------------


def mcp_tool(description: Mapping[str, Any]) -> types.Tool:
    """An env's tool description (``{"name", "description", "input_schema"}``) as an MCP ``Tool``.

    MCP wants an object schema at the root; a tool without a schema takes no arguments.

    Example:
        >>> mcp_tool({"name": "echo", "description": "Echo it.", "input_schema": {"properties": {}}}).input_schema
        {'type': 'object', 'properties': {}}
    """
    schema = description.get("input_schema", description.get("inputSchema"))
    if not isinstance(schema, dict):
        schema = {"type": "object", "properties": {}}
    elif "type" not in schema:
        schema = {"type": "object", **schema}
    return types.Tool(
        name=str(description["name"]), description=description.get("description") or None, input_schema=schema
    )


def _step_meta(frame: ObservationFrame, error_type: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {REWARD_KEY: frame.reward, DONE_KEY: frame.done, TRUNCATED_KEY: frame.truncated}
    if error_type is not None:
        meta[ERROR_TYPE_KEY] = error_type
    return meta


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _error(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(text)], is_error=True, _meta=meta)


def _content(part: Any) -> types.ContentBlock:
    """One part of a result's content as MCP's; what MCP has no type for travels as JSON text."""
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return _text(part["text"])
    try:
        return _CONTENT.validate_python(part)  # images, audio, resources: as MCP spells them
    except pydantic.ValidationError:
        return _text(part if isinstance(part, str) else dumps(part))


def call_result(frame: ObservationFrame) -> types.CallToolResult:
    """The MCP result of one ``call_tool`` step: the tool's result, or its error with ``is_error``.

    Example:
        >>> frame = ObservationFrame({"tool_name": "t", "result": None,
        ...     "error": {"error_type": "tool_not_found", "message": "no tool 't'"}})
        >>> result = call_result(frame)
        >>> result.is_error, result.content[0].text, result.meta[ERROR_TYPE_KEY]
        (True, "no tool 't'", 'tool_not_found')
    """
    observation = frame.observation
    error = observation.get("error")
    if error is not None:
        if isinstance(error, dict):
            kind = error.get("error_type")
            message = error.get("message")
            return _error(
                message if isinstance(message, str) else dumps(error),
                _step_meta(frame, kind if isinstance(kind, str) else None),
            )
        return _error(dumps(error), _step_meta(frame))
    result = observation.get("result")
    if not isinstance(result, dict):
        return _error(f"the server's answer to the tool call holds no result: {dumps(observation)}", _step_meta(frame))
    content = [_content(part) for part in result.get("content") or []]
    if not content:
        text = result_text(result)  # a result with data but no content parts (an OpenEnv server's)
        if text:
            content = [_text(text)]
    structured = result.get("structured_content", result.get("structuredContent"))
    return types.CallToolResult(
        content=content,
        # Handshake-era MCP allows only an object here; our server wraps any other value already.
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=bool(result.get("is_error", result.get("isError", False))),
        _meta=_step_meta(frame),
    )


def reset_kwargs(arguments: Mapping[str, Any] | None, *, allow_task_choice: bool = False) -> dict[str, Any]:
    """The keyword arguments of the env's reset, from the ``reset`` tool's arguments.

    Without ``allow_task_choice`` (the bridge's default) the model chooses nothing: a seed or
    options are refused (empty ones are no choice), so the env draws the task.

    Example:
        >>> reset_kwargs({"seed": 3, "options": None}, allow_task_choice=True)
        {'seed': 3}
        >>> reset_kwargs({"options": {}})
        {}

    Raises:
        ToolCallError: an argument other than ``seed`` and ``options``, or of the wrong type; a
            seed or options not allowed.
    """
    arguments = dict(arguments or {})
    if not allow_task_choice:
        chosen = sorted(name for name, value in arguments.items() if value is not None and value != {})
        if chosen:
            raise ToolCallError(
                f"reset takes no arguments, got {chosen}: the environment picks the episode's task, "
                "not its caller (the bridge's operator may allow it: openenv-gym mcp --allow-task-choice)"
            )
        return {}
    extra = arguments.keys() - {"seed", "options"}
    if extra:
        raise ToolCallError(f"reset takes only seed and options, got {sorted(extra)}")
    kwargs: dict[str, Any] = {}
    seed = arguments.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ToolCallError(f"seed must be an integer, got {seed!r}")
        kwargs["seed"] = seed
    options = arguments.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise ToolCallError(f"options must be an object, got {type(options).__name__}")
        kwargs["options"] = options
    return kwargs


def reset_result(frame: ObservationFrame) -> types.CallToolResult:
    """The ``reset`` tool's result: the first observation's ``prompt`` as text (else the
    observation as JSON), and the observation as structured content.

    Example:
        >>> reset_result(ObservationFrame({"prompt": "Add 2 and 3."})).content[0].text
        'Add 2 and 3.'
        >>> reset_result(ObservationFrame({"echoed_message": ""})).content[0].text
        '{"echoed_message":""}'
    """
    observation = frame.observation
    prompt = observation.get("prompt")
    text = prompt if isinstance(prompt, str) and prompt else dumps(observation)
    return types.CallToolResult(content=[_text(text)], structured_content=observation, _meta=_step_meta(frame))


def one_line(exc: BaseException) -> str:
    """An error as one line: a server's message without its traceback, a server that would not
    start with the last line it wrote (which says why).

    Example:
        >>> one_line(RemoteError("EXECUTION_ERROR", "boom", {"traceback": "Traceback ..."}))
        'server error: boom (code: EXECUTION_ERROR)'
    """
    if isinstance(exc, RemoteError):
        return exc.headline()
    if isinstance(exc, ServerStartError):
        last = exc.output.strip().splitlines()[-1:]
        return exc.message + (f": {last[0].strip()}" if last else "")
    return " ".join(str(exc).split()) or type(exc).__name__


# The session behind the tools ------------------------------------------------------------------


class EnvBridge:
    """One session with an environment server, offered as the tools of an MCP server.

    Made by :meth:`open`; :attr:`server` is the SDK's low-level ``Server`` to run on a transport.
    Calls reach the session one at a time (it has one episode), however many the client sends.

    Args:
        client: the open, reset session.
        tools: the env's tool descriptions, as its ``list_tools`` gave them.
        name: what the env is called in the server's description (its id or URL).
        allow_task_choice: offer ``reset`` with ``seed`` and ``options`` (:data:`RESET_TOOL_WITH_CHOICE`),
            so the model picks its task; by default it takes none (:data:`RESET_TOOL`).
    """

    def __init__(
        self, client: AsyncEnvClient, tools: list[dict[str, Any]], name: str, *, allow_task_choice: bool = False
    ) -> None:
        self.client = client
        self.allow_task_choice = allow_task_choice
        shadowed = [tool for tool in tools if tool.get("name") == _RESET]
        if shadowed:  # OpenEnv reserves the name too; a server that breaks the rule loses that tool
            logger.warning("the env's own %r tool is hidden by the bridge's", _RESET)
        reset_tool = RESET_TOOL_WITH_CHOICE if allow_task_choice else RESET_TOOL
        self.tools = [mcp_tool(tool) for tool in tools if tool.get("name") != _RESET] + [reset_tool]
        self._lock = asyncio.Lock()
        arguments = " (seed and options are optional)" if allow_task_choice else ""
        self.server: Server[Any] = Server(
            "openenv-gym",
            version=__version__,
            title=f"{name} (openenv-gym)",
            instructions=(
                f"The tools of one episode of the environment {name}. Call reset to start a new "
                f"episode{arguments}. Each result's _meta holds the environment's "
                f"{REWARD_KEY}, {DONE_KEY} and {TRUNCATED_KEY}."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    @classmethod
    async def open(
        cls,
        base_url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        allow_task_choice: bool = False,
    ) -> EnvBridge:
        """Open a session with the server at ``base_url``, reset it and read its tools
        (``allow_task_choice``: as :class:`EnvBridge` takes it).

        Raises:
            ClientError: the server cannot be reached, or refuses the session or the reset.
        """
        client = AsyncEnvClient(
            base_url, env_id=name, token=token, open_timeout=open_timeout, call_timeout=call_timeout
        )
        try:
            await client.reset()
            tools = await _env_tools(client)
        except BaseException:
            await client.close()
            raise
        return cls(client, tools, name or base_url, allow_task_choice=allow_task_choice)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.call(params.name, params.arguments)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """Call tool ``name`` (``reset`` included) and return its MCP result; never raises for
        what the env or the session does: every failure is a result with ``is_error``."""
        async with self._lock:
            try:
                if name == _RESET:
                    kwargs = reset_kwargs(arguments, allow_task_choice=self.allow_task_choice)
                    return reset_result(await self.client.reset(**kwargs))
                return call_result(await self.client.step(call_tool_action(name, arguments or {})))
            except (ConnectionLostError, RequestTimeoutError) as exc:
                # The client dropped the connection (a late reply could be taken for the next
                # call's); reset makes a new one.
                return _error(f"{one_line(exc)}; call reset to start a new session")
            except OpenEnvGymError as exc:  # an error frame, bad reset arguments, no server
                return _error(one_line(exc))

    async def close(self) -> None:
        """Close the session (bounded: the client's close handshake has its own timeout)."""
        await self.client.close()


async def _env_tools(client: AsyncEnvClient) -> list[dict[str, Any]]:
    """The env's tool descriptions; none for a server that has no tools to list."""
    try:
        frame = await client.step(LIST_TOOLS)
    except CapacityReachedError:
        raise
    except RemoteError as exc:  # a server whose envs take no tool actions refuses the action
        logger.warning("the server lists no tools (%s); only reset is offered", exc.headline())
        return []
    tools = frame.observation.get("tools")
    if not isinstance(tools, list):
        logger.warning("the server's list_tools answer holds no tool list; only reset is offered")
        return []
    return [tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]


# Running it ------------------------------------------------------------------------------------


def resolve_target(target: str, env_kwargs: Mapping[str, Any] | None = None) -> tuple[str | None, dict[str, Any]]:
    """What the server of ``target`` runs, and the env's keyword arguments.

    A catalog id (``openenv/Echo-v0``, a plugin's) stands for its entry's server target with the
    entry's ``env_kwargs`` under ``env_kwargs``; anything else (``module:attr``, a Gymnasium id)
    is served as it is. ``None`` for an entry that attaches to a running server
    (``openenv/Remote-v0``).
    """
    import gymnasium  # noqa: F401 - fills the catalog (the registry must not be imported before it)

    from ..registry import catalog

    merged = dict(env_kwargs or {})
    entry = catalog.get(target)
    if entry is None:
        return target, merged
    defaults = entry.kwargs.get("env_kwargs") or {}
    return entry.server, {**defaults, **merged}


def serve(
    target: str | None = None,
    *,
    url: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    token: str | None = None,
    open_timeout: float = DEFAULT_OPEN_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    allow_task_choice: bool = False,
) -> None:
    """Serve one session of ``target`` (or of the server at ``url``) as MCP over stdin and stdout.

    Returns when the client closes stdin; the server started for ``target`` is stopped by then.

    Args:
        target: an env id (``openenv/Echo-v0``), a Gymnasium id or ``module:attr``; with ``url``,
            what that server must serve (checked against its ``/metadata``), or ``None``.
        url: a running server (``http://host:port``) instead of one started here.
        env_kwargs: keyword arguments of the env, for a server started here.
        token: the running server's token (``Authorization: Bearer``).
        open_timeout, call_timeout, startup_timeout: seconds to connect, for each call, for a
            started server to become healthy.
        allow_task_choice: let the model's ``reset`` take a seed and options, and so pick its
            task (``--allow-task-choice``); by default it takes none and the env draws the task.

    Raises:
        ValueError: neither ``target`` nor ``url``, env arguments for a running server, an id
            that only attaches to one, or a malformed URL.
        OpenEnvGymError: the server cannot be started or reached, or refuses the session.
    """
    server_target, env_kwargs = (
        resolve_target(target, env_kwargs) if target is not None else (None, dict(env_kwargs or {}))
    )
    if url is not None and env_kwargs:
        raise ValueError("--env-kwargs cannot reach a running server (--url): it makes its env itself")
    if url is None and server_target is None:
        raise ValueError(f"{target!r} attaches to a running server: pass --url" if target else "give a TARGET or --url")
    fleet = Fleet.of(
        server_target,
        urls=[url] if url is not None else [],
        token=token,
        open_timeout=open_timeout,
        env_kwargs=env_kwargs,
        startup_timeout=startup_timeout,
    )
    (base_url,) = fleet.start()
    try:
        if url is not None:
            from ..env import check_served

            check_served(base_url, server_target, open_timeout, token)
        connect = (base_url, target or base_url, token or fleet.token, open_timeout, call_timeout)
        asyncio.run(_serve_stdio(fleet, *connect, allow_task_choice=allow_task_choice))
    finally:
        fleet.close()  # idempotent; _serve_stdio has stopped it already unless it failed early


async def _serve_stdio(
    fleet: Fleet,
    base_url: str,
    name: str,
    token: str | None,
    open_timeout: float,
    call_timeout: float,
    *,
    allow_task_choice: bool,
) -> None:
    bridge = await EnvBridge.open(
        base_url,
        name=name,
        token=token,
        open_timeout=open_timeout,
        call_timeout=call_timeout,
        allow_task_choice=allow_task_choice,
    )
    logger.info("serving %s from %s: tools %s", name, base_url, ", ".join(tool.name for tool in bridge.tools))
    stopped_by: signal.Signals | None = None
    try:
        async with stdio_server() as (read_stream, write_stream):
            try:
                async with anyio.create_task_group() as group:

                    async def stop_on_signal() -> None:
                        nonlocal stopped_by
                        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                            async for received in signals:
                                stopped_by = received
                                group.cancel_scope.cancel()
                                return

                    group.start_soon(stop_on_signal)
                    # Returns once the client closes stdin.
                    await bridge.server.run(read_stream, write_stream, bridge.server.create_initialization_options())
                    group.cancel_scope.cancel()
            finally:
                # Here, not after stdio_server: its exit waits for the line its reader thread is
                # blocked on, which after a signal may never come.
                with anyio.CancelScope(shield=True):
                    await _shut_down(bridge, fleet)
                why = "stdin closed" if stopped_by is None else f"stopped by {stopped_by.name}"
                logger.info("%s: the session is closed and its server stopped", why)
                if stopped_by is not None:
                    # End as the signal would have ended us, now that nothing is left behind.
                    signal.signal(stopped_by, signal.SIG_DFL)
                    os.kill(os.getpid(), stopped_by)
    finally:
        with anyio.CancelScope(shield=True):
            await _shut_down(bridge, fleet)


async def _shut_down(bridge: EnvBridge, fleet: Fleet) -> None:
    """Close the session, then stop the server (both idempotent and bounded)."""
    with anyio.move_on_after(10):
        await bridge.close()
    await anyio.to_thread.run_sync(fleet.close)
