"""Clients of an environment server: one session over ``/ws``, synchronous (:class:`EnvClient`, on
websockets' Sans-I/O protocol and a blocking socket) or asyncio (:class:`AsyncEnvClient`); a batch
session over ``/ws/batch`` (:class:`BatchClient`), or one server-side vector env there
(:class:`VectorClient`); and ``GET`` of the server's JSON endpoints
(:func:`http_get_json`). Every wait is bounded by ``open_timeout`` or ``call_timeout``. They speak
OpenEnv's protocol, so they work with our servers and with OpenEnv's; they know nothing of
gymnasium.

Each client holds a connection (:class:`~openenv_gym.client.sync_connection.SyncConnection`, or
:class:`~openenv_gym.client.async_connection.AsyncConnection`) handed the logic of its kind of
session (a :class:`~openenv_gym.client.session_kind.SessionKind`), as a websockets ``Connection``
is handed its protocol, and a step transport (the WebSocket or shared memory,
:class:`~openenv_gym.client.step_transport.StepTransport`); the client makes its kind's calls on
it. No client or connection extends another. The names load on first use (PEP 562), so a plain
env's ``EnvClient`` does not import the batch, vector or asyncio clients.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._http import auth_headers, http_get_json
    from ._session import (
        DEFAULT_CALL_TIMEOUT,
        DEFAULT_MAX_FRAME_BYTES,
        DEFAULT_OPEN_TIMEOUT,
        SessionTerms,
        remote_error,
    )
    from .async_client import AsyncEnvClient
    from .batch_client import BatchClient
    from .sync_client import EnvClient
    from .vector_client import VectorClient

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_OPEN_TIMEOUT",
    "AsyncEnvClient",
    "BatchClient",
    "EnvClient",
    "SessionTerms",
    "VectorClient",
    "auth_headers",
    "http_get_json",
    "remote_error",
]

# Each public name and the module that defines it.
_MODULES = {
    "DEFAULT_CALL_TIMEOUT": "._session",
    "DEFAULT_MAX_FRAME_BYTES": "._session",
    "DEFAULT_OPEN_TIMEOUT": "._session",
    "SessionTerms": "._session",
    "remote_error": "._session",
    "auth_headers": "._http",
    "http_get_json": "._http",
    "AsyncEnvClient": ".async_client",
    "BatchClient": ".batch_client",
    "EnvClient": ".sync_client",
    "VectorClient": ".vector_client",
}


def __getattr__(name: str) -> Any:
    try:
        module = _MODULES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
