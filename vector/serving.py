"""`Serving`: what a vector env's servers serve, read from the first one's ``/schema``: the face of
their spaces, the server-side vector env if any, and so the kind of block its sub-envs run in."""

from __future__ import annotations

import dataclasses
from typing import Any

from openenv_gym.env import resolve_spaces
from openenv_gym.face import SpacesFace, wants_tool_face
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode

from .make_blocks import tool_faces
from .vector_block import choose_backend

__all__ = ["Serving"]


@dataclasses.dataclass(frozen=True)
class Serving:
    """What the servers serve.

    Attributes:
        face: the face of a sub-env's spaces (the vector backend's, with one).
        backend: the server-side vector env (``None``: one env per sub-env).
        batched: batch sessions (else one plain session per sub-env).
        tool_schema: a tool env's ``/schema`` (``None``: no tool face).
        metadata: the vector env's ``metadata`` about the backend (which, why, its render modes).
    """

    face: SpacesFace
    backend: str | None
    batched: bool
    tool_schema: dict[str, Any] | None
    metadata: dict[str, Any]

    @classmethod
    def read(
        cls,
        schema: dict[str, Any],
        url: str,
        *,
        tool_calls: bool | None,
        batched: bool | None,
        vector_backend: str,
        autoreset_mode: WireAutoresetMode,
        json_schema_fallback: bool,
        timeout: float,
        token: str | None,
        render_mode: str | None,
    ) -> Serving:
        """Decide from the first server's ``/schema``, as the arguments of ``RemoteVectorEnv`` ask.

        Raises:
            ValueError: the arguments ask for what the servers cannot do (the message says which).
        """
        if wants_tool_face(tool_calls, schema, url):
            if batched:
                raise ValueError("tool calls go one session per sub-env: batched=True cannot be given with them")
            face = tool_faces(list(schema.get("tools") or []))[0]
            return cls(face, None, False, schema, {})
        face = resolve_spaces(url, timeout, json_schema_fallback=json_schema_fallback, token=token, schema=schema)
        choice = choose_backend(vector_backend, autoreset_mode, batched, schema, url, timeout, token, render_mode)
        if batched is None:  # openenv-gym servers publish spaces and serve /ws/batch; OpenEnv's do neither
            batched = face.published
        return cls(choice.face or face, choice.name, batched, None, choice.metadata)
