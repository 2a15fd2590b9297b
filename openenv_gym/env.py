"""`RemoteEnv`: a ``gymnasium.Env`` whose ``reset`` and ``step`` run on an environment server."""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym

from .client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT, http_get_json
from .providers import Provider, URLProvider, make_provider, start_options
from .providers.process import DEFAULT_STARTUP_TIMEOUT
from .sync_client import EnvClient
from .spaces import ACTION_FIELD, OBSERVATION_FIELD, encode, from_wire, space_from_json, to_wire

__all__ = ["RemoteEnv", "ServerSpaces", "resolve_spaces"]


@dataclasses.dataclass(frozen=True)
class ServerSpaces:
    """A server's action and observation spaces, and how their values travel on the wire.

    Attributes:
        action_space, observation_space: the Gymnasium spaces.
        published: ``True`` when the server published them (``/schema["spaces"]``, openenv-gym's
            extension: exact); ``False`` when they were mapped from its JSON schemas
            (:mod:`openenv_gym.schema_spaces`), as for servers built with OpenEnv itself.
        unmapped: for mapped spaces, the fields left out (``"observation.x"`` / ``"action.y"``
            paths) with the reason.
    """

    action_space: gym.Space[Any]
    observation_space: gym.Space[Any]
    published: bool
    action_to_wire: Callable[[Any], dict[str, Any]]
    observation_from_wire: Callable[[dict[str, Any]], Any]
    unmapped: dict[str, str] = dataclasses.field(default_factory=dict)


def _published(action_space: gym.Space[Any], observation_space: gym.Space[Any]) -> ServerSpaces:
    def action_to_wire(action: Any) -> dict[str, Any]:
        wire_form = isinstance(action, dict) and action.keys() == {ACTION_FIELD}
        if wire_form and not isinstance(action_space, gym.spaces.Dict):
            return {ACTION_FIELD: encode(action_space, action[ACTION_FIELD])}  # given as {"action": value}
        return to_wire(action_space, action, ACTION_FIELD)

    return ServerSpaces(
        action_space,
        observation_space,
        True,
        action_to_wire,
        lambda data: from_wire(observation_space, data, OBSERVATION_FIELD),
    )


def resolve_spaces(
    base_url: str, timeout: float, *, json_schema_fallback: bool = False, token: str | None = None
) -> ServerSpaces:
    """The spaces of the server at ``base_url``, read from its ``/schema``.

    A server's own Gymnasium spaces (``/schema["spaces"]``) are always used when it publishes
    them. Otherwise, with ``json_schema_fallback``, they are built from its JSON schemas by
    :func:`openenv_gym.schema_spaces.openenv_spaces`, with one warning naming the fields left out.

    Raises:
        ServerConnectError: the server does not answer.
        ValueError: it publishes no Gymnasium spaces and ``json_schema_fallback`` is off.
        UnsupportedSpaceError: a field every action needs has no space (the message names it).
    """
    schema = http_get_json(base_url, "/schema", timeout=timeout, token=token)
    spaces = schema.get("spaces") if isinstance(schema, dict) else None
    if spaces:
        return _published(space_from_json(spaces["action"]), space_from_json(spaces["observation"]))
    if not json_schema_fallback or not isinstance(schema, dict):
        raise ValueError(
            f"the server at {base_url} publishes no Gymnasium spaces in /schema (an OpenEnv server?); "
            "to build spaces from its JSON schemas use gym.make('openenv/Remote-v0', base_url=...) "
            "or pass json_schema_fallback=True"
        )
    from .schema_spaces import openenv_spaces

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
    return ServerSpaces(action.space, observation.space, False, action.to_wire, observation.from_wire, unmapped)


