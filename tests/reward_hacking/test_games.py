"""The reward-hacking catalogue, as it applies to games on a PettingZoo server (``openenv_gym.server.games``):
each way a player could bend the server's rules to win, or not lose, a round it did not win.

Classes here: squatting a game's id to capture a player who presents the agreed token (both
orders); a turn timeout of the player's own choosing (longer than the server's, absurd, or
shortening another seat's turns); stalling a lost round with actions outside the space; leaving
it (a session that ends, a reset in the middle of it); overrunning the turn; replaying a line of
moves learnt against the server's opponent. Each scores at most what playing on honestly would:
stalling, leaving and overrunning are the staller's loss and the other player's win.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.errors import EnvCreationError
from openenv_gym.server.games import FORFEIT_INFO_KEY, OPPONENT_SECRET_ENV_VAR, Game, Games, Outcome, SeatError
from openenv_gym.server.runner import load_factory
from tests.utils import UNIT, running_server, wait_until

CONNECT_FOUR = "classic/connect_four-v3"
WAIT = 60 * UNIT  # the most a test waits on a game's thread


@pytest.fixture
def games() -> Games:
    """A Connect Four server's table of games (a fresh one), in this process; its turns wait 30 s at most."""
    table = load_factory(CONNECT_FOUR).games
    assert table is not None
    table.configure({}, "random", 30 * UNIT)
    return table


def legal(outcome: Outcome) -> int:
    return int(np.flatnonzero(outcome.observation["action_mask"])[0])


def reset_first(pool: ThreadPoolExecutor, game: Game, agent: str) -> Future[Outcome]:
    """``agent``'s reset, in a thread, asked before the test's other player's: a round's start
    then waits on no seat with short turns, however slowly the thread starts."""
    reset = pool.submit(game.reset, agent, 0, None)
    assert wait_until(lambda: agent in game._resets, WAIT)
    return reset


class Duel:
    """Two players of one Connect Four game in this process: player_0 moves first and its move
    waits (in a thread) for player_1's reply, which the test plays, or does not."""

    def __init__(self, games: Games, game_id: str, pool: ThreadPoolExecutor, **guest: Any) -> None:
        self.game, _ = games.join("player_0", game_id)
        games.join("player_1", game_id, **guest)
        guest_reset = reset_first(pool, self.game, "player_1")
        first = self.game.reset("player_0", 0, None)
        #: player_0's move, its outcome due once player_1 has replied (or the round ended).
        self.host_move: Future[Outcome] = pool.submit(self.game.act, "player_0", legal(first))
        #: player_1's first turn.
        self.guest_turn = guest_reset.result(WAIT)


@pytest.mark.parametrize("squatted_seat", ["player_0", "player_1"])
def test_a_squatter_who_names_the_game_first_captures_no_one(games: Games, squatted_seat: str) -> None:
    """A host and a guest agreed on game "duel" and token "t"; a squatter named "duel" first,
    without the token (or with one of its own). The host and the guest still play each other."""
    for squatters_token in (None, "guessed"):
        squatter, _ = games.join(squatted_seat, "duel", token=squatters_token)
        host, _ = games.join("player_0", "duel", token="t")
        guest, _ = games.join("player_1", "duel", token="t")
        assert host is guest and squatter is not host
        for game in (squatter, host):
            for seat in list(game.seated):
                games.leave(game, seat)
    # The other order: the host first. Without the token the squatter is refused; with another,
    # it gets a game of its own. The guest's seat stays the guest's.
    host, _ = games.join("player_0", "duel", token="t")
    with pytest.raises(SeatError, match="needs its token"):
        games.join("player_1", "duel")
    squatter, _ = games.join("player_1", "duel", token="guessed")
    guest, _ = games.join("player_1", "duel", token="t")
    assert guest is host and squatter is not host


def test_a_turn_timeout_is_the_servers_to_bound(games: Games) -> None:
    for asked in (1e9, 1e300, 31 * UNIT, float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ValueError, match="at most this server's"):
            games.join("player_0", "g", turn_timeout=asked)
    assert len(games) == 0
    with running_server(load_factory(CONNECT_FOUR)) as server:
        with pytest.raises(EnvCreationError, match="at most this server's"):
            gym.make("openenv/ConnectFour-v3", base_url=server.url, agent="player_0", game="g", turn_timeout=1e300)


