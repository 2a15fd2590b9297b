"""What both PettingZoo faces share: the server they start or attach to, their session, their spaces."""

from __future__ import annotations

import weakref
from typing import Any, NoReturn

from ..client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT
from ..client.agents_client import AgentsClient
from ..env import ClosedEnvError
from ..errors import ServerConnectError
from ..make_options import MakeOptions
from ..providers.base import DEFAULT_STARTUP_TIMEOUT
from ..providers.fleet import Fleet
from ..spaces import space_from_json
from ._human import Window

__all__ = ["RemoteAgents", "RemoteAgentsFace", "server_of"]

NEEDS = (
    "a remote PettingZoo env needs an id (a registered openenv/... id, a PettingZoo module such as "
    "'pettingzoo.classic.connect_four_v3', or 'module:fn') for provider={provider!r} to start, or base_url="
)


def server_of(env_id: str | None, kwargs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """What the server runs for ``env_id``, and the keyword arguments with a registered id's defaults.

    A registered id (``"openenv/ConnectFour-v3"``) gives its catalog's server and keyword
    arguments (the caller's win); anything else is served as it is named.
    """
    if env_id is None:
        return None, dict(kwargs)
    import gymnasium as gym  # importing it registers openenv_gym's catalog

    if env_id in gym.registry:
        spec = gym.spec(env_id)
        merged = {**spec.kwargs, **kwargs}
        return merged.pop("server", env_id), merged
    return env_id, dict(kwargs)


def _shutdown(client: AgentsClient, fleet: Fleet) -> None:
    try:
        client.close()
    finally:
        fleet.close(parallel=False)  # a finalizer: see Fleet.close


class RemoteAgents:
    """One multi-agent session and the server it is on (started, or attached to with ``base_url``).

    The env's spaces are built once from its spec, one object per agent, so
    ``observation_space(agent) is observation_space(agent)`` as PettingZoo's API test wants.
    """

    def __init__(
        self,
        env_id: str | None,
        api: str,
        *,
        render_mode: str | None = None,
        base_url: str | None = None,
        binary: bool = True,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        token: str | None = None,
        **kwargs: Any,
    ) -> None:
        # Human mode: the server renders RGB frames and this process shows them in a window.
        wants_human = render_mode == "human"
        if wants_human:
            render_mode = "rgb_array"
        server, kwargs = server_of(env_id, kwargs)
        fleet = MakeOptions.parse(
            server=server,
            base_url=base_url,
            token=token,
            open_timeout=open_timeout,
            startup_timeout=startup_timeout,
            **kwargs,
        ).fleet(needs=NEEDS)
        (self.base_url,) = fleet.start()
        self.name = server or self.base_url
        self.client = AgentsClient(
            self.base_url,
            api,
            render_mode=render_mode,
            binary=binary,
            open_timeout=open_timeout,
            call_timeout=call_timeout,
            env_id=server,
            token=token or fleet.token,
        )
        self._closer = weakref.finalize(self, _shutdown, self.client, fleet)
        try:
            spec = self.client.spec
        except ServerConnectError as exc:
            self._closer()
            if exc.reason.startswith("HTTP 404"):  # the server has no /ws/agents: not a PettingZoo env
                raise ValueError(
                    f"{env_id or self.name} is not a PettingZoo env: make_aec and make_parallel take one served on "
                    "/ws/agents (openenv/ConnectFour-v3, ...); make a single-agent env, or one seat of a "
                    "game such as openenv/Chess-v0, with gym.make"
                ) from None
            raise
        except BaseException:
            self._closer()
            raise
        self.spec = spec
        self.possible_agents: list[str] = list(spec.possible_agents)
        self.observation_spaces = {
            agent: space_from_json(spec.observation_spaces[agent]) for agent in self.possible_agents
        }
        self.action_spaces = {agent: space_from_json(spec.action_spaces[agent]) for agent in self.possible_agents}
        self.state_space = None if spec.state_space is None else space_from_json(spec.state_space)
        self.metadata = dict(spec.metadata)
        modes = [mode for mode in spec.metadata.get("render_modes", []) if mode != "human"]
        # "human" is shown here, from the server's RGB frames: offered when the env has them.
        self.metadata["render_modes"] = [*modes, "human"] if "rgb_array" in modes else modes
        self.render_mode = "human" if wants_human else spec.render_mode
        self.window = Window(spec.metadata.get("render_fps")) if wants_human else None

    def check_open(self, call: str) -> None:
        if not self._closer.alive:
            raise ClosedEnvError(f"{self.name} ({self.base_url})", call)

    def render(self) -> Any:
        """The server's frame, or, in human mode, ``None`` once the frame is shown here."""
        self.check_open("render")
        frame = self.client.render()
        if self.window is None:
            return frame
        self.window.show(frame)
        return None

    def shown(self) -> None:
        """In human mode, show the env as a local env does after each reset and step."""
        if self.window is not None:
            self.render()

    def close(self) -> None:
        """End the session and release the server (if this face started it); idempotent."""
        if self.window is not None:
            self.window.close()
        self._closer()


class RemoteAgentsFace:
    """What both PettingZoo faces answer alike: spaces, state, render, close, their names.

    Listed before PettingZoo's base class, so these take the place of its own.
    """

    _remote: RemoteAgents
    observation_spaces: dict[str, Any]
    action_spaces: dict[str, Any]
    metadata: dict[str, Any]

    def _take_spec(self, remote: RemoteAgents) -> None:
        self._remote = remote
        self.possible_agents = list(remote.possible_agents)
        self.observation_spaces = remote.observation_spaces
        self.action_spaces = remote.action_spaces
        self.metadata = remote.metadata
        self.render_mode = remote.render_mode

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self._remote.base_url

    def observation_space(self, agent: str) -> Any:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    @property
    def state_space(self) -> Any:
        """The space of :meth:`state`, if the env has one."""
        return self._remote.state_space

    def state(self) -> Any:
        """The env's global state, from the server."""
        self._remote.check_open("state")
        return self._remote.client.state()

    def render(self) -> Any:
        """The server's frame in the session's render mode (``None`` in human mode: it is shown here)."""
        return self._remote.render()

    def close(self) -> None:
        """End the session and release the server this face started; idempotent."""
        self._remote.close()

    def __str__(self) -> str:
        return str(self.metadata.get("name", type(self).__name__))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._remote.name}, {self._remote.base_url})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{self!r} holds a live session with its server and cannot be pickled or copied")
