"""Games: one PettingZoo env whose seats are played by several sessions and built-in opponents.

A :class:`Game` holds the env and sequences it. Each player seat is one session (a client
anywhere, with the single-agent face of its agent); the other seats are opponents the server
plays (:mod:`.opponents`). In an AEC env the game runs the turns: an opponent's at once, a
player's by waking that player's session; in a Parallel env it gathers every live player's
action, adds the opponents', and steps once.

Every wait has a deadline. A round starts when every player has asked for a reset; a turn (a
step's gathering) waits at most ``turn_timeout`` seconds for the player it waits on. A player
that overruns it, or whose session ends, ends the game: every seat still in it gets a truncated
outcome whose ``info["game_failure"]`` says who and why, and a later reset is refused with that
reason. Sessions call these methods from their worker threads; one lock and its condition
guard the game.

:class:`Games` is a server's table of games by id: a session joins one by id and agent (with
the game's token, if it was made with one), or gets a private game whose other seats are all
opponents.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import GameOverError, SeatError
from .agents_host import api_of
from .opponents import RANDOM, Policy, make_policy

__all__ = ["FAILURE_INFO_KEY", "Game", "GameOverError", "Games", "Outcome", "SeatError", "SeatQuery"]

#: The info key of a truncation the game's failure caused (a player that left or overran its turn).
FAILURE_INFO_KEY = "game_failure"
#: Seconds a turn may wait for a player when neither the server nor the game says otherwise.
DEFAULT_TURN_TIMEOUT = 60.0


@dataclasses.dataclass
class Outcome:
    """What a player's seat gets back: its agent's observation, the reward since it last acted,
    the flags and the info, as Gymnasium's ``step`` returns them."""

    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclasses.dataclass(frozen=True)
class SeatQuery:
    """What a ``/ws`` session of a PettingZoo server asks for in its query string.

    ``/ws?agent=player_1&game=GAME&game_token=T&opponents=player_0:random&turn_timeout=30``
    (:func:`~openenv_gym.server.seat_env.parse_seat_query` reads it);
    every field may be left out (the env's first agent, in a private game against opponents).
    """

    agent: str | None = None
    game: str | None = None
    token: str | None = None
    opponents: dict[str, str] | None = None
    turn_timeout: float | None = None


