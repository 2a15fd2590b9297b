"""`RemoteEnv`: a ``gymnasium.Env`` whose ``reset`` and ``step`` run on an environment server."""

from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING, Any, NoReturn, SupportsFloat

import gymnasium as gym

from ._lost_server import said_if_the_server_died
from .client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT, EnvClient, http_get_json
from .errors import EnvMismatchError, InvalidActionError, OpenEnvGymError, ServerConnectError
from .face import Face, PublishedSpaces, SchemaSpaces, SpacesFace, wants_tool_face, wire_action
from .make_options import MakeOptions
from .providers import Provider, URLProvider
from .providers.base import DEFAULT_STARTUP_TIMEOUT
from .providers.fleet import Fleet
from .redaction import hide_token_kwarg
from .spaces import space_from_json

if TYPE_CHECKING:
    from .snapshot import Snapshot

__all__ = [
    "ClosedEnvError",
    "RemoteEnv",
    "ServerSpaces",
    "build_provider",
    "check_served",
    "make_remote_env",
    "own_frame",
    "render_metadata",
    "resolve_spaces",
    "server_face",
]


class ClosedEnvError(OpenEnvGymError, gym.error.ClosedEnvironmentError):
    """A call on an env or vector env after its ``close()``: nothing is sent, nothing restarts.

    Attributes:
        env: the ``repr`` of the closed env.
        call: the method called.
    """

    def __init__(self, env: str, call: str) -> None:
        super().__init__(env, call)
        self.env = env
        self.call = call

    def __str__(self) -> str:
        return f"{self.call}() on {self.env} after close(): make a new env"


#: The spaces of a server and how their values travel (the spaces face of :mod:`openenv_gym.face`).
ServerSpaces = SpacesFace


def resolve_spaces(
    base_url: str,
    timeout: float,
    *,
    json_schema_fallback: bool = False,
    token: str | None = None,
    schema: Any = None,
) -> ServerSpaces:
    """The spaces of the server at ``base_url``, read from its ``/schema`` (or from ``schema``, read before).

    A server's own Gymnasium spaces (``/schema["spaces"]``) are always used when it publishes
    them. Otherwise, with ``json_schema_fallback``, they are built from its JSON schemas by
    :func:`openenv_gym.spaces.schema.openenv_spaces`, with one warning naming the fields left out.

    Raises:
        ServerConnectError: the server does not answer.
        ValueError: it publishes no Gymnasium spaces and ``json_schema_fallback`` is off.
        UnsupportedSpaceError: a field every action needs has no space (the message names it).
    """
    if schema is None:
        schema = http_get_json(base_url, "/schema", timeout=timeout, token=token)
    spaces = schema.get("spaces") if isinstance(schema, dict) else None
    if spaces:
        return PublishedSpaces(
            space_from_json(spaces["action"]), space_from_json(spaces["observation"]), schema.get("action")
        )
    if not json_schema_fallback or not isinstance(schema, dict):
        raise ValueError(
            f"the server at {base_url} publishes no Gymnasium spaces in /schema (an OpenEnv server?); "
            "to build spaces from its JSON schemas use gym.make('openenv/Remote-v0', base_url=...) "
            "or pass json_schema_fallback=True"
        )
    from .spaces.schema import openenv_spaces

    action, observation = openenv_spaces(schema)
    unmapped = {
        f"{mapped.role}.{path}": reason for mapped in (action, observation) for path, reason in mapped.unmapped.items()
    }
    if unmapped:
        listed = "; ".join(f"{path}: {reason}" for path, reason in unmapped.items())
        warnings.warn(
            f"openenv-gym: the server at {base_url} publishes JSON schemas only, and these fields have no "
            f"Gymnasium space, so they are left out of the spaces (optional action fields take the server's "
            f"default): {listed}",
            UserWarning,
            stacklevel=3,
        )

    return SchemaSpaces(action, observation, unmapped)


#: ``build_provider``'s parameters, in the order it took them positionally.
_BUILD_PROVIDER_PARAMETERS = (
    "server",
    "base_url",
    "provider",
    "provider_kwargs",
    "env_kwargs",
    "kwargs",
    "token",
    "open_timeout",
    "startup_timeout",
)


