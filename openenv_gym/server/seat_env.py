"""One seat of a game as a single-agent Gymnasium env: what a ``/ws`` session of a PettingZoo server plays.

An OpenEnv client, or ``gym.make("openenv/ConnectFour-v3")``, sees an ordinary env: the spaces
of its agent, ``reset`` returning its first observation and ``step`` its next one, with the
reward since it last acted. The other seats are opponents the server plays, or, in a game joined
by id, other clients (:mod:`.games`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from ..errors import ProtocolError
from ..protocol import ErrorCode
from .environment import EnvironmentMetadata
from .games import Game, Games, SeatQuery
from .gym_environment import GymEnvironment

__all__ = ["SeatEnv", "SeatEnvironment", "SeatQuery", "parse_seat_query"]


def parse_seat_query(query: str) -> SeatQuery:
    """The seat a ``/ws`` query asks for.

    Raises:
        ProtocolError: VALIDATION_ERROR: a malformed ``opponents`` or ``turn_timeout``.
    """
    params = urllib.parse.parse_qs(query)

    def one(name: str) -> str | None:
        return params.get(name, [None])[0]

    opponents: dict[str, str] | None = None
    if one("opponents"):
        opponents = {}
        for pair in str(one("opponents")).split(","):
            agent, sep, policy = pair.partition(":")
            if not sep or not agent or not policy:
                raise ProtocolError(
                    ErrorCode.VALIDATION_ERROR.value, f"opponents={one('opponents')!r}: expected agent:policy,..."
                )
            opponents[agent] = policy
    timeout: float | None = None
    if one("turn_timeout") is not None:
        try:
            timeout = float(str(one("turn_timeout")))
        except ValueError:
            timeout = -1.0
        if not 0 < timeout < float("inf"):
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR.value, f"turn_timeout={one('turn_timeout')!r}: expected seconds > 0"
            )
    return SeatQuery(one("agent"), one("game"), one("game_token"), opponents, timeout)


class SeatEnv(gym.Env[Any, Any]):
    """A Gymnasium env over one seat: ``agent`` of ``game``."""

    def __init__(self, games: Games, query: SeatQuery, render_mode: str | None = None) -> None:
        game, agent = games.take(query, render_mode)
        self._games = games
        self.game: Game = game
        self.agent = agent
        self.observation_space = game.env.observation_space(agent)
        self.action_space = game.env.action_space(agent)
        self.render_mode = getattr(game.env, "render_mode", None)
        self.metadata = {**game.env.metadata, "render_modes": list(game.env.metadata.get("render_modes", []))}
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        outcome = self.game.reset(self.agent, seed, options)
        return outcome.observation, outcome.info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        outcome = self.game.act(self.agent, action)
        return outcome.observation, outcome.reward, outcome.terminated, outcome.truncated, outcome.info

    def render(self) -> Any:
        return self.game.render()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._games.leave(self.game, self.agent)


class SeatEnvironment(GymEnvironment):
    """A seat served over ``/ws`` (its calls wait on other players, so each runs in the
    session's thread); it publishes every agent's spaces beside its own, and cannot be
    snapshotted (the env is shared with the game's other seats)."""

    def __init__(self, seat: SeatEnv, name: str) -> None:
        super().__init__(seat, blocking=True)
        self.seat = seat
        self._name = name

    def schema(self) -> dict[str, Any]:
        from ..spaces import space_to_json

        result = super().schema()
        env = self.seat.game.env
        agents = list(self.seat.game.possible_agents)
        # Our extension: a client that asks for another agent's seat reads its spaces here.
        result["agents"] = {
            "api": self.seat.game.api,
            "possible_agents": agents,
            "observation_spaces": {agent: space_to_json(env.observation_space(agent)) for agent in agents},
            "action_spaces": {agent: space_to_json(env.action_space(agent)) for agent in agents},
        }
        return result

    def snapshot_support(self) -> dict[str, Any]:
        return {"supported": False, "reason": "a game's seat shares its env with the game's other seats"}

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self._name,
            description=f"one agent's seat in {self._name}, a PettingZoo env (other seats: opponents or other clients)",
        )


def seat_factory(games: Games, name: str) -> Callable[..., SeatEnvironment]:
    """A ``/ws`` session's factory for ``games``: ``factory(query, render_mode)``."""

    def make(query: SeatQuery | None = None, render_mode: str | None = None) -> SeatEnvironment:
        return SeatEnvironment(SeatEnv(games, query or SeatQuery(), render_mode), name)

    make.__name__ = name
    return make