class Game:
    """One env, its player seats and opponents; see the module's docstring.

    Args:
        game_id: the game's id in its server's table.
        env: the PettingZoo env (AEC or Parallel), made for this game.
        players: the agents that sessions play.
        opponents: a policy for every other agent.
        turn_timeout: seconds a turn (or a round's start) waits for a player.
        token: what a joining session must present, or ``None``.
    """

    def __init__(
        self,
        game_id: str,
        env: Any,
        players: tuple[str, ...],
        opponents: Mapping[str, Policy],
        turn_timeout: float,
        token: str | None = None,
    ) -> None:
        self.id = game_id
        self.env = env
        self.api = api_of(env)
        if self.api is None:
            raise TypeError(f"a game needs a PettingZoo env, got {type(env).__name__}")
        self.possible_agents: tuple[str, ...] = tuple(env.possible_agents)
        self.players = players
        self.opponents = dict(opponents)
        self.turn_timeout = turn_timeout
        self.token = token
        self._condition = threading.Condition()
        self.seated: set[str] = set()
        #: Why the game ended for good, or None.
        self.failure: str | None = None
        self.episodes = 0
        self._resets: dict[str, tuple[int | None, dict[str, Any] | None]] = {}
        self._outcomes: dict[str, Outcome | None] = dict.fromkeys(players)
        #: The players the game waits on now, and since when (its deadline starts then).
        self._waiting_on: set[str] = set()
        self._since = time.monotonic()
        self._actions: dict[str, Any] = {}  # Parallel: the round's actions so far
        self._observations: dict[str, Any] = {}  # Parallel: each agent's last, for opponents

    # Seats ----------------------------------------------------------------------------------------

    def sit(self, agent: str, token: str | None) -> None:
        """Take ``agent``'s seat.

        Raises:
            SeatError: not a player seat of this game, already taken, or the wrong token.
        """
        with self._condition:
            if self.token is not None and (token is None or not secrets.compare_digest(token, self.token)):
                raise SeatError(f"game {self.id} needs its token to join")
            if agent not in self.possible_agents:
                raise SeatError(f"{agent!r} is not an agent of this game {list(self.possible_agents)}")
            if agent not in self.players:
                raise SeatError(f"{agent!r} is played by a built-in opponent in game {self.id}")
            if agent in self.seated:
                raise SeatError(f"{agent!r} of game {self.id} is taken")
            if self.failure is not None:
                raise SeatError(f"game {self.id} is over: {self.failure}")
            self.seated.add(agent)
            self._condition.notify_all()

    def leave(self, agent: str) -> None:
        """``agent``'s session ended: the game ends for the others (unless it already had)."""
        with self._condition:
            self.seated.discard(agent)
            if self.failure is None and len(self.players) > 1:
                self._fail(f"{agent} left the game (its session ended)")

    @property
    def empty(self) -> bool:
        with self._condition:
            return not self.seated

    # Rounds and turns -----------------------------------------------------------------------------

    def reset(self, agent: str, seed: int | None, options: dict[str, Any] | None) -> Outcome:
        """Ask for a new round; once every player has, the env resets. Returns ``agent``'s first
        observation (in AEC, once its first turn comes).

        The round's seed is the first given by the players in the env's agent order.

        Raises:
            GameOverError: the game ended, or a player did not ask within the turn timeout.
        """
        with self._condition:
            self._check_not_over()
            episodes = self.episodes
            if not self._resets:
                self._since = time.monotonic()
            self._resets[agent] = (seed, options)
            self._outcomes[agent] = None
            if set(self._resets) == set(self.players):
                self._start_round()
            else:
                self._waiting_on = set(self.players) - set(self._resets)
                self._wait(lambda: self.episodes != episodes)
            self._check_not_over()
            return self._outcome_of(agent)

    def act(self, agent: str, action: Any) -> Outcome:
        """``agent``'s action; returns its next outcome (its next turn, or its end).

        Raises:
            ValueError: the action is not in the agent's action space (nothing changed), or it
                is not the agent's turn.
        """
        with self._condition:
            if self.failure is not None:
                return self._failed_outcome(agent)
            space = self.env.action_space(agent)
            if not space.contains(action):
                raise ValueError(f"action {action!r:.200} is outside {agent}'s action space {space}")
            if self.api == "aec":
                if self.env.agent_selection != agent or self._outcomes.get(agent) is None:
                    raise ValueError(f"it is not {agent}'s turn")
                self._outcomes[agent] = None
                self.env.step(action)
                self._advance()
            else:
                if agent not in self._waiting_on:
                    raise ValueError(f"{agent} already acted this step, or is done")
                self._outcomes[agent] = None
                self._actions[agent] = action
                self._waiting_on.discard(agent)
                if not self._waiting_on:
                    self._step_parallel()
            return self._outcome_of(agent)

    def _start_round(self) -> None:
        seeds = [self._resets[player][0] for player in self.possible_agents if player in self._resets]
        seed = next((s for s in seeds if s is not None), None)
        options = next((o for _, o in self._resets.values() if o is not None), None)
        self._resets.clear()
        for policy in self.opponents.values():
            reset = getattr(policy, "reset", None)
            if reset is not None:
                reset(seed)
        if self.api == "aec":
            self.env.reset(seed=seed, options=options)
            self._advance()
        else:
            observations, infos = self.env.reset(seed=seed, options=options)
            self._observations = dict(observations)
            for player in self.players:
                if player in observations:
                    self._outcomes[player] = Outcome(
                        observations[player], 0.0, False, False, dict(infos.get(player, {}))
                    )
            self._next_gathering()
        self.episodes += 1
        self._condition.notify_all()

    def _advance(self) -> None:
        """Run the AEC env until a live player's turn: opponents act, done agents step out."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            observation, reward, terminated, truncated, info = env.last()
            if agent in self.opponents:
                env.step(
                    None
                    if terminated or truncated
                    else self.opponents[agent](observation, agent, env.action_space(agent))
                )
                continue
            self._outcomes[agent] = Outcome(observation, float(reward), bool(terminated), bool(truncated), dict(info))
            if terminated or truncated:
                env.step(None)
                continue
            self._waiting_on, self._since = {agent}, time.monotonic()
            self._condition.notify_all()
            return
        # The episode is over; a player the env dropped without a last turn ends with it.
        for player in self.players:
            if self._outcomes.get(player) is None:
                self._outcomes[player] = Outcome(env.observe(player), 0.0, True, False, {})
        self._waiting_on = set()
        self._condition.notify_all()

    def _step_parallel(self) -> None:
        env = self.env
        actions = dict(self._actions)
        for agent, policy in self.opponents.items():
            if agent in env.agents:
                actions[agent] = policy(self._observations.get(agent), agent, env.action_space(agent))
        observations, rewards, terminations, truncations, infos = env.step(actions)
        self._observations.update(observations)
        for player in self.players:
            if player in rewards:
                self._outcomes[player] = Outcome(
                    observations.get(player),
                    float(rewards[player]),
                    bool(terminations.get(player, False)),
                    bool(truncations.get(player, False)),
                    dict(infos.get(player, {})),
                )
        self._next_gathering()
        self._condition.notify_all()

    def _next_gathering(self) -> None:
        self._actions = {}
        self._waiting_on = {player for player in self.players if player in self.env.agents}
        self._since = time.monotonic()

    def _outcome_of(self, agent: str) -> Outcome:
        """Wait (within the turn timeout of whoever is waited on) for ``agent``'s outcome."""
        self._wait(lambda: self._outcomes.get(agent) is not None)
        outcome = self._outcomes.get(agent)
        if outcome is None:  # the game failed while this seat waited
            return self._failed_outcome(agent)
        return outcome

    def _wait(self, ready: Callable[[], bool]) -> None:
        """Wait until ``ready()`` or the game fails; fail it when a player overruns its turn."""
        while not ready() and self.failure is None:
            remaining = self._since + self.turn_timeout - time.monotonic()
            if remaining <= 0:
                late = ", ".join(sorted(self._waiting_on)) or "a player"
                what = "ask for a reset" if self._resets else "act"
                self._fail(f"{late} did not {what} within the turn timeout ({self.turn_timeout:g} s)")
                return
            self._condition.wait(remaining)

    def _fail(self, reason: str) -> None:
        self.failure = reason
        self._condition.notify_all()

    def _failed_outcome(self, agent: str) -> Outcome:
        last = self._outcomes.get(agent)
        observation = last.observation if last is not None else self._last_observation(agent)
        return Outcome(observation, 0.0, False, True, {FAILURE_INFO_KEY: self.failure})

    def _last_observation(self, agent: str) -> Any:
        if self.api == "aec":
            try:
                return self.env.observe(agent)
            except Exception:
                return None
        return self._observations.get(agent)

    def _check_not_over(self) -> None:
        if self.failure is not None:
            raise GameOverError(f"game {self.id} is over: {self.failure}")

    def observe(self, agent: str) -> Any:
        """What ``agent`` observes now, without acting."""
        with self._condition:
            return self._last_observation(agent)

    # Rendering and closing -----------------------------------------------------------------------

    def render(self) -> Any:
        with self._condition:
            return self.env.render()

    def close(self) -> None:
        with self._condition:
            self._fail(self.failure or "the game was closed")
            self.env.close()


