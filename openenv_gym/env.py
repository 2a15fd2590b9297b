"""`RemoteEnv`: a ``gymnasium.Env`` whose ``reset`` and ``step`` run on an environment server."""

from __future__ import annotations

import weakref
from typing import Any, SupportsFloat

import gymnasium as gym

from .client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT, http_get_json
from .providers import Provider, URLProvider, make_provider
from .providers.process import DEFAULT_STARTUP_TIMEOUT
from .sync_client import EnvClient
from .spaces import ACTION_FIELD, OBSERVATION_FIELD, from_wire, space_from_json, to_wire

__all__ = ["RemoteEnv", "server_spaces"]


def server_spaces(base_url: str, timeout: float) -> tuple[gym.Space[Any], gym.Space[Any]]:
    """The action and observation spaces a server publishes in ``/schema``.

    Raises:
        ServerConnectError: the server does not answer.
        ValueError: its ``/schema`` has no ``spaces`` (an OpenEnv server, so far).
    """
    schema = http_get_json(base_url, "/schema", timeout=timeout)
    spaces = schema.get("spaces") if isinstance(schema, dict) else None
    if not spaces:
        raise ValueError(
            f"the server at {base_url} publishes no Gymnasium spaces in /schema; "
            "openenv-gym's Gymnasium envs need servers that do (openenv-gym servers always do)"
        )
    return space_from_json(spaces["action"]), space_from_json(spaces["observation"])


def _shutdown(client: EnvClient, provider: Provider) -> None:
    try:
        client.close()
    finally:
        provider.stop()


class RemoteEnv(gym.Env[Any, Any]):
    """A Gymnasium environment served by another process, container or machine.

    The spaces come from the server's ``/schema``; ``reset(seed=, options=)`` and ``step`` are
    forwarded over one WebSocket session. Rewards are Python ``float`` and flags Python ``bool``,
    as Gymnasium's and Stable-Baselines3's checkers expect. Usually made with ``gym.make``:

    Example:
        >>> import gymnasium as gym, openenv_gym
        >>> env = gym.make("openenv/CartPole-v1")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(0)
        >>> type(reward), type(terminated)
        (<class 'float'>, <class 'bool'>)
        >>> env.close()

    Args:
        server: what the provider serves: a Gymnasium id or ``"module:attr"``.
        base_url: attach to a running server instead (``"ws://127.0.0.1:8000"``); sets
            ``provider="url"``.
        provider: ``"process"`` (default: a child process on loopback), ``"docker"`` (a
            container), ``"url"``, or a :class:`~openenv_gym.providers.Provider` instance.
        provider_kwargs: options of the provider, such as ``{"memory": "1g"}`` for Docker.
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
    ) -> None:
        self.render_mode = render_mode
        if base_url is not None:
            provider = URLProvider(base_url, timeout=open_timeout)
        elif isinstance(provider, str):
            if provider == "url":
                raise ValueError("provider='url' needs base_url='ws://host:port'")
            if server is None:
                raise ValueError(f"provider={provider!r} needs server=, the environment to serve")
            provider = make_provider(
                provider,
                target=server,
                env_kwargs=env_kwargs,
                # The client's TimeLimit (from the registered spec) is the only time limit.
                max_episode_steps=None,
                startup_timeout=startup_timeout,
                **(provider_kwargs or {}),
            )
        self.server = server
        self.provider = provider
        self.base_url = provider.start()
        self._client = EnvClient(self.base_url, open_timeout=open_timeout, call_timeout=call_timeout, env_id=server)
        self._closer = weakref.finalize(self, _shutdown, self._client, provider)
        try:
            self.action_space, self.observation_space = server_spaces(self.base_url, open_timeout)
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
        return from_wire(self.observation_space, frame.observation, OBSERVATION_FIELD), frame.info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        frame = self._client.step(to_wire(self.action_space, action, ACTION_FIELD))
        observation = from_wire(self.observation_space, frame.observation, OBSERVATION_FIELD)
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
