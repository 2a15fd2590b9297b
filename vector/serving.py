"""What the servers of a vector env serve, once they run: :class:`Serving`, read from the first one's
``/schema``: the face of their spaces, the server-side vector env if any, and so the kind of block its
sub-envs run in, and the render mode their envs are made in; :func:`check_attached` for running servers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openenv_gym.env import check_served, render_metadata, resolve_spaces
from openenv_gym.face import SpacesFace, wants_tool_face
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.task_catalog import task_resets_of

from .make_blocks import tool_faces
from .vector_block import choose_backend

if TYPE_CHECKING:
    from openenv_gym.client.task_resets import TaskResets
    from openenv_gym.providers import Provider

__all__ = ["Serving", "check_attached"]


def check_attached(urls: list[str], providers: list[Provider], server: str | None, timeout: float) -> None:
    """Check that the running servers a vector env was given (``base_urls``) serve ``server``.

    Raises:
        EnvMismatchError: one serves something else (see :func:`~openenv_gym.env.check_served`).
    """
    for url, provider in dict(zip(urls, providers)).items():  # a URL given twice is asked once
        check_served(url, server, timeout, provider.token)


@dataclasses.dataclass(frozen=True)
class Serving:
    """What the servers serve.

    Attributes:
        face: the face of a sub-env's spaces (the vector backend's, with one).
        backend: the server-side vector env (``None``: one env per sub-env).
        batched: batch sessions (else one plain session per sub-env).
        tool_schema: a tool env's ``/schema`` (``None``: no tool face).
        metadata: the vector env's ``metadata`` about the render modes and the backend (which, why).
        render_mode: what the sessions' envs are made in (``None``: no render mode, or the servers
            render nothing: they publish no render modes).
        task_resets: how plain sessions' resets pick tasks on a server with OpenEnv 0.10's Task
            API (:func:`~openenv_gym.task_catalog.task_resets_of`; ``None``: options as given).
    """

    face: SpacesFace
    backend: str | None
    batched: bool
    tool_schema: dict[str, Any] | None
    metadata: dict[str, Any]
    render_mode: str | None
    task_resets: TaskResets | None = None

    @classmethod
    def read(
        cls,
        url: str,
        schema_of: Callable[[str, float], dict[str, Any]],
        *,
        tool_calls: bool | None,
        batched: bool | None,
        vector_backend: str,
        autoreset_mode: WireAutoresetMode,
        json_schema_fallback: bool,
        timeout: float,
        token: str | None,
        render_mode: str | None,
        split: str | None = None,
    ) -> Serving:
        """Decide from the first server's ``/schema``, as the arguments of ``RemoteVectorEnv`` ask.

        ``schema_of(url, timeout)`` reads it (``RemoteVectorEnv._server_schema``: from_env_fns gives
        its local env's spaces instead); ``split`` is the default split of resets on a Task API server.

        Raises:
            ValueError: the arguments ask for what the servers cannot do (the message says which),
                ``render_mode="human"`` among them, or a ``split`` they cannot take.
        """
        schema = schema_of(url, timeout)
        task_resets = task_resets_of(url, schema, timeout, token, split)
        render = render_metadata(schema, render_mode, url)  # "human" and unknown modes raise here
        served = render_mode if render is not None else None
        metadata = render or {"render_modes": []}
        if wants_tool_face(tool_calls, schema, url):
            if batched:
                raise ValueError("tool calls go one session per sub-env: batched=True cannot be given with them")
            face = tool_faces(list(schema.get("tools") or []))[0]
            return cls(face, None, False, schema, metadata, served, task_resets)
        face = resolve_spaces(url, timeout, json_schema_fallback=json_schema_fallback, token=token, schema=schema)
        choice = choose_backend(vector_backend, autoreset_mode, batched, schema, url, timeout, token, served)
        if batched is None:  # openenv-gym servers publish spaces and serve /ws/batch; OpenEnv's do neither
            batched = face.published
        metadata = {**metadata, **choice.metadata}
        return cls(choice.face or face, choice.name, batched, None, metadata, served, task_resets)
