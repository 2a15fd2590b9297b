"""The blocks of a vector env, made for each kind from where its servers run (``placed``: url, provider, sub-envs)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from openenv_gym.client.vector_client import VectorClient
from openenv_gym.face import WireFace, shm_refused, shm_space_refusal
from openenv_gym.spaces import ToolCallSpace

from .batch_block import BatchBlock, BatchCodec
from .plain_block import PlainBlock
from .plain_session import PlainSessionBatch
from .vector_block import VectorBlock, VectorCodec

if TYPE_CHECKING:
    import gymnasium as gym

    from openenv_gym.providers import Provider
    from openenv_gym.providers.fleet import Fleet
    from openenv_gym.tool_face import ToolFace

    from .block import Block, BlockCodec
    from .serving import Serving

__all__ = [
    "batch_blocks",
    "list_tools",
    "make_blocks",
    "open_blocks",
    "plain_blocks",
    "tool_faces",
    "transport_of",
    "vector_blocks",
]

#: Where each server runs and which sub-envs it serves: ``(url, provider, (start, stop))``.
Placed = Sequence[tuple[str, "Provider", tuple[int, int]]]


def make_blocks(
    serving: Serving,
    placed: Placed,
    batch_client: Callable[[int, int], Callable[..., Any]],
    name: Callable[[], str | None],
    *,
    copy: bool,
    check_actions: bool = True,
    wire_codec: str,
    transport: str = "auto",
    **options: Any,
) -> tuple[BlockCodec, list[Block[Any]]]:
    """The blocks of the kind ``serving`` calls for (not connected yet), and their codec.

    Args:
        batch_client: opens a batch session of sub-envs ``start:stop`` (``RemoteVectorEnv._batch_client``).
        name: the env's name, for errors; ``copy``, ``check_actions``: as :class:`~.batch_block.BatchCodec`'s.
        wire_codec: ``"binary"`` or ``"json"``, for batch and vector sessions.
        transport: how a vector session's steps travel (:data:`~openenv_gym.client.vector_client.TRANSPORTS`);
            other sessions take the WebSocket (``"shm"`` for them raises ``ValueError``).
        options: the sessions' own (timeouts, env id, autoreset mode); their envs are made in
            ``serving.render_mode``.
    """
    options["render_mode"] = serving.render_mode
    face, num_envs = serving.face, sum(stop - start for _, _, (start, stop) in placed)
    if serving.backend is not None:
        codec: BlockCodec = VectorCodec(face.action_space, face.observation_space, num_envs, name)
        no_shm = shm_space_refusal(face.action_space, face.observation_space)  # known from /schema
        if no_shm is not None and transport == "shm":  # refused before any block connects
            raise shm_refused(no_shm)
        return codec, vector_blocks(
            placed,
            serving.backend,
            face.observation_space,
            codec=wire_codec,
            transport=transport,
            no_shm=no_shm,
            **options,
        )
    if transport == "shm":
        raise ValueError(
            "transport='shm' serves server-side vector envs; this one steps one env per sub-env "
            f"({serving.metadata.get('vector_backend_reason', 'no vector backend')})"
        )
    codec = BatchCodec(face, num_envs, name, copy=copy, check_actions=check_actions)
    if serving.batched:
        return codec, batch_blocks(placed, batch_client, codec=wire_codec, **options)
    return codec, plain_blocks(placed, serving.tool_schema, task_resets=serving.task_resets, **options)


def open_blocks(
    serving: Serving,
    fleet: Fleet,
    batch_client: Callable[[int, int], Callable[..., Any]],
    name: Callable[[], str | None],
    action_space: gym.Space[Any],
    **options: Any,
) -> tuple[BlockCodec, list[Block[Any]]]:
    """The blocks :func:`make_blocks` makes (same arguments) on the started ``fleet``'s servers, each
    serving the sub-envs its layout gave it, connected: their servers make their envs.

    A tool env's sub-envs get the tools :func:`list_tools` finds, and so do its ``action_space``
    (the vector env's) and that space's own. If a block cannot connect, every block is closed
    before the error propagates.
    """
    placed = list(zip(fleet.urls, fleet.providers, fleet.layout.sub_envs))
    codec, blocks = make_blocks(serving, placed, batch_client, name, **options)
    try:
        for block in blocks:
            block.connect()
        if serving.tool_schema is not None:  # an OpenEnv server lists no tools in /schema: ask a session
            list_tools(blocks, (serving.face.action_space, *getattr(action_space, "spaces", ())))
    except BaseException:
        for block in blocks:
            block.close()
        raise
    return codec, blocks


def batch_blocks(placed: Placed, client: Callable[[int, int], Callable[..., Any]], **options: Any) -> list[Block[Any]]:
    """One batch session per server; ``client(start, stop)`` opens it (``from_env_fns``' sends the factories)."""
    return [
        BatchBlock(
            functools.partial(client(start, stop), envs=stop - start, token=provider.token, **options),
            url,
            provider,
            start,
            stop,
        )
        for url, provider, (start, stop) in placed
    ]


def vector_blocks(
    placed: Placed, backend: str, observation_space: gym.Space[Any], *, no_shm: str | None = None, **options: Any
) -> list[Block[Any]]:
    """One vector session per server: its sub-envs are one vector env of ``backend``. ``no_shm``:
    why shared memory cannot carry them (:func:`~openenv_gym.face.shm_space_refusal`), if it cannot:
    their steps then keep to the WebSocket without asking the server."""
    return [
        VectorBlock(
            functools.partial(
                _vector_client, no_shm, backend=backend, envs=stop - start, token=provider.token, **options
            ),
            url,
            provider,
            start,
            stop,
            backend=backend,
            observation_space=observation_space,
        )
        for url, provider, (start, stop) in placed
    ]


def _vector_client(no_shm: str | None, url: str, **options: Any) -> VectorClient:
    client = VectorClient(url, **options)
    if no_shm is not None:
        client.connection.steps.keep_to_websocket(no_shm)
    return client


def transport_of(blocks: Sequence[Block[Any]]) -> dict[str, str]:
    """``metadata["transport"]`` (``"shm"``, ``"ws"``, or ``"mixed"``) and ``["transport_reason"]``:
    how the connected blocks' steps travel, and why."""
    clients = [block.client for block in blocks if isinstance(block, VectorBlock)]
    if not clients:
        return {"transport": "ws", "transport_reason": "one env per sub-env: its sessions take the WebSocket"}
    kinds = {client.transport for client in clients}
    reasons = dict.fromkeys(client.transport_reason for client in clients)
    return {"transport": kinds.pop() if len(kinds) == 1 else "mixed", "transport_reason": "; ".join(reasons)}


def plain_blocks(placed: Placed, tool_schema: dict[str, Any] | None, **options: Any) -> list[Block[Any]]:
    """One plain session per sub-env; with a tool env's ``/schema``, each has a tool face of its own."""
    sub_envs = [(url, provider, index) for url, provider, (start, stop) in placed for index in range(start, stop)]
    faces: list[ToolFace | None] = [None] * len(sub_envs)
    if tool_schema is not None:
        faces = list(tool_faces(list(tool_schema.get("tools") or []), count=len(sub_envs)))
    return [
        PlainBlock(
            functools.partial(PlainSessionBatch, face=face, token=provider.token, **options),
            url,
            provider,
            index,
            index + 1,
        )
        for (url, provider, index), face in zip(sub_envs, faces)
    ]


def tool_faces(tools: list[dict[str, Any]], count: int = 0) -> list[Any]:
    """The vector env's own face of a tool env (text calls and results, passed through), or
    ``count`` sub-env faces with read-only results (vector infos merge dicts key by key)."""
    from openenv_gym.tool_face import ToolFace  # loaded only for a tool env

    if not count:
        face = ToolFace(tools)
        return [WireFace(face.action_space, face.observation_space, published=False)]
    return [ToolFace(tools, read_only_results=True) for _ in range(count)]


def list_tools(blocks: list[Block[Any]], spaces: Iterable[gym.Space[Any]]) -> None:
    """If the sub-envs' tool faces have no tools (an OpenEnv server lists none in ``/schema``), ask
    the first session, and give the list to every sub-env's face and to the tool-call ``spaces``."""
    faces = [block.client.face for block in blocks]
    request = faces[0].tool_list_request()
    if request is None:
        return
    answer = blocks[0].client.client.step(request)  # the first plain session's EnvClient
    for face in faces:
        face.take_tool_list(answer)
    names = tuple(tool["name"] for tool in faces[0].tools)
    for space in spaces:
        if isinstance(space, ToolCallSpace):
            space.tool_names = names
