"""`RemoteEnv`: a ``gymnasium.Env`` whose ``reset`` and ``step`` run on an environment server; a thin layer
over an :class:`~openenv_gym.env_core.EnvCore` and the :class:`~openenv_gym.client.EnvClient` it calls."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, NoReturn, SupportsFloat

import gymnasium as gym

from ._lost_server import said_if_the_server_died
from .client import EnvClient
from .env_core import ClosedEnvError, EnvCore, reset_kwargs
from .errors import SnapshotError
from .face import ServerSpaces, shm_refusal, shm_refused
from .make_options import MakeOptions, Timeouts, build_provider
from .providers import Provider, URLProvider
from .providers.fleet import Fleet
from .redaction import hide_token_kwarg
from .rendering import own_frame, render_metadata
from .seats import seat_query, seat_schema
from .served import check_served, read_core, resolve_spaces, server_face

if TYPE_CHECKING:
    from .snapshot import Snapshot

__all__ = ["ClosedEnvError", "RemoteEnv", "ServerSpaces", "make_remote_env"]  # and, as before their modules:
__all__ += ["build_provider", "check_served", "own_frame", "render_metadata", "resolve_spaces", "seat_query"]
__all__ += ["seat_schema", "server_face", "shm_refusal"]


def _shutdown(client: EnvClient, fleet: Fleet | None) -> None:
    try:
        client.close()
    finally:
        if fleet is not None:  # a fork's server is its parent's
            fleet.close(parallel=False)  # a finalizer: see Fleet.close


class RemoteEnv(gym.Env[Any, Any]):
    """A Gymnasium environment served by another process, container or machine.

    The spaces come from the server's ``/schema``; ``reset(seed=, options=)`` and ``step`` are
    forwarded over one WebSocket session. Rewards are Python ``float`` (OpenEnv's ``null`` reward
    is ``0.0``) and flags Python ``bool``, as Gymnasium's and Stable-Baselines3's checkers expect;
    a server without our ``truncated`` extension reports every end as ``terminated`` (its
    ``done``). Usually made with ``gym.make``:

    Example:
        >>> import gymnasium as gym, openenv_gym
        >>> env = gym.make("openenv/CartPole-v1")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(0)
        >>> type(reward), type(terminated)
        (<class 'float'>, <class 'bool'>)
        >>> env.close()

    An action outside the action space raises :class:`~openenv_gym.errors.InvalidActionError`
    before anything is sent (nothing is coerced: ``1.7`` is no Discrete action). A call after
    :meth:`close` raises :class:`ClosedEnvError`.

    An env that offers tools and no Gymnasium spaces of its own (``openenv/CodingTools-v0``, an
    OpenEnv MCP server) gets the tool face of :mod:`openenv_gym.tool_face`: one tool call as JSON
    text in, ``'{"name": "run_python", "arguments": {"code": "print(1)"}}'``, text out, and
    ``info["tools"]`` in OpenAI format. ``tool_calls=True`` asks for it on an env that has spaces
    too (``openenv/Echo-v0``); ``tool_calls=False`` refuses it.

    Any server that speaks OpenEnv's protocol, including one built with OpenEnv itself, is wrapped
    by ``gym.make("openenv/Remote-v0", base_url="http://host:8000")`` (that id sets
    ``json_schema_fallback=True``). With another id, ``base_url`` must be a server of that env (its
    ``/metadata`` says what it serves; :class:`~openenv_gym.errors.EnvMismatchError` otherwise).

    Args:
        server: what the provider serves: a Gymnasium id or ``"module:attr"``.
        render_mode: as for a local env, one the server publishes (its ``metadata["render_modes"]``):
            :meth:`render` returns the frames (:mod:`openenv_gym.rendering` says what else).
        agent: on a server of a PettingZoo env, the seat this env plays (:mod:`openenv_gym.seats` says
            how seats and games go, for this argument and the next four).
        game: the id of a game to join.
        game_token: the game's token (a game is known by its id and token together).
        opponents: seats the server plays, as ``{agent: policy}``.
        turn_timeout: seconds a turn of this seat's may take, at most.
        transport: how steps travel (other calls take the WebSocket): ``"auto"`` (default) takes shared
            memory with an openenv-gym server on this host that offers it, else the WebSocket; ``"ws"``;
            ``"shm"`` fails, saying why, where it cannot be had (:attr:`transport` and
            :attr:`transport_reason` say which, and why). The results are the same (info as JSON).
        **options: the options every remote env takes, declared once by :meth:`MakeOptions.parse
            <openenv_gym.make_options.MakeOptions.parse>` (``base_url``, ``provider``,
            ``provider_kwargs``, ``env_kwargs``, ``token``, the timeouts, ``json_schema_fallback``,
            ``tool_calls``...), and the environment's own, which go to it on the server as with a
            local ``gym.make``: ``gym.make("openenv/CartPole-v1", sutton_barto_reward=True)``.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium.Env declares it so
    _spec: gym.envs.registration.EnvSpec | None = None
    _parent: RemoteEnv | None = None  # a fork's: the env whose server it is on, kept alive while it is

    @property
    def spec(self) -> gym.envs.registration.EnvSpec | None:
        """The spec ``gym.make`` gave the env, its ``max_episode_steps`` the time limit the server
        applies (as a local env's ``TimeLimit`` states it); its ``token`` has a repr that hides it."""
        return self._spec

    @spec.setter
    def spec(self, spec: gym.envs.registration.EnvSpec | None) -> None:
        if spec is not None and "_core" in self.__dict__:
            self._core.env_id = spec.id  # errors name the id gym.make was given
            spec = self._core.spec(spec)  # with the time limit the server applies
        self._spec = hide_token_kwarg(spec)

    def __init__(
        self,
        server: str | None = None,
        *,
        render_mode: str | None = None,
        agent: str | None = None,
        game: str | None = None,
        game_token: str | None = None,
        opponents: dict[str, str] | None = None,
        turn_timeout: float | None = None,
        transport: str = "auto",
        **options: Any,
    ) -> None:
        from .task_catalog import attached_split  # loaded when an env is made: importing stays light

        split = attached_split(options)  # for a running server: its resets' default split
        # The other options are declared once, by MakeOptions.parse (a spec's sessions_per_server is make_vec's).
        make = MakeOptions.parse(server=server, **options)
        fleet = make.fleet()
        (url,) = fleet.start()
        token = make.token or fleet.token
        attached = isinstance(fleet.providers[0], URLProvider)  # started by someone else: is it this env?
        try:
            core = read_core(url, make, token, attached=attached, agent=agent, render_mode=render_mode, split=split)
        except BaseException:
            fleet.close()
            raise
        seat = seat_query(agent, game, game_token, opponents, turn_timeout)
        self._open(core, fleet, fleet.providers[0], make.timeouts, token, seat=seat, transport=transport)

    def _open(
        self,
        core: EnvCore,
        fleet: Fleet | None,
        provider: Provider,
        timeouts: Timeouts,
        token: str | None,
        *,
        seat: dict[str, str] | None = None,
        transport: str = "ws",
    ) -> None:
        """Become the env of ``core`` over a new session on its server: what ``gym.make`` and
        :meth:`fork` both end with. The session's server is ``fleet``'s (``None``: a fork's, its parent's)."""
        self._core, self.provider, self._timeouts, self._token = core, provider, timeouts, token
        self.server, self.base_url, self.render_mode = core.info.serves, core.info.base_url, core.render_mode
        self.metadata = core.render or type(self).metadata
        self.action_space, self.observation_space = core.face.action_space, core.face.observation_space
        client = EnvClient(self.base_url, **timeouts.session(), env_id=self.server, token=token, transport=transport)
        client.kind.task_resets = core.task_resets
        self._client, self._closer = client, weakref.finalize(self, _shutdown, client, fleet)
        try:
            client.kind.take_seat(seat or {})
            no_shm = shm_refusal(core.face, seat or {})
            if no_shm is not None:
                if transport == "shm":  # refused before any connection
                    raise shm_refused(no_shm)
                client.keep_to_websocket(no_shm)
            if core.render is not None and core.render_mode is not None:
                client.ask_render_mode(core.render_mode)
            client.connect()
            request = core.face.tool_list_request()
            if request is not None:  # an OpenEnv server lists its tools in no /schema: ask the session
                core.face.take_tool_list(client.step(request))
        except BaseException:
            self._closer()
            raise

    def __repr__(self) -> str:
        return f"RemoteEnv({self.server or '?'}, {self.base_url})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            f"{self!r} holds a live session with its server and cannot be pickled or copied; make the env "
            "where it is used instead: pass a function that calls gym.make (SB3's SubprocVecEnv and "
            "Gymnasium's AsyncVectorEnv take env functions), or gym.make_vec(..., num_envs=N) for many"
        )

    def _check_open(self, call: str) -> None:
        if not self._closer.alive:
            raise ClosedEnvError(repr(self), call)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._check_open("reset")
        super().reset(seed=seed)
        with said_if_the_server_died(self.provider):
            return self._core.reset_result(self._client.reset(**reset_kwargs(seed, options)))

    @property
    def transport(self) -> str:
        """``"shm"`` while the steps go through shared memory with the server, else ``"ws"``."""
        return self._client.transport

    @property
    def transport_reason(self) -> str:
        """Why the steps take the transport they take."""
        return self._client.transport_reason

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Send ``action``: a value of ``action_space`` (a ``Dict`` action as a plain ``dict``), or
        the fields of the server's own action model as a dict (OpenEnv's ``{"code": ...}``); with
        the tool face, one tool call as JSON text or as a dict (a bad one is an error observation).

        Raises:
            InvalidActionError: ``action`` is not in the action space; nothing was sent.
            EpisodeEndedError: the episode ended (``terminated`` or ``truncated``): reset first.
            ClosedEnvError: the env was closed.
        """
        self._check_open("step")
        core, client = self._core, self._client
        if client.link is not None:  # only a face of published spaces takes shared memory
            value = core.shared_value(action)
            with said_if_the_server_died(self.provider):
                result = core.shared_result(client.step_shared(value))
        else:
            wire = core.wire_action(action, client.kind.check_can_step)  # else the step frame checks it
            if isinstance(wire, tuple):  # a malformed tool call, answered without a round trip
                return wire
            with said_if_the_server_died(self.provider):
                result = core.face.step_result(client.step(wire))
        result, at_limit = core.count_step(result)
        if at_limit:
            client.kind.end_episode()
        return result

    def render(self) -> Any:
        """The server's frame in ``render_mode``: an RGB ``uint8`` array (``rgb_array``), text
        (``ansi``), a list of them (the ``*_list`` modes), or ``None`` without a render mode.

        Raises:
            NotImplementedError: the server publishes no render modes.
            RemoteError: the env's ``render()`` raised on the server.
        """
        self._check_open("render")
        return own_frame(self._client.render()) if self._core.asks_frame(repr(self)) else None

    def state(self) -> dict[str, Any]:
        """The session's state on the server (``episode_id``, ``step_count``, ...)."""
        self._check_open("state")
        return self._client.state()

    def close(self) -> None:
        """Close the session and stop the server this env started; idempotent."""
        self._closer()

    def snapshot(self, *, portable: bool = False) -> Snapshot:
        """Have the server keep the env's current state (its whole env: random generators, time
        limit's count, wrappers); returns a :class:`~openenv_gym.snapshot.Snapshot`. With
        ``portable``, it also holds the state as sealed bytes another server of the env restores
        (sharing this one's ``OPENENV_GYM_SNAPSHOT_KEY``). :func:`openenv_gym.snapshot.snapshot`
        saves ``gym.make``'s wrappers on this side too.

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
            SnapshotError: the session holds as many snapshots, or bytes, as the server allows.
        """
        self._check_open("snapshot")
        self._core.check_snapshots(repr(self))
        return self._core.snapshot(self._client.snapshot(portable))

    def restore(self, snapshot: Snapshot) -> tuple[Any, dict[str, Any]]:
        """Put the env back into ``snapshot``'s state; returns that state's observation and info
        (an episode that had ended is ended again). :meth:`EnvCore.restore_request
        <openenv_gym.env_core.EnvCore.restore_request>` says which handles go by id, which by their bytes.

        Raises:
            SnapshotError: the state is not kept here and the handle holds no portable bytes (or
                bytes this server did not seal).
        """
        self._check_open("restore")
        core = self._core
        core.check_snapshots(repr(self))
        request = core.restore_request(snapshot)
        try:
            frame = self._client.restore(*request)
        except SnapshotError as exc:  # by id: the handle's bytes may stand in (EnvCore.restore_request)
            frame = self._client.restore(*core.restore_request(snapshot, exc))
        return core.restored(snapshot, frame)

    def release(self, *snapshots: Snapshot) -> None:
        """Have the server drop these snapshots' states (those this session took; others are left)."""
        self._check_open("release")
        ids = self._core.releasable(snapshots)
        if ids:
            self._client.release(ids)

    def fork(self, count: int) -> list[RemoteEnv]:
        """``count`` new envs, each a new session on this env's server starting from its current state.

        They share this env's server, spaces and face, and are independent of it and of each other
        from then on. Close them before this env (closing it stops a server it started).
        :func:`openenv_gym.snapshot.fork` forks an env with its client-side wrappers.

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted.
            CapacityReachedError: the server has no session slot left for a fork.
        """
        self._core.check_fork_count(count)
        self._check_open("fork")
        self._core.check_snapshots(repr(self))
        client = self._client
        # The server copies the state while the forks' sessions open (Git-v0 tars its workspace then).
        client.begin("snapshot", client.kind.snapshot, False)
        children: list[RemoteEnv] = []
        handle: Snapshot | None = None
        try:
            try:
                children.extend(self._forked() for _ in range(count))
            finally:  # the snapshot's reply is read whatever happened, so the session stays in step
                handle = self._core.snapshot(client.complete())
            for child in children:  # every restore sent before any is read: the server works on all at once
                child._client.begin("restore", child._client.kind.restore, handle.id, None)
            for child in children:
                child._core.restored(handle, child._client.complete())
        except BaseException:
            for child in children:
                child.close()
            raise
        finally:
            if handle is not None:
                self.release(handle)
        return children

    def _forked(self) -> RemoteEnv:
        """A new session on this env's server, with a fork's core: a fork before its restore."""
        fork = type(self).__new__(type(self))
        fork._parent = self  # the server lives as long as the env that started it
        fork._open(self._core.forked(), None, self.provider, self._timeouts, self._token)
        fork.spec = self.spec
        return fork


def make_remote_env(**kwargs: Any) -> RemoteEnv:
    """``RemoteEnv(**kwargs)``: the entry point ``gym.make`` calls for the catalog's ids. A function,
    since ``gym.make`` judges a ``render_mode`` by its creator's class-level ``metadata`` (and warns
    once per env): a remote env's render modes are its server's, unknown until it answers."""
    return RemoteEnv(**kwargs)