def build_provider(*args: Any, **arguments: Any) -> Provider:
    """The provider of one env's server, from ``gym.make``'s arguments (nothing is started yet).

    Deprecated: ``MakeOptions.parse(server=..., **gym_make_kwargs).providers()[0]``
    (:class:`~openenv_gym.make_options.MakeOptions`) does the same, and is what ``gym.make`` uses.
    Takes ``server, base_url, provider, provider_kwargs, env_kwargs, kwargs, token, open_timeout,
    startup_timeout`` as before, ``kwargs`` being the loose keyword arguments.
    """
    warnings.warn(
        "build_provider is deprecated: use openenv_gym.make_options.MakeOptions.parse(...).providers()[0]",
        DeprecationWarning,
        stacklevel=2,
    )
    arguments.update(zip(_BUILD_PROVIDER_PARAMETERS, args))
    loose = arguments.pop("kwargs", None) or {}
    return MakeOptions.parse(**arguments, **loose).providers()[0]


def server_face(
    base_url: str,
    server: str | None,
    provider: Provider,
    timeout: float,
    token: str | None,
    json_schema_fallback: bool,
    tool_calls: bool | None,
    agent: str | None = None,
) -> Face:
    """How one env's actions and observations travel: its spaces, or the tool face.

    Reads ``/metadata`` (a server started by someone else must serve ``server``) and ``/schema``.
    A tool face whose ``tools`` is empty needs them listed by a session (an OpenEnv server).
    With ``agent``, the server must serve a PettingZoo env, and the face is that agent's.
    """
    if isinstance(provider, URLProvider):  # started by someone else: is it this env?
        check_served(base_url, server, timeout, token)
    schema = http_get_json(base_url, "/schema", timeout=timeout, token=token)
    if agent is not None:
        schema = seat_schema(schema, agent, base_url)
    if wants_tool_face(tool_calls, schema, base_url):
        from .tool_face import ToolFace  # loaded only for a tool env

        return ToolFace(list(schema.get("tools") or []))
    return resolve_spaces(base_url, timeout, json_schema_fallback=json_schema_fallback, token=token, schema=schema)


def seat_schema(schema: dict[str, Any], agent: str, base_url: str) -> dict[str, Any]:
    """``schema`` with ``agent``'s spaces as its own: a server whose sessions are seats in games
    lists its agents in ``/schema["agents"]``, with each one's spaces when they have any (a
    tool env's seats have tools instead).

    Raises:
        ValueError: the server's sessions are no seats in games, or it has no such agent.
    """
    agents = schema.get("agents")
    if not isinstance(agents, dict):
        raise ValueError(f"agent={agent!r}: the server at {base_url} plays no games (no agents in /schema)")
    possible = agents.get("possible_agents") or []
    if agent not in possible:
        raise ValueError(f"agent={agent!r} is not one of the env's agents {possible}")
    if "action_spaces" not in agents:
        return schema
    spaces = {"action": agents["action_spaces"][agent], "observation": agents["observation_spaces"][agent]}
    return {**schema, "spaces": spaces}


def seat_query(
    agent: str | None,
    game: str | None,
    game_token: str | None,
    opponents: dict[str, str] | None,
    turn_timeout: float | None,
) -> dict[str, str]:
    """The ``/ws`` query of a seat in a PettingZoo server's game (only what is given; without
    ``agent`` the server seats the env's first agent)."""
    params = {"agent": agent, "game": game, "game_token": game_token}
    query = {key: value for key, value in params.items() if value is not None}
    if opponents:
        query["opponents"] = ",".join(f"{seat}:{policy}" for seat, policy in opponents.items())
    if turn_timeout is not None:
        query["turn_timeout"] = repr(float(turn_timeout))
    return query


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


_render_warned = False