def _shutdown(client: EnvClient, provider: Provider) -> None:
    try:
        client.close()
    finally:
        provider.stop()


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

    Any server that speaks OpenEnv's protocol, including one built with OpenEnv itself, is
    wrapped by ``gym.make("openenv/Remote-v0", base_url="http://host:8000")``: that id sets
    ``json_schema_fallback=True``.

    Args:
        server: what the provider serves: a Gymnasium id or ``"module:attr"``.
        base_url: attach to a running server instead (``"ws://127.0.0.1:8000"``); sets
            ``provider="url"``.
        json_schema_fallback: when the server publishes no Gymnasium spaces (an OpenEnv server),
            build them from its JSON schemas (:mod:`openenv_gym.schema_spaces`: fields that
            cannot be mapped are left out with one warning; a required action field that cannot
            be mapped raises ``UnsupportedSpaceError``). Off by default: such a server is
            refused with a ``ValueError``. A server's published spaces are always used as they are.
        token: the token the server requires (``Authorization: Bearer``); for a server the
            provider starts, the token it is to require. Default: the provider's (none on
            loopback, a fresh one for a server beyond it).
        sessions_per_server: accepted and unused, so that a registered spec (a Hub manifest's)
            can set it for ``gym.make_vec``, which packs that many sub-envs per server.
        provider: ``"process"`` (default: a child process on loopback), ``"docker"`` (a
            container), ``"ray"`` (a Ray cluster), ``"url"``, or a
            :class:`~openenv_gym.providers.Provider` instance.
        provider_kwargs: options of the provider, such as ``{"memory": "1g"}`` for Docker; they
            may also be given as further keyword arguments (``ray_address="auto"``).
        env_kwargs: keyword arguments for the environment on the server.
        open_timeout: seconds to connect to the server.
        call_timeout: seconds to wait for each reset or step.
        startup_timeout: seconds a started server has to become healthy.
        render_mode: accepted and stored (Stable-Baselines3's ``make_vec_env`` passes
            ``"rgb_array"``), but frames are not forwarded yet: :meth:`render` raises.
    """

    metadata: dict[str, Any] = {"render_modes": []}

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
        **provider_options: Any,
    ) -> None:
        del sessions_per_server  # a single env holds one session; the argument is for make_vec
        options = start_options(
            provider_kwargs, provider_options, token, starts=base_url is None and isinstance(provider, str)
        )
        self.render_mode = render_mode
        if base_url is not None:
            provider = URLProvider(base_url, timeout=open_timeout, token=token)
        elif isinstance(provider, str):
            if provider == "url":
                raise ValueError("provider='url' needs base_url='ws://host:port'")
            if server is None:
                raise ValueError(
                    "RemoteEnv needs base_url='http://host:port' (a running server, as openenv/Remote-v0 "
                    f"always does) or server= (the environment for provider={provider!r} to start)"
                )
            provider = make_provider(
                provider,
                target=server,
                env_kwargs=env_kwargs,
                # The client's TimeLimit (from the registered spec) is the only time limit.
                max_episode_steps=None,
                startup_timeout=startup_timeout,
                **options,
            )
        self.server = server
        self.provider = provider
        self.base_url = provider.start()
        token = token or provider.token
        self._client = EnvClient(
            self.base_url, open_timeout=open_timeout, call_timeout=call_timeout, env_id=server, token=token
        )
        self._closer = weakref.finalize(self, _shutdown, self._client, provider)
        try:
            self._spaces = resolve_spaces(
                self.base_url, open_timeout, json_schema_fallback=json_schema_fallback, token=token
            )
            self.action_space, self.observation_space = self._spaces.action_space, self._spaces.observation_space
            self._client.connect()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"RemoteEnv({self.server or '?'}, {self.base_url})"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        kwargs: dict[str, Any] = {}
        if seed is not None:
            kwargs["seed"] = seed
        if options is not None:
            kwargs["options"] = options
        frame = self._client.reset(**kwargs)
        return self._spaces.observation_from_wire(frame.observation), frame.info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Send ``action`` (a value of ``action_space``; a ``Dict`` action as a plain ``dict``)."""
        frame = self._client.step(self._spaces.action_to_wire(action))
        observation = self._spaces.observation_from_wire(frame.observation)
        reward = 0.0 if frame.reward is None else float(frame.reward)
        return observation, reward, bool(frame.done), bool(frame.truncated), frame.info

    def render(self) -> None:
        """Not available yet: rendered frames are not forwarded from the server.

        Raises:
            NotImplementedError: always, naming the env and the render mode asked for.
        """
        raise NotImplementedError(
            f"{self!r}: rendering (render_mode={self.render_mode!r}) is not forwarded from the server yet"
        )

    def state(self) -> dict[str, Any]:
        """The session's state on the server (``episode_id``, ``step_count``, ...)."""
        return self._client.state()

    def close(self) -> None:
        """Close the session and stop the server this env started; idempotent."""
        self._closer()