def test_a_game_makers_short_turns_bind_only_its_own_seat(games: Games) -> None:
    """The maker (player_1, second to move) asks for 0.1 s turns; its guest, who asked for none,
    still has the server's: taking longer than 0.1 s over its first move loses it nothing."""
    with ThreadPoolExecutor(2) as pool:
        game, _ = games.join("player_1", "quick", turn_timeout=0.1)
        games.join("player_0", "quick")
        makers_reset = reset_first(pool, game, "player_1")
        first = game.reset("player_0", 0, None)
        time.sleep(0.5)  # longer than the maker's turns, far shorter than the guest's
        guests_move = pool.submit(game.act, "player_0", legal(first))
        makers_turn = makers_reset.result(WAIT)
        assert not makers_turn.done and FORFEIT_INFO_KEY not in makers_turn.info and game.failure is None
        game.close()
        guests_move.result(WAIT)


def test_stalling_with_actions_outside_the_space_loses_the_round(games: Games) -> None:
    with ThreadPoolExecutor(2) as pool:
        duel = Duel(games, "stall", pool)
        for _ in range(games.rules.max_illegal_actions - 1):
            with pytest.raises(ValueError, match="outside"):
                duel.game.act("player_1", 7)  # Connect Four has columns 0 to 6
        stalled = duel.game.act("player_1", 7)
        won = duel.host_move.result(WAIT)
    assert (stalled.reward, stalled.terminated, stalled.truncated) == (-1.0, True, False)
    assert stalled.info[FORFEIT_INFO_KEY] == {"agent": "player_1", "cause": "illegal_moves"}
    assert (won.reward, won.terminated, won.truncated) == (1.0, True, False)
    # A forfeit is a round's end, not the game's: both play the next round.
    with ThreadPoolExecutor(1) as pool:
        guest_reset = pool.submit(duel.game.reset, "player_1", 1, None)
        assert not duel.game.reset("player_0", 1, None).done and duel.game.episodes == 2
        duel.game.close()
        guest_reset.result(WAIT)


def test_stalling_in_a_private_game_loses_it_too(games: Games) -> None:
    game, agent = games.join()
    game.reset(agent, 0, None)
    for _ in range(games.rules.max_illegal_actions - 1):
        with pytest.raises(ValueError, match="outside"):
            game.act(agent, -1)
    stalled = game.act(agent, -1)
    assert (stalled.reward, stalled.terminated) == (-1.0, True)
    with pytest.raises(ValueError, match="episode is over"):
        game.act(agent, 0)  # an end is handed once


@pytest.mark.parametrize("how", ["session ends", "reset"])
def test_leaving_a_round_loses_it(games: Games, how: str) -> None:
    with ThreadPoolExecutor(2) as pool:
        duel = Duel(games, f"leave-{how}", pool)
        if how == "reset":
            pool.submit(duel.game.reset, "player_1", 0, None)  # waits for a next round that never comes
        else:
            games.leave(duel.game, "player_1")
        won = duel.host_move.result(WAIT)
        assert (won.reward, won.terminated, won.truncated) == (1.0, True, False)
        assert won.info[FORFEIT_INFO_KEY] == {"agent": "player_1", "cause": "left"}
        for _ in range(2):  # the win is paid once
            with pytest.raises(Exception, match=r"episode is over|game .* is over"):
                duel.game.act("player_0", 0)
        duel.game.close()


def test_overrunning_a_turn_loses_the_round(games: Games) -> None:
    with ThreadPoolExecutor(2) as pool:
        duel = Duel(games, "slow", pool, turn_timeout=0.2)
        won = duel.host_move.result(WAIT)  # player_1 never replies
        late = duel.game.act("player_1", legal(duel.guest_turn))
    assert (won.reward, won.terminated, won.truncated) == (1.0, True, False)
    assert won.info[FORFEIT_INFO_KEY] == {"agent": "player_1", "cause": "timeout"}
    assert (late.reward, late.terminated, late.truncated) == (-1.0, True, False)


def test_a_line_learnt_against_the_servers_opponent_does_not_replay(
    games: Games, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same seed and the same moves meet other replies each round; an operator who fixes the
    opponents' secret (tests, evaluations) gets seeded replays back."""

    def replies(game: Game, agent: str) -> set[bytes]:
        seen = set()
        for _ in range(12):
            game.reset(agent, 0, None)
            seen.add(game.act(agent, 3).observation["observation"].tobytes())
        return seen

    monkeypatch.delenv(OPPONENT_SECRET_ENV_VAR, raising=False)
    game, agent = games.join()
    assert len(replies(game, agent)) > 1
    monkeypatch.setenv(OPPONENT_SECRET_ENV_VAR, "fixed by the operator")
    assert len(replies(game, agent)) == 1