def render_metadata(schema: dict[str, Any], render_mode: str | None, base_url: str) -> dict[str, Any] | None:
    """``metadata`` for a remote env (or vector env of per-env sessions) rendering in
    ``render_mode``: the server's render modes and fps from ``/schema["render"]``.

    Returns ``None`` when the server publishes none (an OpenEnv server): a ``render_mode`` is
    then accepted, with one warning per process (Stable-Baselines3 asks every env for frames),
    and nothing renders.

    Raises:
        ValueError: ``"human"`` (a window would open on the server: the message points to the
            server's ``/web`` page), or a mode the server lacks.
    """
    global _render_warned
    render = schema.get("render") if isinstance(schema, dict) else None
    modes = list(render.get("modes") or []) if isinstance(render, dict) else []
    if render_mode == "human":
        raise ValueError(
            f"render_mode='human' would open a window on the server; watch the env in a browser at "
            f"{base_url.rstrip('/')}/web instead (served on loopback by default, beyond it with `serve --web`; "
            "or use render_mode='rgb_array': render() returns the frames as arrays, "
            "gymnasium.wrappers.RecordVideo records them)"
        )
    if not modes:
        if render_mode is not None and not _render_warned:
            _render_warned = True
            warnings.warn(
                f"openenv-gym: render_mode={render_mode!r} is accepted, but the server at {base_url} publishes no "
                "render modes: render() raises NotImplementedError (said once per process)",
                UserWarning,
                stacklevel=4,
            )
        return None
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode={render_mode!r}: the server at {base_url} renders {modes}")
    return {"render_modes": [mode for mode in modes if mode != "human"], "render_fps": render.get("fps")}  # type: ignore[union-attr]


