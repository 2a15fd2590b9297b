"""How the checks of ``openenv-gym validate`` reach a server: requests, sessions raw and ours, sampled actions.

Shared by the check modules; every wait is bounded by ``subject.timeout``.
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..client import EnvClient, auth_headers, http_get_json
from ..client._http import websockets_logger
from ..errors import CapacityReachedError, ClientError, OpenEnvGymError, ServerConnectError
from ..protocol import ErrorCode
from ..protocol.tools import LIST_TOOLS
from ..urls import tcp_form, unix_socket_path, ws_url
from .target import Subject

__all__ = [
    "SETTLE",
    "Face",
    "exchange",
    "face_of",
    "get_json",
    "one_line",
    "raw_session",
    "session_client",
    "settled",
    "short",
    "token_refusal",
]

# Seconds a session slot that another check just gave up may take to be free again: the server
# closes the env after the client sees its connection closed.
SETTLE = 1.5
T = TypeVar("T")


def short(value: Any, limit: int = 80) -> str:
    """``value`` as JSON (or its repr), cut to ``limit`` characters."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(exc: BaseException) -> str:
    """An exception in one line: ours by their message, others with their type."""
    text = (str(exc).strip().splitlines() or [""])[0]
    return text if isinstance(exc, OpenEnvGymError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")


def get_json(subject: Subject, path: str) -> Any:
    """``GET path`` of the subject, as JSON."""
    return http_get_json(subject.url, path, timeout=subject.timeout, token=subject.token)


def token_refusal(subject: Subject) -> str | None:
    """Why the server refuses every request of the checks (an HTTP 401 on ``/schema``: its token is
    missing or not the one given), saying how to pass it; ``None`` when it answers."""
    try:
        get_json(subject, "/schema")
    except ServerConnectError as exc:
        if not exc.reason.startswith("HTTP 401"):
            return None
        if subject.token is None:
            return "/schema: HTTP 401: the server needs its token, and validate sent none: pass --token-env VAR, VAR holding it"
        return "/schema: HTTP 401: the server refused the token validate sent: is --token-env's variable its token?"
    except ClientError:
        return None  # the checks say what else is wrong
    return None


def session_client(subject: Subject) -> EnvClient:
    """Our synchronous client for one session of the subject (not connected yet)."""
    return EnvClient(subject.url, open_timeout=subject.timeout, call_timeout=subject.timeout, token=subject.token)


def settled(attempt: Callable[[], T]) -> T:
    """``attempt()``, again while the server refuses it at capacity for a moment (a slot being freed)."""
    deadline = time.monotonic() + SETTLE
    while True:
        try:
            return attempt()
        except CapacityReachedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def raw_session(subject: Subject) -> Iterator[Any]:
    """A WebSocket to ``/ws`` with nothing of our client in between: the frames as the server sends them."""
    from websockets.sync.client import connect, unix_connect

    options: dict[str, Any] = {
        "open_timeout": subject.timeout,
        "ping_interval": None,  # no traffic of ours while a check waits (the idle check)
        "compression": None,
        "max_size": 100 * 2**20,
        "additional_headers": auth_headers(subject.token),
        "logger": websockets_logger(subject.token),
    }
    url = ws_url(subject.url)
    socket_path = unix_socket_path(url)
    if socket_path is not None:
        with unix_connect(socket_path, tcp_form(url), **options) as connection:
            yield connection
    else:
        with connect(url, proxy=None, **options) as connection:
            yield connection


def exchange(connection: Any, frame: dict[str, Any], timeout: float) -> Any:
    """Send ``frame``, return the reply decoded (a string when it is not JSON).

    Raises:
        CapacityReachedError: the reply refuses the session at capacity (so :func:`_settled` tries again).
    """
    from websockets.exceptions import ConnectionClosed

    try:
        connection.send(json.dumps(frame))
    except ConnectionClosed:
        pass  # a server refusing the session closes it at once: its reason may still be there to read
    reply = connection.recv(timeout=timeout)
    try:
        decoded = json.loads(reply)
    except (TypeError, ValueError):
        return reply
    data = decoded.get("data") if isinstance(decoded, dict) and decoded.get("type") == "error" else None
    if isinstance(data, dict) and data.get("code") == ErrorCode.CAPACITY_REACHED.value:
        raise CapacityReachedError(ErrorCode.CAPACITY_REACHED.value, str(data.get("message", "")))
    return decoded


@dataclasses.dataclass(frozen=True)
class Face:
    """How the checks act on a server: through its spaces (published, or mapped from its JSON
    schemas), or, for a tool env without spaces, by listing its tools."""

    spaces: Any  # openenv_gym.env.ServerSpaces, or None for a tool env
    published: bool

    @property
    def tools(self) -> bool:
        return self.spaces is None

    def actions(self, count: int, seed: int = 0) -> list[dict[str, Any]]:
        """``count`` wire actions, sampled from the action space seeded with ``seed`` (a tool env: list_tools)."""
        if self.spaces is None:
            return [dict(LIST_TOOLS)]
        space = self.spaces.action_space
        space.seed(seed)
        return [self.spaces.action_to_wire(space.sample()) for _ in range(count)]


def face_of(subject: Subject, schema: Any = None) -> Face:
    """The subject's face (see :class:`Face`); raises what reading its spaces raises."""
    from ..env import resolve_spaces
    from ..tool_face import offers_tools

    if schema is None:
        schema = get_json(subject, "/schema")
    if isinstance(schema, dict) and offers_tools(schema) and not schema.get("spaces"):
        return Face(None, published=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fields without a space: the check_env line shows the warning
        spaces = resolve_spaces(
            subject.url, subject.timeout, json_schema_fallback=True, token=subject.token, schema=schema
        )
    return Face(spaces, published=spaces.published)