class Games:
    """A server's games by id; sessions join them (:meth:`join`) and leave them (:meth:`leave`).

    Args:
        make_env: makes a game's env in a render mode (the server's PettingZoo env, its own API).
        policies: the opponents the server has, by name (``"random"`` always).
        default_opponent: who plays a private game's other seats.
        turn_timeout: the games' turn timeout unless one is made with its own.
    """

    def __init__(
        self,
        make_env: Callable[[str | None], Any],
        policies: Mapping[str, Callable[[], Policy]] | None = None,
        default_opponent: str = RANDOM,
        turn_timeout: float = DEFAULT_TURN_TIMEOUT,
    ) -> None:
        self.make_env = make_env
        self.policies = dict(policies or {})
        self.default_opponent = default_opponent
        self.turn_timeout = turn_timeout
        self._games: dict[str, Game] = {}
        self._lock = threading.Lock()

    def configure(
        self, policies: Mapping[str, Callable[[], Policy]], default_opponent: str, turn_timeout: float
    ) -> None:
        """Take a server's options: its named opponents (beside the env's own), the default one, the turn timeout.

        Raises:
            ValueError: a default opponent the server does not have.
        """
        policies = {**self.policies, **policies}  # the env's own opponents, and the server's
        if default_opponent != RANDOM and default_opponent not in policies:
            raise ValueError(f"default opponent {default_opponent!r} is not one of {sorted({RANDOM, *policies})}")
        self.policies = policies
        self.default_opponent = default_opponent
        self.turn_timeout = turn_timeout

    def __len__(self) -> int:
        with self._lock:
            return len(self._games)

    def take(
        self, query: SeatQuery, render_mode: str | None = None, default_agent: str | None = None
    ) -> tuple[Game, str]:
        """:meth:`join` with what a session's query asks for (``default_agent`` when it names none)."""
        return self.join(
            query.agent or default_agent,
            query.game,
            token=query.token,
            opponents=query.opponents,
            render_mode=render_mode,
            turn_timeout=query.turn_timeout,
        )

    def join(
        self,
        agent: str | None = None,
        game_id: str | None = None,
        *,
        token: str | None = None,
        opponents: Mapping[str, str] | None = None,
        render_mode: str | None = None,
        turn_timeout: float | None = None,
    ) -> tuple[Game, str]:
        """Seat a session: in game ``game_id`` (made now if there is none: its other seats wait for
        players, but those ``opponents`` names), or, without an id, in a private game whose
        other seats are all opponents. Returns the game and the agent seated (the env's first
        agent when ``agent`` is None).

        Raises:
            SeatError: the seat cannot be taken (the message says why).
            ValueError: an unknown opponent name, or a game's render mode asked differently.
        """
        with self._lock:
            game = self._games.get(game_id) if game_id is not None else None
            if game is None:
                env = self.make_env(render_mode)
                try:
                    game = self._new_game(env, agent, game_id, token, opponents or {}, turn_timeout)
                except BaseException:
                    env.close()
                    raise
                self._games[game.id] = game
            elif render_mode is not None and getattr(game.env, "render_mode", None) != render_mode:
                raise ValueError(
                    f"game {game.id} renders in {getattr(game.env, 'render_mode', None)!r}, not {render_mode!r}"
                )
            seated = agent if agent is not None else next(iter(game.players), game.possible_agents[0])
            try:
                game.sit(seated, token)
            except SeatError:
                if not game.seated:
                    self._remove(game)
                raise
            return game, seated

    def _new_game(
        self,
        env: Any,
        agent: str | None,
        game_id: str | None,
        token: str | None,
        opponents: Mapping[str, str],
        turn_timeout: float | None,
    ) -> Game:
        possible = tuple(env.possible_agents)
        unknown = (set(opponents) | ({agent} if agent is not None else set())) - set(possible)
        if unknown:
            raise SeatError(f"{sorted(unknown)} are not agents of this env {list(possible)}")
        if game_id is None:  # private: the session plays one agent, the server the others
            player = agent if agent is not None else possible[0]
            names = {other: opponents.get(other, self.default_opponent) for other in possible if other != player}
            players: tuple[str, ...] = (player,)
            game_id = f"private-{secrets.token_hex(6)}"
        else:
            names = dict(opponents)
            players = tuple(other for other in possible if other not in names)
            if agent is not None and agent in names:
                raise SeatError(f"{agent!r} cannot be both a player and an opponent")
        policies = {other: make_policy(name, self.policies) for other, name in names.items()}
        timeout = self.turn_timeout if turn_timeout is None else turn_timeout
        return Game(game_id, env, players, policies, timeout, token)

    def leave(self, game: Game, agent: str) -> None:
        """``agent``'s session ended; the game closes once its last player has gone."""
        game.leave(agent)
        with self._lock:
            if game.empty:
                self._remove(game)

    def _remove(self, game: Game) -> None:
        if self._games.get(game.id) is game:
            del self._games[game.id]
        game.close()