def _shutdown(client: EnvClient, fleet: Fleet) -> None:
    try:
        client.close()
    finally:
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

    Keyword arguments that are not the env's own nor its provider's options go to the
    environment on the server, as with a local ``gym.make``:
    ``gym.make("openenv/CartPole-v1", sutton_barto_reward=True)``.

    An action outside the action space raises :class:`~openenv_gym.errors.InvalidActionError`
    before anything is sent (nothing is coerced: ``1.7`` is no Discrete action). A call after
    :meth:`close` raises :class:`ClosedEnvError`.

    An env that offers tools and no Gymnasium spaces of its own (``openenv/CodingTools-v0``, an
    OpenEnv MCP server) gets the tool face of :mod:`openenv_gym.tool_face`: the action is one
    tool call as JSON text, ``'{"name": "run_python", "arguments": {"code": "print(1)"}}'``, the
    observation is text (the task prompt after a reset, the tool's result after a call), and
    ``info["tools"]`` lists the tools in OpenAI format. ``tool_calls=True`` asks for that face on
    an env that has spaces too (``openenv/Echo-v0``); ``tool_calls=False`` refuses it.

    Any server that speaks OpenEnv's protocol, including one built with OpenEnv itself, is
    wrapped by ``gym.make("openenv/Remote-v0", base_url="http://host:8000")``: that id sets
    ``json_schema_fallback=True``. With another id, ``base_url`` must be a server of that env
    (its ``/metadata`` says what it serves; :class:`~openenv_gym.errors.EnvMismatchError`
    otherwise).

    Args:
        server: what the provider serves: a Gymnasium id or ``"module:attr"``.
        base_url: attach to a running server instead (``"ws://127.0.0.1:8000"``); sets
            ``provider="url"``.
        json_schema_fallback: when the server publishes no Gymnasium spaces (an OpenEnv server),
            build them from its JSON schemas (:mod:`openenv_gym.spaces.schema`: fields that
            cannot be mapped are left out with one warning; a required action field that cannot
            be mapped raises ``UnsupportedSpaceError``). Off by default: such a server is
            refused with a ``ValueError``. A server's published spaces are always used as they are.
        token: the token the server requires (``Authorization: Bearer``); for a server the
            provider starts, the token it is to require. Default: the provider's (none on
            loopback, a fresh one for a server beyond it).
        tool_calls: ``None`` (the default) picks the tool face for an env that offers tools and
            publishes no spaces; ``True`` always (the env must offer tools), ``False`` never.
        sessions_per_server: accepted and unused, so that a registered spec (a Hub manifest's)
            can set it for ``gym.make_vec``, which packs that many sub-envs per server.
        provider: ``"process"`` (default: a child process on loopback), ``"docker"`` (a
            container), ``"ray"`` (a Ray cluster), ``"url"``, or a
            :class:`~openenv_gym.providers.Provider` instance.
        provider_kwargs: options of the provider, such as ``{"memory": "1g"}`` for Docker; they
            may also be given as further keyword arguments (``ray_address="auto"``).
        env_kwargs: keyword arguments for the environment on the server (for one whose name is
            also a provider option); other keyword arguments go there too.
        open_timeout: seconds to connect to the server.
        call_timeout: seconds to wait for each reset or step.
        startup_timeout: seconds a started server has to become healthy.
        render_mode: as for a local env, one the server publishes (``/schema["render"]``; they
            are this env's ``metadata["render_modes"]``): the session's env is made in that mode
            and :meth:`render` returns its frames (RGB arrays as raw bytes). ``"human"`` raises
            ``ValueError`` (a window would open on the server; its ``/web`` page shows the env
            in a browser instead). A server that publishes none
            (OpenEnv's) takes any mode, with one warning per process, and :meth:`render` raises.
        agent: on a server of a PettingZoo env, the agent whose seat this env plays (default: the
            env's first agent); the other seats are the server's opponents, or other clients
            in a game joined with ``game``.
        game: the id of a game to join (made by the first session that names it; its other
            seats then wait for players, unless ``opponents`` gives them to the server). Every
            player's ``reset`` waits for the others', and each ``step`` returns once it is this
            agent's turn again (the reward is what it earned since its last action).
        game_token: the game's token: a game is known by its id and its token together, so a
            session joins only the game made with the token it gives (or made without one).
        opponents: seats the server plays, as ``{agent: policy}`` (``"random"``, or a name the
            server was given with ``serve --opponents``).
        turn_timeout: this seat's turns: seconds a turn of its may take, at most (and by default)
            the server's. A player that overruns its turn, or leaves mid-round, loses the round
            and the others win it (terminated, ``info["forfeit"]`` saying who and why).
        transport: how steps travel (resets and every other call take the WebSocket): ``"auto"``
            (default) takes shared memory with an openenv-gym server on this host that offers
            it (a Gymnasium env whose spaces batch into arrays), else the WebSocket; ``"ws"``;
            ``"shm"`` fails, saying why, where shared memory cannot be had. :attr:`transport`
            and :attr:`transport_reason` say which was taken, and why. The results are the same
            either way: the info a step returns is its JSON form.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium.Env declares it so
    _spec: gym.envs.registration.EnvSpec | None = None
    _closer: weakref.finalize[..., Any]
    #: The env whose server a fork's session is on (kept alive while the fork is).
    _parent: RemoteEnv | None = None

    @property
    def spec(self) -> gym.envs.registration.EnvSpec | None:
        """The spec ``gym.make`` gave the env; its ``token`` argument has a repr that hides it."""
        return self._spec

    @spec.setter
    def spec(self, spec: gym.envs.registration.EnvSpec | None) -> None:
        self._spec = hide_token_kwarg(spec)

    def __init__(
        self,
        server: str | None = None,
        *,
        base_url: str | None = None,
        provider: str | Provider = "process",
        provider_kwargs: dict[str, Any] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        render_mode: str | None = None,
        json_schema_fallback: bool = False,
        token: str | None = None,
        sessions_per_server: int | None = None,
        tool_calls: bool | None = None,
        agent: str | None = None,
        game: str | None = None,
        game_token: str | None = None,
        opponents: dict[str, str] | None = None,
        turn_timeout: float | None = None,
        transport: str = "auto",
        **kwargs: Any,
    ) -> None:
        del sessions_per_server  # a single env holds one session; the argument is for make_vec
        self.render_mode = render_mode
        self._renders = False
        fleet = MakeOptions.parse(
            server=server,
            base_url=base_url,
            provider=provider,
            provider_kwargs=provider_kwargs,
            env_kwargs=env_kwargs,
            token=token,
            open_timeout=open_timeout,
            startup_timeout=startup_timeout,
            **kwargs,
        ).fleet()
        self.server = server
        self.provider = fleet.providers[0]
        (self.base_url,) = fleet.start()
        token = token or fleet.token
        self._client = EnvClient(
            self.base_url,
            open_timeout=open_timeout,
            call_timeout=call_timeout,
            env_id=server,
            token=token,
            transport=transport,
        )
        self._closer = weakref.finalize(self, _shutdown, self._client, fleet)
        self._snapshot_support: dict[str, Any] | None = None  # /schema["snapshot"], read on first use
        try:
            seat = seat_query(agent, game, game_token, opponents, turn_timeout)
            face = server_face(
                self.base_url,
                server,
                self.provider,
                open_timeout,
                token,
                json_schema_fallback,
                tool_calls,
                agent,
            )
            self._client.kind.take_seat(seat)
            no_shm = shm_refusal(face, seat)
            if no_shm is not None:
                if transport == "shm":
                    raise ValueError(f"transport='shm' cannot be served: {no_shm}")
                self._client.keep_to_websocket(no_shm)
            if render_mode is not None:
                self._ask_render_mode(render_mode, open_timeout, token)
            self._client.connect()
            request = face.tool_list_request()
            if request is not None:  # an OpenEnv server lists its tools in no /schema: ask the session
                face.take_tool_list(self._client.step(request))
            self._face: Face = face
            self.action_space, self.observation_space = face.action_space, face.observation_space
        except BaseException:
            self.close()
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
        kwargs: dict[str, Any] = {}
        if seed is not None:
            kwargs["seed"] = seed
        if options is not None:
            kwargs["options"] = options
        with said_if_the_server_died(self.provider):
            return self._face.reset_result(self._client.reset(**kwargs))

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
        if self._client.link is not None:  # only a face of published spaces takes shared memory
            assert isinstance(self._face, PublishedSpaces)
            try:
                value = self._face.space_value(action)
            except InvalidActionError as exc:
                exc.env_id = self.spec.id if self.spec is not None else self.server
                raise
            with said_if_the_server_died(self.provider):
                return self._face.row_result(self._client.step_shared(value))
        self._client.kind.check_can_step()
        wire = wire_action(self._face, action, self.spec.id if self.spec is not None else self.server)
        if isinstance(wire, tuple):  # a malformed tool call, answered without a round trip
            return wire
        with said_if_the_server_died(self.provider):
            return self._face.step_result(self._client.step(wire))

    def _ask_render_mode(self, render_mode: str, open_timeout: float, token: str | None) -> None:
        schema = http_get_json(self.base_url, "/schema", timeout=open_timeout, token=token)
        metadata = render_metadata(schema, render_mode, self.base_url)
        if metadata is None:
            return
        self.metadata = metadata
        self._renders = True
        self._client.ask_render_mode(render_mode)

    def render(self) -> Any:
        """The server's frame in ``render_mode``: an RGB ``uint8`` array (``rgb_array``), text
        (``ansi``), a list of them (the ``*_list`` modes), or ``None`` without a render mode.

        Raises:
            NotImplementedError: the server publishes no render modes.
            RemoteError: the env's ``render()`` raised on the server.
        """
        self._check_open("render")
        if self.render_mode is None:
            return None
        if not self._renders:
            raise NotImplementedError(f"{self!r}: the server renders nothing (it publishes no render modes)")
        return own_frame(self._client.render())

    def state(self) -> dict[str, Any]:
        """The session's state on the server (``episode_id``, ``step_count``, ...)."""
        self._check_open("state")
        return self._client.state()

    def close(self) -> None:
        """Close the session and stop the server this env started; idempotent."""
        self._closer()

    # Snapshots: the state is kept by the server (openenv_gym.snapshot says more).

    def _check_snapshots(self) -> None:
        """Raise ``SnapshotUnsupportedError`` unless the server's ``/schema`` says it snapshots this env."""
        if self._snapshot_support is None:
            from .snapshot import check_support

            schema = http_get_json(
                self.base_url, "/schema", timeout=self._client.open_timeout, token=self._client.token
            )
            self._snapshot_support = check_support(schema, repr(self), self.server)

    def snapshot(self, *, portable: bool = False) -> Snapshot:
        """Have the server keep the env's current state; returns a :class:`~openenv_gym.snapshot.Snapshot`.

        The state is the server's whole env: its random generators, its time limit's count, its
        wrappers. With ``portable``, the handle also holds the state as sealed bytes that another
        server of the same env restores (when it shares this one's ``OPENENV_GYM_SNAPSHOT_KEY``).
        Wrappers on this side (``gym.make``'s ``TimeLimit``) are saved by
        :func:`openenv_gym.snapshot.snapshot` instead.

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted (the message says why).
            SnapshotError: the session holds as many snapshots, or bytes, as the server allows.
        """
        from .snapshot import Snapshot

        self._check_open("snapshot")
        self._check_snapshots()
        return Snapshot.of(self._client.snapshot(portable), self._client.address)

    def restore(self, snapshot: Snapshot) -> tuple[Any, dict[str, Any]]:
        """Put the env back into ``snapshot``'s state; returns that state's observation and info.

        A snapshot of this server is restored by its id; one of another server, or one the
        server no longer keeps, from its portable bytes when it has them. An episode that had
        ended is ended again (reset to step).

        Raises:
            SnapshotError: the state is not kept here and the handle holds no portable bytes (or
                bytes this server did not seal).
        """
        from .errors import SnapshotError
        from .snapshot import falls_back, portable_bytes

        self._check_open("restore")
        self._check_snapshots()
        if snapshot.server == self._client.address:
            try:
                return self._face.restored_result(self._client.restore(snapshot.id))
            except SnapshotError as exc:
                if not falls_back(snapshot, exc):
                    raise
        return self._face.restored_result(self._client.restore(portable=portable_bytes(snapshot, self.server)))

    def release(self, *snapshots: Snapshot) -> None:
        """Have the server drop these snapshots' states (those this session took; others are left)."""
        self._check_open("release")
        ids = tuple(snapshot.id for snapshot in snapshots if snapshot.server == self._client.address)
        if ids:
            self._client.release(ids)

    def fork(self, count: int) -> list[RemoteEnv]:
        """``count`` new envs, each a new session on this env's server starting from its current state.

        They share this env's server (and its spaces and face), and are independent of it and of
        each other from then on. Close them before this env: closing it stops a server it
        started. :func:`openenv_gym.snapshot.fork` forks an env with its client-side wrappers.

        Raises:
            SnapshotUnsupportedError: the env cannot be snapshotted.
            CapacityReachedError: the server has no session slot left for a fork.
        """
        from .protocol.snapshot import SnapshotFrame
        from .snapshot import Snapshot

        if count < 1:
            raise ValueError(f"fork(count) needs a count of at least 1, got {count}")
        self._check_open("fork")
        self._check_snapshots()
        client = self._client
        # The server copies the state while the forks' sessions open (Git-v0 tars its workspace then).
        client.begin("snapshot", client.kind.snapshot, False)
        children: list[RemoteEnv] = []
        handle: Snapshot | None = None
        try:
            try:
                for _ in range(count):
                    children.append(self._sibling())
            finally:  # the snapshot's reply is read whatever happened, so the session stays in step
                frame = client.complete()
                assert isinstance(frame, SnapshotFrame)
                handle = Snapshot.of(frame, client.address)
            for child in children:  # every restore sent before any is read: the server works on all at once
                child._client.begin("restore", child._client.kind.restore, handle.id, None)
            for child in children:
                child._client.complete()
        except BaseException:
            for child in children:
                child.close()
            raise
        finally:
            if handle is not None:
                self.release(handle)
        return children

    def _sibling(self) -> RemoteEnv:
        """A new session on this env's server, with its face: a fork before its restore."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        client = self._client
        twin._client = EnvClient(
            self.base_url,
            open_timeout=client.open_timeout,
            call_timeout=client.call_timeout,
            env_id=client.env_id,
            token=client.token,
        )
        if self._renders and self.render_mode is not None:
            twin._client.ask_render_mode(self.render_mode)
        twin._parent = self  # the server lives as long as the env that started it
        twin._closer = weakref.finalize(twin, twin._client.close)
        twin._client.connect()
        return twin


def shm_refusal(face: Face, seat: dict[str, str]) -> str | None:
    """Why a plain session of this face cannot take shared memory, or None if its server may offer it."""
    if isinstance(face, SchemaSpaces):
        return "the server publishes no Gymnasium spaces (an OpenEnv server)"
    if not isinstance(face, PublishedSpaces):
        return "a tool call's step takes the WebSocket"
    if face.own_action_model:
        return "the server's actions have a model of their own"
    if seat:
        return "a seat in a game takes turns on the WebSocket"
    return None


def own_frame(frame: Any) -> Any:
    """A frame the caller may write to (arrays arrive as read-only views of their message)."""
    if isinstance(frame, list):
        return [own_frame(item) for item in frame]
    import numpy as np  # gymnasium imports it anyway

    return np.array(frame) if isinstance(frame, np.ndarray) else frame


def make_remote_env(**kwargs: Any) -> RemoteEnv:
    """``RemoteEnv(**kwargs)``: the entry point ``gym.make`` calls for the catalog's ids.

    A function, not the class, because ``gym.make`` judges a ``render_mode`` against its creator's
    class-level ``metadata["render_modes"]`` (and warns once per env): a remote env's render
    modes are its server's, unknown until it answers. ``RemoteEnv`` says once per process what
    it does with a ``render_mode``.
    """
    return RemoteEnv(**kwargs)
