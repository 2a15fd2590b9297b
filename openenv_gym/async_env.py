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
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym

from .client import AsyncEnvClient
from .env_core import ClosedEnvError, EnvCore, reset_kwargs
from .errors import ConnectionLostError, RequestTimeoutError, ServerConnectError, SnapshotError
from .face import StepResult
from .make_options import MakeOptions
from .providers import Provider, URLProvider
from .redaction import hide_token_kwarg
from .rendering import own_frame
from .served import read_core

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
    it back to its pool. A thin layer over an :class:`~openenv_gym.env_core.EnvCore` (this env's
    own: :meth:`EnvCore.fresh <openenv_gym.env_core.EnvCore.fresh>` gives one per session) and the
    session's client, whose calls it awaits.

    Attributes:
        action_space, observation_space: as for ``gym.make`` of the same id.
        env_id: the Gymnasium id (or server target) it was made for.
        max_episode_steps: the time limit (``None``: the server's only).
        spec: as ``gym.make``'s env's: the id, the options it was made with, and the time limit in
            force (this side's or the server's) as its ``max_episode_steps``; ``None`` for a pool's.
        render_mode, metadata: as ``gym.make``'s (``metadata["render_modes"]`` the server's).
        failed: the error that broke the session (the server died, a call timed out), if any.
    """

    def __init__(
        self,
        client: AsyncEnvClient,
        core: EnvCore,
        *,
        release: Callable[[AsyncRemoteEnv], Awaitable[None]] | None = None,
        spec: gym.envs.registration.EnvSpec | None = None,
    ) -> None:
        self._client = client
        self._core = core
        client.kind.task_resets = core.task_resets  # the session's resets pick tasks as its server takes them
        self.env_id = core.env_id
        self.max_episode_steps = core.max_episode_steps
        self.spec = spec
        self.render_mode = core.render_mode
        self.metadata: dict[str, Any] = core.render or {"render_modes": []}
        self.action_space: gym.Space[Any] = core.face.action_space
        self.observation_space: gym.Space[Any] = core.face.observation_space
        self.failed: BaseException | None = None
        self._release = release
        self._closed = False

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
        return list(self._core.face.tools)

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
        return self._core.reset_result(await self._call(self._client.reset(**reset_kwargs(seed, options))))

    async def step(self, action: Any) -> StepResult:
        """Apply ``action``; as :meth:`RemoteEnv.step <openenv_gym.env.RemoteEnv.step>`, awaited: the
        same actions, results and errors (after the end of an episode, ``EpisodeEndedError``)."""
        self._check_open("step")
        core, client = self._core, self._client
        wire = core.wire_action(action, client.kind.check_can_step)  # else the step frame checks it
        if isinstance(wire, tuple):  # a malformed tool call, answered without a round trip
            result = wire
        else:
            result = core.face.step_result(await self._call(client.step(wire)))
        result, at_limit = core.count_step(result)
        if at_limit:
            client.kind.end_episode()
        return result

    async def render(self) -> Any:
        """The server's frame in ``render_mode``; as :meth:`RemoteEnv.render
        <openenv_gym.env.RemoteEnv.render>`, awaited (``None`` without a render mode)."""
        self._check_open("render")
        if not self._core.asks_frame(repr(self)):
            return None
        return own_frame(await self._call(self._client.render()))

    async def snapshot(self, *, portable: bool = False) -> Snapshot:
        """Have the server keep the env's current state (and this env's step count towards its
        time limit); as :meth:`RemoteEnv.snapshot <openenv_gym.env.RemoteEnv.snapshot>`, awaited."""
        self._check_open("snapshot")
        self._core.check_snapshots(repr(self))
        return self._core.snapshot(await self._call(self._client.snapshot(portable)))

    async def restore(self, snapshot: Snapshot) -> tuple[Any, dict[str, Any]]:
        """Put the env back into ``snapshot``'s state; as :meth:`RemoteEnv.restore
        <openenv_gym.env.RemoteEnv.restore>`, awaited (the time limit counts on from the snapshot's step)."""
        self._check_open("restore")
        core = self._core
        core.check_snapshots(repr(self))
        request = core.restore_request(snapshot)
        try:
            frame = await self._call(self._client.restore(*request))
        except SnapshotError as exc:  # by id: the handle's bytes may stand in (EnvCore.restore_request)
            frame = await self._call(self._client.restore(*core.restore_request(snapshot, exc)))
        return core.restored(snapshot, frame)

    async def release(self, *snapshots: Snapshot) -> None:
        """Have the server drop these snapshots' states (those this session took)."""
        self._check_open("release")
        ids = self._core.releasable(snapshots)
        if ids:
            await self._call(self._client.release(ids))

    async def fork(self, count: int) -> list[AsyncRemoteEnv]:
        """``count`` new envs, each a new session on this env's server starting from its current
        state; as :meth:`RemoteEnv.fork <openenv_gym.env.RemoteEnv.fork>`, awaited. Close them
        (``aclose``) before this env."""
        self._core.check_fork_count(count)
        handle = await self.snapshot()
        try:
            results = await asyncio.gather(*(self._forked(handle) for _ in range(count)), return_exceptions=True)
        finally:
            await self.release(handle)
        failed = next((result for result in results if isinstance(result, BaseException)), None)
        if failed is not None:
            await asyncio.gather(*(r.aclose() for r in results if isinstance(r, AsyncRemoteEnv)))
            raise failed
        return [result for result in results if isinstance(result, AsyncRemoteEnv)]

    async def _forked(self, handle: Snapshot) -> AsyncRemoteEnv:
        """A new session on this env's server, with a fork's core, restored to ``handle``."""
        client = self._client
        twin = AsyncEnvClient(
            client.address,
            open_timeout=client.open_timeout,
            call_timeout=client.call_timeout,
            env_id=client.env_id,
            token=client.token,
        )
        if self._core.renders and self._core.render_mode is not None:
            twin.ask_render_mode(self._core.render_mode)
        fork = AsyncRemoteEnv(twin, self._core.forked(), release=_close_session, spec=self.spec)
        try:
            await fork.restore(handle)
        except BaseException:
            await fork.aclose()
            raise
        return fork

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


async def _close_session(env: AsyncRemoteEnv) -> None:
    await env.client.close()


async def open_core(
    client: AsyncEnvClient,
    base_url: str,
    make: MakeOptions,
    provider: Provider,
    token: str | None,
    *,
    env_id: str | None = None,
    max_episode_steps: int | None = None,
    render_mode: str | None = None,
    split: str | None = None,
) -> EnvCore:
    """Read what the server at ``base_url`` serves (:func:`~openenv_gym.served.read_core`, in a worker thread),
    connect ``client`` (its env made in ``render_mode``), and have its session list the tools a tool face still needs."""
    attached = isinstance(provider, URLProvider)  # started by someone else: is it this env?
    core = await asyncio.to_thread(
        read_core,
        base_url,
        make,
        token,
        attached=attached,
        env_id=env_id,
        max_episode_steps=max_episode_steps,
        render_mode=render_mode,
        split=split,
    )
    if core.renders and core.render_mode is not None:
        client.ask_render_mode(core.render_mode)
    await client.connect()
    request = core.face.tool_list_request()
    if request is not None:  # an OpenEnv server lists its tools in no /schema: ask the session
        core.face.take_tool_list(await client.step(request))
    return core


async def make_async(env_id: str, **kwargs: Any) -> AsyncRemoteEnv:
    """``gym.make(env_id, **kwargs)`` for asyncio: an :class:`AsyncRemoteEnv` on a server of its own.

    Takes ``gym.make``'s keyword arguments for the id (``base_url=``, ``provider=``, ``tool_calls=``,
    ``render_mode=``, the env's own, ``max_episode_steps=``...). The server is started in a worker
    thread, so the event loop keeps running; it is stopped by :meth:`AsyncRemoteEnv.aclose`.
    """
    options, max_episode_steps = spec_options(env_id, kwargs)
    make_kwargs = dict(options)
    render_mode = make_kwargs.pop("render_mode", None)  # the session's, as RemoteEnv's
    from .task_catalog import attached_split  # loaded when an env is made: importing stays light

    split = attached_split(make_kwargs)  # for a running server: its resets' default split
    make = MakeOptions.parse(**make_kwargs)  # a spec's sessions_per_server is for pools and vector envs
    fleet = make.fleet()
    (url,) = await asyncio.to_thread(fleet.start)
    token = make.token or fleet.token
    timeouts = make.timeouts
    client = AsyncEnvClient(url, **timeouts.session(), env_id=make.server, token=token)
    try:
        core = await open_core(
            client,
            url,
            make,
            fleet.providers[0],
            token,
            env_id=env_id,
            max_episode_steps=max_episode_steps,
            render_mode=render_mode,
            split=split,
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

    # gym.make's spec: the registered one with the options given, and the time limit in force.
    made = dataclasses.replace(gym.spec(env_id), kwargs=options, max_episode_steps=None)
    return AsyncRemoteEnv(client, core, release=release, spec=hide_token_kwarg(core.spec(made)))
