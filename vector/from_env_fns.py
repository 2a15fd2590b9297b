"""`from_env_fns`: RemoteVectorEnv as a drop-in for Gymnasium's AsyncVectorEnv, your own factories run on servers.

Each factory travels pickled with cloudpickle (:mod:`openenv_gym.protocol.pickled`) in the first
frame of its block's batch session, to a server this call starts with
``--accept-pickled-factories`` and a fresh token; from then on the sub-envs are stepped like any
others (server-side autoreset, the binary codec, restarts after a fault, which send the factories
again).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
import gymnasium as gym
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_differing_spaces

from openenv_gym.client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT
from openenv_gym.client.batch_client import BatchClient, BatchKind, codec_subprotocols
from openenv_gym.errors import SpaceMismatchError
from openenv_gym.protocol import MessageType
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.protocol.batch import BatchValuesFrame
from openenv_gym.protocol.pickled import BatchMakeFrame, import_path, pickled_batch_query, python_version
from openenv_gym.providers import provider_options
from openenv_gym.providers.process import DEFAULT_STARTUP_TIMEOUT, new_token
from openenv_gym.spaces import space_from_json, space_to_json
from openenv_gym.spaces.shared_memory import check_shared_memory
from openenv_gym.spaces.user_spaces import same_space
from openenv_gym.startup import PICKLED_FACTORIES_TARGET

from .remote_vector_env import RemoteVectorEnv

__all__ = ["from_env_fns"]


class FactoryOpening:
    """What a batch session of pickled factories opens with: their ``batch_make`` frame, and the
    check of the server's answer (every sub-env's spaces must hold the expected ones).

    A :class:`~openenv_gym.client.batch_client.BatchKind` handed it is ``from_env_fns``' session
    kind. Args as for :func:`factory_batch_client`.
    """

    call = MessageType.BATCH_MAKE
    callers_own_envs = True  # see BatchOpening; and EnvFnsVectorEnv._check_actions

    def __init__(
        self, factories: list[bytes], spaces: dict[str, Any], first: int, observation_mode: str = "same"
    ) -> None:
        self.factories = factories
        self.spaces = spaces
        self.first = first
        self.observation_mode = observation_mode

    def frame(self) -> BatchMakeFrame:
        return BatchMakeFrame(self.factories, python_version(), self.first, import_path())

    def check(self, reply: BatchValuesFrame) -> None:
        for offset, spaces in enumerate(reply.values):
            for role in ("observation", "action"):
                got = spaces.get(role) if isinstance(spaces, dict) else None
                if same_space(got, self.spaces[role]) or (role == "observation" and self._shares_shape(got)):
                    continue
                expected = space_from_json(self.spaces[role])
                raise SpaceMismatchError(self.first + offset, role, expected, _readable(got), self.observation_mode)

    def _shares_shape(self, got: Any) -> bool:
        """Whether a sub-env's observation space may join the batch though not equal to the expected
        one: with ``observation_mode`` other than ``"same"``, if it shares its shape and dtype (AsyncVectorEnv's rule)."""
        if self.observation_mode == "same":
            return False
        space = _readable(got)
        return isinstance(space, gym.Space) and is_space_dtype_shape_equiv(
            space_from_json(self.spaces["observation"]), space
        )


def factory_batch_client(
    base_url: str,
    envs: int,
    autoreset_mode: WireAutoresetMode,
    codec: str = "json",
    *,
    factories: list[bytes],
    spaces: dict[str, Any],
    first: int = 0,
    observation_mode: str = "same",
    name: str | None = None,
    render_mode: str | None = None,
    **settings: Any,
) -> BatchClient:
    """A batch session whose sub-envs the server makes from the pickled factories sent first.

    Its :meth:`~BatchClient.connect` opens ``/ws/batch?...&factories=pickled``, sends the
    ``batch_make`` frame and checks that every sub-env's spaces are the expected ones; so does
    every reconnection. It is the batch client handed a :class:`BatchKind` given a :class:`FactoryOpening`.

    Raises (from :meth:`~BatchClient.connect`, besides a batch client's errors):
        EnvCreationError: a factory could not be unpickled, raised, or returned no ``gymnasium.Env``.
        RemoteError: the server refused pickled factories (code ``PICKLES_REFUSED``).
        SpaceMismatchError: a sub-env's spaces are not the expected ones.

    Args:
        base_url, envs, autoreset_mode, codec: as for :class:`~openenv_gym.client.batch_client.BatchClient`.
        factories: each sub-env's factory, pickled.
        spaces: the JSON forms of the spaces every sub-env must have (``{"action": ..., "observation": ...}``).
        first: the index of this session's first sub-env in the vector env, for error messages.
        observation_mode: ``"same"`` (default): every sub-env's observation space must equal
            ``spaces["observation"]``; otherwise (``"different"``, a custom space) share its shape and dtype.
        name: what the sub-envs are, for error messages (default: the ``env_id`` argument).
        render_mode: not sent: the factories make their envs in the render mode they choose.
        **settings: as for :class:`~openenv_gym.client.SessionTerms`.
    """
    if len(factories) != envs:
        raise ValueError(f"{len(factories)} factories for {envs} sub-envs")
    if name is not None:
        settings["env_id"] = name
    opening = FactoryOpening(factories, spaces, first, observation_mode)
    query = pickled_batch_query(envs, autoreset_mode)
    kind = BatchKind(envs, autoreset_mode, query, codec_subprotocols(codec), opening)
    return BatchClient.of(kind, base_url, **settings)


def _readable(description: Any) -> Any:
    """A space from its JSON form, for an error message; the JSON itself if it is not one. (A
    space of your own is read from its pickle: the description comes from the run's own servers.)"""
    try:
        return space_from_json(description, pickles=True)
    except Exception:
        return description


class EnvFnsVectorEnv(RemoteVectorEnv):
    """The vector env :func:`from_env_fns` returns: a :class:`RemoteVectorEnv` whose sub-envs come
    from pickled factories. Make it with ``RemoteVectorEnv.from_env_fns``; the arguments are its."""

    # The envs are the caller's own: actions go to them unchecked, as AsyncVectorEnv sends them
    # (their servers' FactoryEnvironment does not check them either).
    _check_actions = False

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env[Any, Any]]],
        *,
        copy: bool,
        autoreset_mode: AutoresetMode | str,
        provider: str,
        provider_kwargs: dict[str, Any] | None,
        token: str | None,
        servers: int | None,
        sessions_per_server: int | None,
        codec: str,
        open_timeout: float,
        call_timeout: float,
        startup_timeout: float,
        observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]],
        options: dict[str, Any],
        shared_memory: bool = False,
    ) -> None:
        dummy = env_fns[0]()
        try:
            if not isinstance(dummy, gym.Env):
                raise TypeError(f"env_fns[0]() returned {type(dummy).__name__}, not a gymnasium.Env")
            single_action_space, single_observation_space = dummy.action_space, dummy.observation_space
            # Copied, so that the sub-env's (class-level) metadata is not changed (as AsyncVectorEnv does).
            metadata, render_mode = dict(dummy.metadata), dummy.render_mode
            self._label = dummy.spec.id if dummy.spec is not None else type(dummy.unwrapped).__name__
        finally:
            dummy.close()
        self._observation_mode, single_observation_space, batch_observation_space = _observation_spaces(
            observation_mode, env_fns, single_observation_space
        )
        if shared_memory:
            check_shared_memory(single_observation_space)  # AsyncVectorEnv's rule, though no segment is made
        self._spaces_json = {  # the servers trust pickles: a space of your own travels as one
            "action": space_to_json(single_action_space, pickles=True),
            "observation": space_to_json(single_observation_space, pickles=True),
        }
        self._factories = [_pickled(index, fn) for index, fn in enumerate(env_fns)]
        self._copy = copy
        if token is None and "token" not in (provider_kwargs or {}):
            token = new_token()  # one per run: a block moved to another server of the run still has it
        super().__init__(
            PICKLED_FACTORIES_TARGET,
            len(env_fns),
            provider=provider,
            # The servers take pickles, and (the providers see to it) require a token: one per run.
            provider_kwargs={**(provider_kwargs or {}), "accept_pickled_factories": True},
            token=token,
            autoreset_mode=autoreset_mode,
            servers=servers,
            sessions_per_server=sessions_per_server,
            batched=True,
            tool_calls=False,
            codec=codec,
            open_timeout=open_timeout,
            call_timeout=call_timeout,
            startup_timeout=startup_timeout,
            **options,
        )
        # The spaces themselves, as AsyncVectorEnv holds them (the servers' schema rebuilt equal ones).
        self.single_observation_space = single_observation_space
        if batch_observation_space is not None:
            self.observation_space = batch_observation_space
        self.metadata = {**metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = render_mode
        self._renders = render_mode is not None  # the factories make their envs in it

    def _server_schema(self, url: str, open_timeout: float) -> Any:
        # The spaces are the local env's; the servers have none of their own.
        return {"spaces": self._spaces_json}

    def _batch_client(self, start: int, stop: int) -> Callable[..., BatchClient]:
        return functools.partial(
            factory_batch_client,
            factories=self._factories[start:stop],
            spaces=self._spaces_json,
            first=start,
            observation_mode=self._observation_mode,
            name=self._label,
        )

    def _name(self) -> str | None:
        return self._label

    def __repr__(self) -> str:
        return f"RemoteVectorEnv(env_fns: {self._label}, num_envs={self.num_envs})"


def _observation_spaces(
    observation_mode: Any, env_fns: Sequence[Callable[[], gym.Env[Any, Any]]], first: gym.Space[Any]
) -> tuple[str, gym.Space[Any], gym.Space[Any] | None]:
    """How the sub-envs' observation spaces are checked (``"same"``: equal to the single space; else
    sharing its shape and dtype), the single observation space, and the batch one (``None``: the
    single one batched), as AsyncVectorEnv reads ``observation_mode``. ``first``: env_fns[0]'s.

    Raises:
        TypeError: a tuple whose items are not both spaces.
        ValueError: any other mode.
    """
    if isinstance(observation_mode, tuple) and len(observation_mode) == 2:
        batch, single = observation_mode
        if not isinstance(batch, gym.Space) or not isinstance(single, gym.Space):
            raise TypeError(
                f"Expected both elements of observation_mode to be Spaces, got {type(batch)} and {type(single)}"
            )
        return "different", single, batch
    if isinstance(observation_mode, str) and observation_mode == "same":
        return "same", first, None
    if isinstance(observation_mode, str) and observation_mode == "different":
        # Every factory is called here (its env closed at once) for its space, as AsyncVectorEnv does.
        spaces = []
        for make in env_fns:
            env = make()
            spaces.append(env.observation_space)
            env.close()
        return "different", spaces[0], batch_differing_spaces(spaces)
    raise ValueError(
        "Invalid `observation_mode`, expected: 'same' or 'different' or tuple of single and batch observation space, "
        f"actual got {observation_mode}"
    )


def _pickled(index: int, factory: Callable[[], Any]) -> bytes:
    if not callable(factory):
        raise TypeError(f"env_fns[{index}] is a {type(factory).__name__}, not a function that makes an env")
    try:
        return cloudpickle.dumps(factory)
    except Exception as exc:
        raise TypeError(f"env_fns[{index}] cannot be pickled with cloudpickle: {type(exc).__name__}: {exc}") from exc


def from_env_fns(
    env_fns: Sequence[Callable[[], gym.Env[Any, Any]]],
    shared_memory: bool = True,
    copy: bool = True,
    context: str | None = None,
    daemon: bool = True,
    worker: Callable[..., None] | None = None,
    observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]] = "same",
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    max_concurrency: int | None = None,
    *,
    provider: str = "process",
    provider_kwargs: dict[str, Any] | None = None,
    servers: int | None = None,
    sessions_per_server: int | None = None,
    codec: str = "binary",
    open_timeout: float = DEFAULT_OPEN_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    token: str | None = None,
    **options: Any,
) -> RemoteVectorEnv:
    """A vector env of your own env factories, run on servers: ``gymnasium.vector.AsyncVectorEnv``'s drop-in.

    Called as ``RemoteVectorEnv.from_env_fns(env_fns, ...)``. As AsyncVectorEnv does, it makes an
    env from ``env_fns[0]`` here to read the spaces and metadata, closes it, and requires every
    sub-env to have the same spaces. Each factory (a zero-argument callable returning a
    ``gymnasium.Env``; lambdas and closures too) is pickled with cloudpickle and sent to the
    servers this call starts (``servers``/``sessions_per_server``, as for ``gym.make_vec``),
    which make the sub-envs and step them in batch sessions, with Gymnasium's autoreset on the
    server. The results equal ``SyncVectorEnv(env_fns)``'s for the same seeds and actions.

    **Security.** Unpickling runs arbitrary code, so the servers are started with
    ``--accept-pickled-factories`` and a fresh token (``secrets.token_urlsafe``; or ``token``),
    and refuse pickles from anyone without it. The factories go **only to servers this call
    starts**: there is no ``base_url``/``base_urls``, and ``provider="url"`` is refused. A server
    started without the flag, or reached without its token, refuses them.

    The servers must be able to import what the factories refer to by name (a class defined in an
    importable module is pickled by reference; one defined in ``__main__`` or a notebook, by
    value), and run the same Python version (cloudpickle's rule). As ``SubprocVecEnv``'s workers
    do, they see this interpreter's ``sys.path``: each server adds the entries it lacks (made
    absolute) before it unpickles, so a class in a test module or a package on your path is found.
    The process provider runs this interpreter on this machine, so every such module is found;
    Ray's actors find them on this machine's node; in a Docker container (or on another node) the
    paths do not exist and are skipped: its image must hold the env's packages. A block's
    pickles travel in one frame, which a server takes up to 16 MiB by default: let a factory
    capture a path to its data, not the data.

    Example:
        >>> import gymnasium as gym
        >>> from openenv_gym.vector import RemoteVectorEnv
        >>> envs = RemoteVectorEnv.from_env_fns([lambda: gym.make("CartPole-v1")] * 2, servers=1)
        >>> envs
        RemoteVectorEnv(env_fns: CartPole-v1, num_envs=2)
        >>> obs, infos = envs.reset(seed=0)
        >>> obs.shape
        (2, 4)
        >>> envs.close()

    Args:
        env_fns: one factory per sub-env.
        shared_memory: as AsyncVectorEnv's, refuses an observation space its shared memory cannot
            hold (``TypeError`` for a Graph or Sequence, ``ValueError`` for a space of your own); no
            segment is made: observations come over sockets (Box observations as raw bytes with
            ``codec="binary"``, the default).
        copy: as AsyncVectorEnv's: ``False`` returns the vector env's own observation buffer
            from ``reset`` and ``step``, which the next call overwrites.
        context: accepted and ignored: no ``multiprocessing`` here; the provider starts the servers.
        daemon: accepted and ignored: the servers always stop with this process (even if it is
            killed), and their envs may start processes of their own.
        worker: refused unless ``None``: the servers' batch sessions are the workers.
        observation_mode: as AsyncVectorEnv's: ``"same"`` (every sub-env has env_fns[0]'s observation
            space); ``"different"`` (every factory is called here for its space; the spaces must share a
            shape and dtype; the batch space is ``batch_differing_spaces`` of them); or a tuple
            ``(batch_space, single_space)``, every sub-env's space sharing the single one's shape and dtype.
        autoreset_mode: a ``gymnasium.vector.AutoresetMode`` or its value, as AsyncVectorEnv's.
        max_concurrency: refused unless ``None``: a server steps its sub-envs one after another,
            so ``servers=`` sets how many run at once.
        provider: ``"process"`` (default), ``"docker"`` or ``"ray"``: where the servers run.
        provider_kwargs: options of that provider; they may also be given as further keyword
            arguments (``memory="1g"``, ``ray_address="auto"``).
        servers, sessions_per_server: how many servers, and sub-envs per server, as for
            :class:`RemoteVectorEnv`.
        codec: ``"binary"`` (default) or ``"json"``, as for :class:`RemoteVectorEnv`.
        open_timeout, call_timeout, startup_timeout: seconds, as for :class:`RemoteVectorEnv`.
        token: the token the servers require; default: a fresh one for this vector env.

    Raises:
        EnvCreationError: a sub-env's factory could not be unpickled on its server, raised, or
            returned something other than a ``gymnasium.Env`` (the message names the sub-env;
            every server started is stopped again).
        SpaceMismatchError: a sub-env's spaces differ from env_fns[0]'s (a ``RuntimeError``).
        TypeError: a factory that cannot be pickled, or an argument no provider takes.
        ValueError: an AsyncVectorEnv argument that cannot be honoured, or no factories.
    """
    if not env_fns:
        raise ValueError("env_fns is empty: give one factory per sub-env")
    if worker is not None:
        raise ValueError("worker= is not supported: the servers' batch sessions step the sub-envs (leave it None)")
    if max_concurrency is not None:
        raise ValueError(
            "max_concurrency= is not supported: a server steps its sub-envs one after another, so servers= sets "
            "how many run at once"
        )
    del context, daemon  # accepted for AsyncVectorEnv's callers; nothing here uses them
    if not isinstance(provider, str) or provider == "url":
        raise ValueError(
            f"provider={provider!r}: from_env_fns sends pickled factories only to servers it starts itself "
            "(provider='process', 'docker' or 'ray')"
        )
    for name in ("base_url", "base_urls"):
        if name in options:
            raise TypeError(
                f"{name}= cannot be given: from_env_fns sends pickled factories only to servers it starts "
                "itself, never to a running server"
            )
    unknown = sorted(set(options) - provider_options(provider))
    if unknown:
        raise TypeError(
            f"unexpected keyword arguments {unknown}: from_env_fns takes AsyncVectorEnv's arguments, its own and "
            f"the options of provider={provider!r} ({', '.join(sorted(provider_options(provider)))})"
        )
    if "accept_pickled_factories" in (provider_kwargs or {}):
        raise TypeError("accept_pickled_factories is set by from_env_fns itself")
    return EnvFnsVectorEnv(
        env_fns,
        copy=copy,
        autoreset_mode=autoreset_mode,
        provider=provider,
        provider_kwargs=provider_kwargs,
        token=token,
        servers=servers,
        sessions_per_server=sessions_per_server,
        codec=codec,
        open_timeout=open_timeout,
        call_timeout=call_timeout,
        startup_timeout=startup_timeout,
        observation_mode=observation_mode,
        options=options,
        shared_memory=shared_memory,
    )
