"""Games: one PettingZoo env whose seats are played by several sessions and built-in opponents.

A :class:`Game` holds the env and sequences it. Each player seat is one session (a client
anywhere, with the single-agent face of its agent); the other seats are opponents the server
plays (:mod:`.opponents`). In an AEC env the game runs the turns: an opponent's at once, a
player's by waking that player's session; in a Parallel env it gathers every live player's
action, adds the opponents', and steps once.

The rules are the server's (:class:`GameRules`); a client changes none of them, but may shorten
its own turns. Every wait has a deadline: a round starts when every player has asked for a
reset, and a turn waits at most the turn timeout of the player it waits on. A round a player
cuts short is that player's loss, a forfeit (terminated, ``info["forfeit"]`` says who and why):
in a game of several players, one that leaves (its session ends, or it resets mid-round) or
overruns its turn; in any game, one that sends :attr:`GameRules.max_illegal_actions` actions
in a row outside its action space. Every other player of the round wins. A game left or
overrun is over for good: a later reset is refused with the reason. Sessions call these
methods from their worker threads; one lock and its condition guard the game.

:class:`Games` is a server's table of games, keyed by id and token together: a session joins
one by id and agent (and the token it was made with), or gets a private game whose other seats
are all opponents. A session that names an id without the token, or with another, never joins
a game made with a token; a session with a token never joins one made without.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import GameOverError, SeatError
from .agents_host import api_of
from .game_rules import (
    FAILURE_INFO_KEY,
    FORFEIT_INFO_KEY,
    ILLEGAL_MOVES,
    LEFT,
    OPPONENT_SECRET_ENV_VAR,
    TIMEOUT,
    GameRules,
    Outcome,
    SeatQuery,
)
from .opponents import RANDOM, Policy, make_policy

__all__ = [
    "FAILURE_INFO_KEY",
    "FORFEIT_INFO_KEY",
    "OPPONENT_SECRET_ENV_VAR",
    "Game",
    "GameOverError",
    "GameRules",
    "Games",
    "Outcome",
    "SeatError",
    "SeatQuery",
]


def _same_token(made_with: str | None, given: str | None) -> bool:
    if made_with is None or given is None:
        return made_with is given
    return secrets.compare_digest(made_with.encode(), given.encode())


class Game:
    """One env, its player seats and opponents; see the module's docstring.

    Args:
        game_id: the game's id in its server's table.
        env: the PettingZoo env (AEC or Parallel), made for this game.
        players: the agents that sessions play.
        opponents: a policy for every other agent.
        rules: the server's rules.
        token: what a joining session must present, or ``None`` (then it must present none).
        turn_timeout: how long a round's start waits for a seat no session has taken (the
            maker's turn timeout; default: the rules').
    """

    def __init__(
        self,
        game_id: str,
        env: Any,
        players: tuple[str, ...],
        opponents: Mapping[str, Policy],
        rules: GameRules,
        token: str | None = None,
        turn_timeout: float | None = None,
    ) -> None:
        self.id = game_id
        self.env = env
        self.api = api_of(env)
        if self.api is None:
            raise TypeError(f"a game needs a PettingZoo env, got {type(env).__name__}")
        self.possible_agents: tuple[str, ...] = tuple(env.possible_agents)
        self.players = players
        self.opponents = dict(opponents)
        self.rules = rules
        self.turn_timeout = rules.turn_timeout if turn_timeout is None else turn_timeout
        self.token = token
        self._condition = threading.Condition()
        self.seated: set[str] = set()
        self._clocks: dict[str, float] = {}  # each seated player's turn timeout
        #: Why the game ended for good, or None.
        self.failure: str | None = None
        self.episodes = 0
        self._resets: dict[str, tuple[int | None, dict[str, Any] | None]] = {}
        self._reset_since = time.monotonic()
        #: Each player's latest outcome, and the players that have not been handed theirs yet.
        self._outcomes: dict[str, Outcome | None] = dict.fromkeys(players)
        self._unread: set[str] = set()
        #: The players whose episode is live: reset, and not yet given its end.
        self._in_round: set[str] = set()
        #: The players the game waits on for an action now, and since when.
        self._waiting_on: set[str] = set()
        self._since = time.monotonic()
        self._illegal: dict[str, int] = {}  # actions in a row outside the space, per player
        self._actions: dict[str, Any] = {}  # Parallel: the round's actions so far
        self._observations: dict[str, Any] = {}  # Parallel: each agent's last, for opponents

    # Seats ----------------------------------------------------------------------------------------

    def sit(self, agent: str, token: str | None, turn_timeout: float | None = None) -> None:
        """Take ``agent``'s seat, whose turns wait at most ``turn_timeout`` (default: the rules').

        Raises:
            SeatError: not a player seat of this game, already taken, or the wrong token (or a
                token for a game made without one).
        """
        with self._condition:
            if not _same_token(self.token, token):
                if self.token is None:
                    raise SeatError(f"game {self.id} was made without a token")
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
            self._clocks[agent] = self.rules.clock(turn_timeout)
            self._condition.notify_all()

    def leave(self, agent: str) -> None:
        """``agent``'s session ended: in a game of several players, it forfeits a round it is in,
        and the game ends for good."""
        with self._condition:
            self.seated.discard(agent)
            if len(self.players) > 1:
                reason = f"{agent} left the game (its session ended)"
                if agent in self._in_round:
                    self._forfeit([agent], LEFT, reason)
                self._end_for_good(reason)

    @property
    def empty(self) -> bool:
        with self._condition:
            return not self.seated

    # Rounds and turns -----------------------------------------------------------------------------

    def reset(self, agent: str, seed: int | None, options: dict[str, Any] | None) -> Outcome:
        """Ask for a new round; once every player has, the env resets. Returns ``agent``'s first
        observation (in AEC, once its first turn comes). A round that ended before that turn
        (another player forfeited) returns its end here, and again to the seat's next :meth:`act`,
        which carries its reward.

        The round's env seed is the first given by the players in the env's agent order; the
        opponents' draws mix it with the rules' secret (:meth:`GameRules.opponent_seed`).

        Raises:
            GameOverError: the game ended, or a player did not ask within the turn timeout.
        """
        with self._condition:
            self._check_not_over()
            if agent in self._in_round and len(self.players) > 1:  # leaving a round is losing it
                self._forfeit([agent], LEFT, f"{agent} left the round (it reset)")
            episodes = self.episodes
            if not self._resets:
                self._reset_since = time.monotonic()
            self._resets[agent] = (seed, options)
            self._unread.discard(agent)
            if set(self._resets) == set(self.players):
                self._start_round()
            else:
                self._wait(lambda: self.episodes != episodes or self.failure is not None)
            if self.episodes == episodes:
                self._check_not_over()
            return self._outcome_of(agent, keep_an_end=True)

    def act(self, agent: str, action: Any) -> Outcome:
        """``agent``'s action; returns its next outcome (its next turn, or its end).

        Raises:
            ValueError: the action is outside the agent's action space (nothing changed, unless
                it was one too many: then the round is forfeited and its end returned), or it
                is not the agent's turn, or its episode is over.
            GameOverError: the game ended for good and this seat has had its end.
        """
        with self._condition:
            self._check_deadlines()  # a turn overrun while nobody waited still counts
            if agent in self._unread:  # its round ended while it chose (a forfeit), or before its first turn
                return self._take(agent)
            if agent not in self._in_round:
                self._check_not_over()
                raise ValueError(f"{agent}'s episode is over: reset for a new one")
            if agent not in self._waiting_on:
                raise ValueError(
                    f"it is not {agent}'s turn" if self.api == "aec" else f"{agent} already acted this step"
                )
            space = self.env.action_space(agent)
            if not space.contains(action):
                count = self._illegal[agent] = self._illegal.get(agent, 0) + 1
                if count >= self.rules.max_illegal_actions:
                    self._forfeit([agent], ILLEGAL_MOVES, f"{agent} sent {count} actions in a row outside its space")
                    return self._take(agent)
                raise ValueError(f"action {action!r:.200} is outside {agent}'s action space {space}")
            self._illegal[agent] = 0
            if self.api == "aec":
                self.env.step(action)
                self._advance()
            else:
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
        opponent_seed = self.rules.opponent_seed(seed)
        for policy in self.opponents.values():
            reset = getattr(policy, "reset", None)
            if reset is not None:
                reset(opponent_seed)
        self._unread.clear()
        self._illegal.clear()
        self._in_round = set(self.players)
        if self.api == "aec":
            self.env.reset(seed=seed, options=options)
            self._advance()
        else:
            observations, infos = self.env.reset(seed=seed, options=options)
            self._observations = dict(observations)
            for player in self.players:
                if player in observations:
                    self._give(player, Outcome(observations[player], 0.0, False, False, dict(infos.get(player, {}))))
                else:
                    self._in_round.discard(player)
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
            self._give(agent, Outcome(observation, float(reward), bool(terminated), bool(truncated), dict(info)))
            if terminated or truncated:
                env.step(None)
                continue
            self._waiting_on, self._since = {agent}, time.monotonic()
            self._condition.notify_all()
            return
        # The episode is over; a player the env dropped without a last turn ends with it.
        for player in self.players:
            if player in self._in_round:
                self._give(player, Outcome(env.observe(player), 0.0, True, False, {}))
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
            if player in rewards and player in self._in_round:
                self._give(
                    player,
                    Outcome(
                        observations.get(player),
                        float(rewards[player]),
                        bool(terminations.get(player, False)),
                        bool(truncations.get(player, False)),
                        dict(infos.get(player, {})),
                    ),
                )
        self._next_gathering()
        self._condition.notify_all()

    def _next_gathering(self) -> None:
        self._actions = {}
        self._waiting_on = {player for player in self._in_round if player in self.env.agents}
        self._since = time.monotonic()

    # Outcomes -------------------------------------------------------------------------------------

    def _give(self, agent: str, outcome: Outcome) -> None:
        """``agent``'s next outcome, for its session to take; an end takes it out of the round."""
        self._outcomes[agent] = outcome
        self._unread.add(agent)
        if outcome.done:
            self._in_round.discard(agent)

    def _take(self, agent: str) -> Outcome:
        self._unread.discard(agent)
        outcome = self._outcomes[agent]
        assert outcome is not None  # given before it was unread
        return outcome

    def _outcome_of(self, agent: str, keep_an_end: bool = False) -> Outcome:
        """Wait (within the turn timeout of whoever is waited on) for ``agent``'s outcome; an end
        stays for its next :meth:`act` when ``keep_an_end`` (a reset cannot carry a reward)."""
        self._wait(lambda: agent in self._unread or agent not in self._in_round)
        if agent not in self._unread:  # out of the round with nothing to hand (a Parallel agent not reset)
            return Outcome(self._last_observation(agent), 0.0, True, False, {})
        outcome = self._outcomes[agent]
        assert outcome is not None
        if not (keep_an_end and outcome.done):
            self._unread.discard(agent)
        return outcome

    def _forfeit(self, losers: Iterable[str], cause: str, reason: str) -> None:
        """End the round: each of ``losers`` loses it, every other player in it wins."""
        losers = [agent for agent in self.possible_agents if agent in set(losers)]
        info = {FORFEIT_INFO_KEY: {"agent": losers[0], "cause": cause}, FAILURE_INFO_KEY: reason}
        for player in self.players:
            if player in self._in_round:
                reward = self.rules.loss if player in losers else self.rules.win
                self._give(player, Outcome(self._last_observation(player), reward, True, False, dict(info)))
        self._waiting_on = set()
        self._condition.notify_all()

    def _end_for_good(self, reason: str) -> None:
        """No round after this one (a seat is empty or was overrun); waiting resets give up."""
        if self.failure is None:
            self.failure = reason
        self._condition.notify_all()

    def _fail(self, reason: str) -> None:
        """End the game for good, cutting a round short for everyone in it (truncated, no one's fault)."""
        self._end_for_good(reason)
        for player in self.players:
            if player in self._in_round:
                self._give(
                    player, Outcome(self._last_observation(player), 0.0, False, True, {FAILURE_INFO_KEY: reason})
                )
        self._waiting_on = set()

    # Deadlines ------------------------------------------------------------------------------------

    def _clock(self, agent: str) -> float:
        return self._clocks.get(agent, self.turn_timeout)

    def _late(self) -> tuple[list[str], list[str]]:
        """The players overrunning their turn now, and those overrunning a round's start."""
        now = time.monotonic()
        turns: list[str] = []
        if len(self.players) > 1:  # a private game's player keeps only itself waiting
            turns = [p for p in self.possible_agents if p in self._waiting_on and now >= self._since + self._clock(p)]
        starts: list[str] = []
        if self._resets:
            pending = [p for p in self.players if p not in self._resets and p not in self._in_round]
            starts = [p for p in pending if now >= self._reset_since + self._clock(p)]
        return turns, starts

    def _check_deadlines(self) -> bool:
        """Forfeit the players that overran their turn; fail the game when a round's start was
        overrun. Whether either happened."""
        turns, starts = self._late()
        if turns:
            reason = f"{', '.join(turns)} did not act within the turn timeout ({self._clock(turns[0]):g} s)"
            self._forfeit(turns, TIMEOUT, reason)
            self._end_for_good(reason)
        if starts:
            self._fail(
                f"{', '.join(starts)} did not ask for a reset within the turn timeout ({self._clock(starts[0]):g} s)"
            )
        return bool(turns or starts)

    def _next_deadline(self) -> float:
        deadlines = [self._since + self._clock(p) for p in self._waiting_on]
        if self._resets:
            pending = [p for p in self.players if p not in self._resets and p not in self._in_round]
            deadlines += [self._reset_since + self._clock(p) for p in pending]
        return min(deadlines, default=time.monotonic() + self.rules.turn_timeout)

    def _wait(self, ready: Callable[[], bool]) -> None:
        """Wait until ``ready()``, holding every player waited on to its deadline."""
        while not ready():
            if self._check_deadlines():
                continue
            remaining = self._next_deadline() - time.monotonic()
            self._condition.wait(min(max(remaining, 0.0), threading.TIMEOUT_MAX))

    # Observing, rendering, closing ----------------------------------------------------------------

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

    def render(self) -> Any:
        with self._condition:
            return self.env.render()

    def close(self) -> None:
        with self._condition:
            self._fail(self.failure or "the game was closed")
            self.env.close()


