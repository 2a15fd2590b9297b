"""Clients of an environment server: one session over ``/ws``, synchronous (:class:`EnvClient`, on
websockets' Sans-I/O protocol and a blocking socket) or asyncio (:class:`AsyncEnvClient`); a batch
session over ``/ws/batch`` (:class:`BatchClient`), or one server-side vector env there
(:class:`VectorClient`); and ``GET`` of the server's JSON endpoints
(:func:`http_get_json`). Every wait is bounded by ``open_timeout`` or ``call_timeout``. They speak
OpenEnv's protocol, so they work with our servers and with OpenEnv's; they know nothing of
gymnasium."""

from __future__ import annotations

from ._http import auth_headers, http_get_json
from ._session import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_FRAME_BYTES, DEFAULT_OPEN_TIMEOUT, SessionClient, remote_error
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
    "SessionClient",
    "VectorClient",
    "auth_headers",
    "http_get_json",
    "remote_error",
]
