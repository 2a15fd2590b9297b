"""The reward-hacking catalogue, as it applies to openenv/Chess-v0: each way an agent could try to
win a game it did not win, each paying nothing.

Classes here: moving after the game ended; moving the other side's pieces; two moves in one call;
moves in disguise (promotion to a king, castling through check, null moves, text around a move);
choosing the start position (reset options, the MCP bridge's reset tool included); taking the
opponent's seat (a private game's, a taken one, one behind a token); stalling a lost game with
illegal moves, by leaving it, or by overrunning the turn (each a loss, as being mated is, and the
other side's win); resigning for the other side; replaying a line of moves learnt against the
server's opponent. The rules of games in general are tried in ``test_games.py``.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import chess
import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.envs.chess import ChessEnvironment
from openenv_gym.errors import EnvCreationError, RemoteError
from openenv_gym.server.games import OPPONENT_SECRET_ENV_VAR, SeatError, SeatQuery
from openenv_gym.server.tools import ToolResult
from tests.utils import UNIT, running_server, wait_until

#: White to move, and mated next move whatever it plays (Kg1, the only move, then Rb1#).
MATED_NEXT_MOVE = "6k1/1r6/8/8/8/8/r7/7K w - - 0 1"
WAIT = 60 * UNIT  # the most a test waits on a player's thread


@pytest.fixture
def white() -> Any:
    env = ChessEnvironment()
    env.reset(seed=0)
    yield env
    env.close()


def fen_of(env: ChessEnvironment) -> str:
    return env.show_board().splitlines()[0]


@pytest.mark.parametrize(
    "move",
    [
        "e5",  # a black pawn's move, on white's turn
        "Nf6",  # a black knight's
        "e4 e5",  # two moves in one call
        "e4\ne5",
        "e4;Nf3",
        "e2e4e7e5",
        "0000",  # UCI's null move: passing the turn
        "--",
        "e4!!",  # annotation around a legal move is not that move... unless python-chess reads it as one
        "Ke2",  # the king through its own pawn
        "O-O",  # castling through pieces
        "e8=K",
    ],
)
def test_a_move_that_is_not_white_s_own_legal_move_pays_nothing_and_changes_nothing(white: Any, move: str) -> None:
    before = fen_of(white)
    result: ToolResult = white.make_move(move)
    if not result.is_error:  # python-chess reads "e4!!" as e4: a legal move, which pays nothing either
        assert move == "e4!!" and result.reward is None and not result.done
        return
    assert result.value.startswith("illegal move") and result.reward is None and not result.done
    assert fen_of(white) == before


def test_nothing_pays_after_the_game_ended(white: Any) -> None:
    ended = white.resign()
    assert (ended.reward, ended.done) == (-1.0, True)
    for after in (white.make_move("e4"), white.resign(), white.make_move("resign")):
        assert after.is_error and after.reward is None and not after.done


def test_resigning_resigns_the_callers_side_only(white: Any) -> None:
    assert white.make_move("RESIGN").reward == -1.0  # "resign" as a move is the caller's resignation


def test_the_start_position_is_not_the_callers_to_choose() -> None:
    """A won position handed in as a reset option (as the MCP bridge's reset tool could) is refused."""
    mate_in_one = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    env = ChessEnvironment()
    try:
        with pytest.raises(ValueError, match="no reset options"):
            env.reset(seed=0, options={"fen": mate_in_one})
        env.reset(seed=0)
        assert fen_of(env) == "FEN: rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    finally:
        env.close()
    with running_server(ChessEnvironment) as server:
        remote = gym.make("openenv/Chess-v0", base_url=server.url)
        try:
            with pytest.raises(RemoteError, match="no reset options"):
                remote.reset(options={"fen": mate_in_one})
        finally:
            remote.close()


def test_the_opponents_seat_cannot_be_taken() -> None:
    mine = ChessEnvironment()
    try:
        with pytest.raises(SeatError, match="built-in opponent"):
            ChessEnvironment(SeatQuery(agent="black", game=mine.game.id))
        with pytest.raises(SeatError, match="is taken"):
            ChessEnvironment(SeatQuery(agent="white", game=mine.game.id))
    finally:
        mine.close()
    with running_server(ChessEnvironment) as server:
        host = gym.make("openenv/Chess-v0", base_url=server.url, agent="white", game="g", game_token="t0ken")
        try:
            with pytest.raises(EnvCreationError, match="needs its token"):
                gym.make("openenv/Chess-v0", base_url=server.url, agent="black", game="g")
        finally:
            host.close()


def about_to_be_mated() -> ChessEnvironment:
    """White's seat against the greedy mover (it mates when it can), in a lost position."""
    env = ChessEnvironment(SeatQuery(opponents={"black": "greedy"}))
    env.reset(seed=0)
    env.game.env.board = chess.Board(MATED_NEXT_MOVE)  # the test's position, not a client's choice
    return env


def test_stalling_a_lost_game_with_illegal_moves_loses_it_as_being_mated_does() -> None:
    env = about_to_be_mated()
    try:
        honest = env.make_move("Kg1")
        assert (honest.reward, honest.done) == (-1.0, True) and "checkmate" in honest.value
        env.reset(seed=0)
        env.game.env.board = chess.Board(MATED_NEXT_MOVE)
        results = [env.make_move("Qxf7#") for _ in range(5)]  # one piece of nonsense, five times
        assert all(result.reward is None and result.is_error for result in results[:-1])
        stalled = results[-1]
        assert (stalled.reward, stalled.done, stalled.truncated) == (-1.0, True, False)
        assert "white forfeited (5 illegal moves in a row)" in stalled.value
        assert stalled.info["forfeit"] == {"agent": "white", "cause": "illegal_moves"}
        assert stalled.reward <= honest.reward
    finally:
        env.close()


def test_a_client_stalling_with_illegal_moves_reads_its_loss_in_the_step() -> None:
    with running_server(ChessEnvironment) as server:
        env = gym.make("openenv/Chess-v0", base_url=server.url)
        try:
            env.reset(seed=0)
            move = json.dumps({"name": "make_move", "arguments": {"move": "Qxf7#"}})
            steps = [env.step(move) for _ in range(5)]
            assert [step[1:4] for step in steps] == [(0.0, False, False)] * 4 + [(-1.0, True, False)]
            assert steps[-1][4]["forfeit"] == {"agent": "white", "cause": "illegal_moves"}
        finally:
            env.close()


def test_illegal_moves_do_not_bring_the_move_limit_closer() -> None:
    """Only moves count towards the game's limit (a draw): illegal ones between them do not."""
    env = ChessEnvironment()
    env.game.env.max_turns = 3  # the game's own limit, small here
    try:
        env.reset(seed=0)
        for _ in range(4):
            assert env.make_move("Qxf7#").is_error
        moved = env.make_move("Nf3")  # the random mover replies: two moves of three
        assert not moved.done and not moved.is_error
    finally:
        env.close()


def two_clients(game: str, **black: Any) -> tuple[ChessEnvironment, ChessEnvironment]:
    white = ChessEnvironment(SeatQuery(agent="white", game=game))
    return white, ChessEnvironment(SeatQuery(agent="black", game=game, **black))


def test_leaving_a_game_loses_it_and_the_other_side_wins() -> None:
    white, black = two_clients("left")
    try:
        with ThreadPoolExecutor(2) as pool:
            blacks_reset = pool.submit(black.reset, seed=0)
            white.reset(seed=0)
            whites_move = pool.submit(white.make_move, "e4")  # returns with black's reply
            blacks_reset.result(WAIT)
            black.close()  # black leaves instead of replying
            won = whites_move.result(WAIT)
        assert (won.reward, won.done, won.truncated) == (1.0, True, False)
        assert "black left the game" in won.value and won.info["forfeit"] == {"agent": "black", "cause": "left"}
    finally:
        white.close()
        black.close()


def test_overrunning_the_turn_loses_the_game_and_the_other_side_wins() -> None:
    black = ChessEnvironment(SeatQuery(agent="black", game="slow", turn_timeout=0.2))  # black's turns: 0.2 s
    white = ChessEnvironment(SeatQuery(agent="white", game="slow"))
    try:
        with ThreadPoolExecutor(2) as pool:
            blacks_reset = pool.submit(black.reset, seed=0)
            # Black's reset first: a round's start then waits on no seat with short turns.
            assert wait_until(lambda: "black" in black.game._resets, WAIT)
            white.reset(seed=0)
            won = pool.submit(white.make_move, "e4").result(WAIT)  # black never replies in time
            blacks_reset.result(WAIT)
        late = black.make_move("e5")
        assert (won.reward, won.done, won.truncated) == (1.0, True, False)
        assert (late.reward, late.done, late.truncated) == (-1.0, True, False)
        assert "black did not act within the turn timeout" in late.value
        assert won.info["forfeit"] == late.info["forfeit"] == {"agent": "black", "cause": "timeout"}
    finally:
        white.close()
        black.close()


def test_a_line_learnt_against_the_random_mover_does_not_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its replies to the same seed and the same first move differ from game to game (the seed
    still fixes the env's own draws: chess has none, every game starts from the start); an
    operator who fixes the opponents' secret gets seeded replays back."""

    def replies() -> set[str]:
        env = ChessEnvironment()
        try:
            seen = set()
            for _ in range(8):
                env.reset(seed=0)
                found = re.search(r"your opponent played (\S+)", env.make_move("e4").value)
                assert found
                seen.add(found.group(1))
            return seen
        finally:
            env.close()

    monkeypatch.delenv(OPPONENT_SECRET_ENV_VAR, raising=False)
    assert len(replies()) > 1
    monkeypatch.setenv(OPPONENT_SECRET_ENV_VAR, "fixed by the operator")
    assert len(replies()) == 1


def test_tool_arguments_beyond_the_move_are_refused() -> None:
    with running_server(ChessEnvironment) as server:
        env = gym.make("openenv/Chess-v0", base_url=server.url)
        try:
            env.reset(seed=0)
            text, reward, *_, info = env.step(
                json.dumps({"name": "make_move", "arguments": {"move": "e4", "side": "black"}})
            )
            assert "error" in info and reward == 0.0
            text, *_ = env.step(json.dumps({"name": "show_board", "arguments": {}}))
            assert " w " in text.splitlines()[0]  # nothing was played
        finally:
            env.close()