def _key(game_id: str, token: str | None) -> tuple[str, str | None]:
    """A game's key in the table: its id and a digest of its token (so a lookup compares no token)."""
    return game_id, None if token is None else hashlib.sha256(token.encode()).hexdigest()


class Games:
    """A server's games by id and token; sessions join them (:meth:`join`) and leave them (:meth:`leave`).

    Args:
        make_env: makes a game's env in a render mode (the server's PettingZoo env, its own API).
        policies: the opponents the server has, by name (``"random"`` always).
        default_opponent: who plays a private game's other seats.
        rules: the server's rules for every game (:meth:`configure` sets its turn timeout).
    """

    def __init__(
        self,
        make_env: Callable[[str | None], Any],
        policies: Mapping[str, Callable[[], Policy]] | None = None,
        default_opponent: str = RANDOM,
        rules: GameRules | None = None,
    ) -> None:
        self.make_env = make_env
        self.policies = dict(policies or {})
        self.default_opponent = default_opponent
        self.rules = rules or GameRules()
        self._games: dict[tuple[str, str | None], Game] = {}
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
        self.rules = dataclasses.replace(self.rules, turn_timeout=turn_timeout)

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
        """Seat a session: in the game of ``game_id`` and ``token`` (made now if there is none:
        its other seats wait for players, but those ``opponents`` names), or, without an id, in
        a private game whose other seats are all opponents. Returns the game and the agent
        seated (the env's first agent when ``agent`` is None). The seat's turns wait at most
        ``turn_timeout`` (at most, and by default, the server's).

        Raises:
            SeatError: the seat cannot be taken (the message says why), or the id is a game's
                made with a token and none was given.
            ValueError: an unknown opponent name, a game's render mode asked differently, or
                a turn timeout that is not above 0 and at most the server's.
        """
        with self._lock:
            clock = self.rules.clock(turn_timeout)
            game = self._games.get(_key(game_id, token)) if game_id is not None else None
            if game is None and game_id is not None and token is None and any(id_ == game_id for id_, _ in self._games):
                raise SeatError(f"game {game_id} needs its token to join")
            if game is None:
                env = self.make_env(render_mode)
                try:
                    game = self._new_game(env, agent, game_id, token, opponents or {}, clock)
                except BaseException:
                    env.close()
                    raise
                self._games[_key(game.id, token)] = game
            elif render_mode is not None and getattr(game.env, "render_mode", None) != render_mode:
                raise ValueError(
                    f"game {game.id} renders in {getattr(game.env, 'render_mode', None)!r}, not {render_mode!r}"
                )
            seated = agent if agent is not None else next(iter(game.players), game.possible_agents[0])
            try:
                game.sit(seated, token, clock)
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
        turn_timeout: float,
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
        return Game(game_id, env, players, policies, self.rules, token, turn_timeout)

    def leave(self, game: Game, agent: str) -> None:
        """``agent``'s session ended; the game closes once its last player has gone."""
        game.leave(agent)
        with self._lock:
            if game.empty:
                self._remove(game)

    def _remove(self, game: Game) -> None:
        key = _key(game.id, game.token)
        if self._games.get(key) is game:
            del self._games[key]
        game.close()
