"""`AsyncRemoteEnv`: a remote env for asyncio code, one episode at a time, many at once.

LLM trainers run dozens to hundreds of episodes concurrently, each at its own pace (a model
turn, a tool call, the next turn), so a lockstep vector step is the wrong shape for them.
``env = await openenv_gym.make_async(id)`` gives the same spaces, actions and results as
``gym.make(id)``, on one WebSocket session, without a thread or a process of its own::

    env = await openenv_gym.make_async("openenv/Echo-v0", tool_calls=True)
    prompt, info = await env.reset(seed=0)
    text, reward, terminated, truncated, info = await env.step('{"name": "echo_message", ...}')
    await env.aclose()

:class:`~openenv_gym.async_pool.AsyncEnvPool` hands out such envs from sessions it keeps open
on a few servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym

from .client import AsyncEnvClient
from .env import ClosedEnvError, server_face
from .errors import ConnectionLostError, RequestTimeoutError, ServerConnectError
from .face import Face, StepResult, wire_action
from .make_options import MakeOptions
from .providers import Provider

if TYPE_CHECKING:
    from .snapshot import Snapshot

__all__ = ["AsyncRemoteEnv", "make_async", "spec_options"]

ReplyT = TypeVar("ReplyT")


class AsyncRemoteEnv:
    """One session with an env server, driven from asyncio: ``await reset()``, ``await step()``.

    The results are ``RemoteEnv``'s: Python ``float`` rewards and ``bool`` flags, observations
    decoded with the action and observation spaces (or the tool face's text). A time limit
    (``max_episode_steps``, the registered spec's under :func:`make_async`) truncates the episode
    as Gymnasium's ``TimeLimit`` does. A call on a closed env raises :class:`ClosedEnvError`.

    Made by :func:`make_async` or by :meth:`AsyncEnvPool.acquire
    <openenv_gym.async_pool.AsyncEnvPool.acquire>`; :meth:`aclose` closes the session, or hands
    it back to its pool.

    Attributes:
        action_space, observation_space: as for ``gym.make`` of the same id.
        env_id: the Gymnasium id (or server target) it was made for.
        failed: the error that broke the session (the server died, a call timed out), if any.
    """

    def __init__(
        self,
        client: AsyncEnvClient,
        face: Face,
        *,
        env_id: str | None = None,
        max_episode_steps: int | None = None,
        release: Callable[[AsyncRemoteEnv], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        self._face = face
        self.env_id = env_id
        self.max_episode_steps = max_episode_steps
        self.action_space: gym.Space[Any] = face.action_space
        self.observation_space: gym.Space[Any] = face.observation_space
        self.failed: BaseException | None = None
        self._release = release
        self._closed = False
        self._elapsed = 0
        self._snapshot_support: dict[str, Any] | None = None  # /schema["snapshot"], read on first use

    def __repr__(self) -> str:
        return f"AsyncRemoteEnv({self.env_id or '?'}, {self._client.url})"

    @property
    def client(self) -> AsyncEnvClient:
        """The session's client."""
        return self._client

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The env's tools as its server lists them (``name``, ``description``, ``input_schema``); ``[]`` without the tool face.

        A reset's ``info["tools"]`` gives them in OpenAI format; this is the list before that
        conversion, for code that builds its own tool objects (the TRL integration's methods).
        """
        return list(self._face.tools)

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise ClosedEnvError(repr(self), call)

    async def _call(self, request: Awaitable[ReplyT]) -> ReplyT:
        try:
            return await request
        except (ConnectionLostError, RequestTimeoutError, ServerConnectError) as exc:
            self.failed = exc  # the session is gone: this env cannot go on
            raise

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; as ``gymnasium.Env.reset``."""
        self._check_open("reset")
        kwargs: dict[str, Any] = {}
        if seed is not None:
            kwargs["seed"] = seed
        if options is not None:
            kwargs["options"] = options
        frame = await self._call(self._client.reset(**kwargs))
        self._elapsed = 0
        return self._face.reset_result(frame)

    async def step(self, action: Any) -> StepResult:
        """Apply ``action``; as :meth:`RemoteEnv.step <openenv_gym.env.RemoteEnv.step>`, awaited: the
        same actions, results and errors (after the end of an episode, ``EpisodeEndedError``)."""
        self._check_open("step")
        self._client.kind.check_can_step()
        wire = wire_action(self._face, action, self.env_id)
        if isinstance(wire, tuple):  # a malformed tool call, answered without a round trip
            result = wire
        else:
            result = self._face.step_result(await self._call(self._client.step(wire)))
        self._elapsed += 1
        if self.max_episode_steps is not None and self._elapsed >= self.max_episode_steps:
            observation, reward, terminated, _, info = result
            result = (observation, reward, terminated, True, info)
            self._client.kind.end_episode()
        return result

    async def _check_snapshots(self) -> None:
        if self._snapshot_support is None:
            from .client import http_get_json
            from .snapshot import check_support

            client = self._client
            schema = await asyncio.to_thread(
                http_get_json, client.address, "/schema", timeout=client.open_timeout, token=client.token
            )
            self._snapshot_support = check_support(schema, repr(self), self.env_id)

    async def snapshot(self, *, portable: bool = False) -> Snapshot:
        """Have the server keep the env's current state (and this env's step count towards its
        time limit); as :meth:`RemoteEnv.snapshot <openenv_gym.env.RemoteEnv.snapshot>`, awaited."""
        from .snapshot import Snapshot

        self._check_open("snapshot")
        await self._check_snapshots()
        frame = await self._call(self._client.snapshot(portable))
        return Snapshot.of(frame, self._client.address, self._elapsed)

    async def restore(self, snapshot: Snapshot) -> tuple[Any, dict[str, Any]]:
        """Put the env back into ``snapshot``'s state; as :meth:`RemoteEnv.restore
        <openenv_gym.env.RemoteEnv.restore>`, awaited (the time limit counts on from the snapshot's step)."""
        from .errors import SnapshotError
        from .snapshot import falls_back, portable_bytes

        self._check_open("restore")
        await self._check_snapshots()
        frame = None
        if snapshot.server == self._client.address:
            try:
                frame = await self._call(self._client.restore(snapshot.id))
            except SnapshotError as exc:
                if not falls_back(snapshot, exc):
                    raise
        if frame is None:
            frame = await self._call(self._client.restore(portable=portable_bytes(snapshot, self.env_id)))
        self._elapsed = snapshot.elapsed_steps
        return self._face.restored_result(frame)

    async def release(self, *snapshots: Snapshot) -> None:
        """Have the server drop these snapshots' states (those this session took)."""
        self._check_open("release")
        ids = tuple(snapshot.id for snapshot in snapshots if snapshot.server == self._client.address)
        if ids:
            await self._call(self._client.release(ids))

    async def fork(self, count: int) -> list[AsyncRemoteEnv]:
        """``count`` new envs, each a new session on this env's server starting from its current
        state; as :meth:`RemoteEnv.fork <openenv_gym.env.RemoteEnv.fork>`, awaited. Close them
        (``aclose``) before this env."""
        if count < 1:
            raise ValueError(f"fork(count) needs a count of at least 1, got {count}")
        handle = await self.snapshot()
        client = self._client

        async def branch() -> AsyncRemoteEnv:
            twin = AsyncEnvClient(
                client.address,
                open_timeout=client.open_timeout,
                call_timeout=client.call_timeout,
                env_id=client.env_id,
                token=client.token,
            )

            async def close(env: AsyncRemoteEnv) -> None:
                await env.client.close()

            child = AsyncRemoteEnv(
                twin, self._face, env_id=self.env_id, max_episode_steps=self.max_episode_steps, release=close
            )
            child._snapshot_support = self._snapshot_support
            try:
                await child.restore(handle)
            except BaseException:
                await child.aclose()
                raise
            return child

        try:
            results = await asyncio.gather(*(branch() for _ in range(count)), return_exceptions=True)
        finally:
            await self.release(handle)
        failed = next((result for result in results if isinstance(result, BaseException)), None)
        if failed is not None:
            await asyncio.gather(*(r.aclose() for r in results if isinstance(r, AsyncRemoteEnv)))
            raise failed
        return [result for result in results if isinstance(result, AsyncRemoteEnv)]

    async def aclose(self) -> None:
        """Close the session (or hand it back to the pool it came from); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._release is not None:
            await self._release(self)
        else:
            await self._client.close()

    async def __aenter__(self) -> AsyncRemoteEnv:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def spec_options(env_id: str, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], int | None]:
    """The options a registered openenv id's spec gives, overridden by ``kwargs``, and its time limit.

    Raises:
        ValueError: ``env_id`` is not one of openenv-gym's remote envs.
    """
    import openenv_gym  # noqa: F401 - registers the catalog with Gymnasium

    spec = gym.spec(env_id)
    if spec.entry_point != "openenv_gym.env:make_remote_env":
        raise ValueError(
            f"{env_id!r} is not a remote env of openenv-gym's catalog (its entry point: {spec.entry_point})"
        )
    options = {**spec.kwargs, **kwargs}
    max_episode_steps = options.pop("max_episode_steps", spec.max_episode_steps)
    return options, max_episode_steps


async def open_face(
    client: AsyncEnvClient,
    base_url: str,
    server: str | None,
    provider: Provider,
    open_timeout: float,
    token: str | None,
    json_schema_fallback: bool,
    tool_calls: bool | None,
) -> Face:
    """Connect ``client`` and learn how the server's actions and observations travel."""
    face = await asyncio.to_thread(
        server_face, base_url, server, provider, open_timeout, token, json_schema_fallback, tool_calls
    )
    await client.connect()
    request = face.tool_list_request()
    if request is not None:  # an OpenEnv server lists its tools in no /schema: ask the session
        face.take_tool_list(await client.step(request))
    return face


async def make_async(env_id: str, **kwargs: Any) -> AsyncRemoteEnv:
    """``gym.make(env_id, **kwargs)`` for asyncio: an :class:`AsyncRemoteEnv` on a server of its own.

    Takes ``gym.make``'s keyword arguments for the id (``base_url=``, ``provider=``, ``tool_calls=``,
    the env's own, ``max_episode_steps=``...). The server is started in a worker thread, so the
    event loop keeps running; it is stopped by :meth:`AsyncRemoteEnv.aclose`.
    """
    options, max_episode_steps = spec_options(env_id, kwargs)
    make = MakeOptions.parse(**options)  # a spec's sessions_per_server is for pools and vector envs
    fleet = make.fleet()
    (url,) = await asyncio.to_thread(fleet.start)
    token = make.token or fleet.token
    timeouts = make.timeouts
    client = AsyncEnvClient(
        url, open_timeout=timeouts.open, call_timeout=timeouts.call, env_id=make.server, token=token
    )
    try:
        face = await open_face(
            client,
            url,
            make.server,
            fleet.providers[0],
            timeouts.open,
            token,
            make.json_schema_fallback,
            make.tool_calls,
        )
    except BaseException:
        await client.close()
        await asyncio.to_thread(fleet.close)
        raise

    async def release(env: AsyncRemoteEnv) -> None:
        try:
            await env.client.close()
        finally:
            await asyncio.to_thread(fleet.close)

    return AsyncRemoteEnv(client, face, env_id=env_id, max_episode_steps=max_episode_steps, release=release)
