"""What a server serves, read once: :func:`read_server_info` is the one reader of an env's ``/schema``
(and, for a server started by someone else, of its ``/metadata``: :func:`check_served`).

Every env over one session reads its server here when it is made and keeps the answer in its
:class:`~openenv_gym.env_core.EnvCore`: its face, render modes, tools and snapshot support all
come from that one read.
"""

from __future__ import annotations

from typing import Any

from .client import http_get_json
from .env_core import EnvCore, ServerInfo
from .errors import EnvMismatchError, ServerConnectError
from .face import Face, SpacesFace, face_of_schema, spaces_of_schema
from .make_options import MakeOptions, Timeouts
from .rendering import render_metadata
from .seats import seat_schema

__all__ = ["check_served", "read_core", "read_server_info", "resolve_spaces", "server_face"]


def read_server_info(
    base_url: str,
    timeouts: Timeouts,
    token: str | None,
    *,
    serves: str | None = None,
    attached: bool = False,
    agent: str | None = None,
) -> ServerInfo:
    """What the server at ``base_url`` serves: its ``/schema``, read once.

    Args:
        serves: what the env is made for (a Gymnasium id or ``"module:attr"``).
        attached: the server was started by someone else: it must serve ``serves``.
        agent: the seat in a game the env plays: its agent's spaces are the env's own.

    Raises:
        ServerConnectError: the server does not answer.
        EnvMismatchError: an attached server serves something else.
        ValueError: ``agent`` is no seat of the server's games.
    """
    if attached:
        check_served(base_url, serves, timeouts.open, token)
    schema = http_get_json(base_url, "/schema", timeout=timeouts.open, token=token)
    if agent is not None:
        schema = seat_schema(schema, agent, base_url)
    return ServerInfo(base_url, serves, schema if isinstance(schema, dict) else {})


def read_core(
    base_url: str,
    make: MakeOptions,
    token: str | None,
    *,
    attached: bool,
    agent: str | None = None,
    render_mode: str | None = None,
    env_id: str | None = None,
    max_episode_steps: int | None = None,
    split: str | None = None,
) -> EnvCore:
    """The core of an env made with ``make``'s options on the server at ``base_url``: what it serves
    (:func:`read_server_info`), its face (:func:`~openenv_gym.face.face_of_schema`: a tool face may
    still need its tools listed by a session), its render mode
    (:func:`~openenv_gym.rendering.render_metadata`) and, on an OpenEnv server with a Task API, how
    its resets pick tasks there, ``split`` the default (:func:`~openenv_gym.task_catalog.task_resets_of`).

    Raises:
        ServerConnectError, EnvMismatchError: as :func:`read_server_info`.
        ValueError: the server cannot give what the options ask (spaces, tools, a render mode, a
            seat, a split).
    """
    info = read_server_info(base_url, make.timeouts, token, serves=make.server, attached=attached, agent=agent)
    face = face_of_schema(
        info.schema, base_url, json_schema_fallback=make.json_schema_fallback, tool_calls=make.tool_calls
    )
    render = render_metadata(info.schema, render_mode, base_url) if render_mode is not None else None
    core = EnvCore(
        info,
        face,
        env_id=env_id,
        max_episode_steps=max_episode_steps,
        render_mode=render_mode,
        render=render,
    )
    if agent is None:  # a seat in a game has no task set
        from .task_catalog import task_resets_of  # loaded when an env is made: importing stays light

        core.task_resets = task_resets_of(base_url, info.schema, make.timeouts.open, token, split)
    return core


def check_served(base_url: str, expected: str | None, timeout: float, token: str | None = None) -> None:
    """Make sure the server at ``base_url`` serves ``expected`` (a Gymnasium id or ``"module:attr"``).

    openenv-gym servers name what they serve in ``/metadata`` (``target``); a server that does
    not (an OpenEnv server) is taken as it is.

    Raises:
        EnvMismatchError: the server serves something else.
    """
    if expected is None:
        return
    try:
        metadata = http_get_json(base_url, "/metadata", timeout=timeout, token=token)
    except ServerConnectError:  # no /metadata (an older server): nothing says what it serves
        return
    served = metadata.get("target") if isinstance(metadata, dict) else None
    if isinstance(served, str) and expected not in (served, metadata.get("name")) and not _serves(served, expected):
        raise EnvMismatchError(base_url, expected, served)


def _serves(served: str, expected: str) -> bool:
    """Whether a server started as ``serve SERVED`` serves ``expected``: a catalog id is served as
    the env its entry names (``serve openenv/CodingTools-v0`` serves the tool env's class)."""
    from .registry import catalog_entry

    entry = catalog_entry(served)
    return entry is not None and entry.server == expected


def resolve_spaces(
    base_url: str,
    timeout: float,
    *,
    json_schema_fallback: bool = False,
    token: str | None = None,
    schema: Any = None,
) -> SpacesFace:
    """The spaces of the server at ``base_url``, from ``schema`` (its ``/schema`` read before), else
    read by :func:`read_server_info`; see :func:`~openenv_gym.face.spaces_of_schema`.

    Raises:
        ServerConnectError: the server does not answer.
        ValueError: it publishes no Gymnasium spaces and ``json_schema_fallback`` is off.
        UnsupportedSpaceError: a field every action needs has no space (the message names it).
    """
    if schema is None:
        schema = read_server_info(base_url, Timeouts(open=timeout), token).schema
    return spaces_of_schema(schema, base_url, json_schema_fallback)


def server_face(
    base_url: str,
    server: str | None,
    provider: Any,
    timeout: float,
    token: str | None,
    json_schema_fallback: bool,
    tool_calls: bool | None,
    agent: str | None = None,
) -> Face:
    """How one env's actions and observations travel, read from its server: :func:`read_server_info`
    (a server started by someone else, a :class:`~openenv_gym.providers.URLProvider`'s, must serve
    ``server``), then :func:`~openenv_gym.face.face_of_schema`."""
    from .providers import URLProvider

    info = read_server_info(
        base_url, Timeouts(open=timeout), token, serves=server, attached=isinstance(provider, URLProvider), agent=agent
    )
    return face_of_schema(info.schema, base_url, json_schema_fallback=json_schema_fallback, tool_calls=tool_calls)
