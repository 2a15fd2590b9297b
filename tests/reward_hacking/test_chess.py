"""The reward-hacking catalogue, as it applies to openenv/Chess-v0: each way an agent could try to
win a game it did not win, each paying nothing.

Classes here: moving after the game ended; moving the other side's pieces; two moves in one call;
moves in disguise (promotion to a king, castling through check, null moves, text around a move);
choosing the start position (reset options, the MCP bridge's reset tool included); taking the
opponent's seat (a private game's, a taken one, one behind a token); stalling a game with
illegal moves; resigning for the other side.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  registers the openenv/ ids
from openenv_gym.envs.chess import ChessEnvironment
from openenv_gym.errors import EnvCreationError, RemoteError
from openenv_gym.server.games import SeatError, SeatQuery
from openenv_gym.server.tools import ToolResult
from tests.utils import running_server


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


def test_a_flood_of_illegal_moves_ends_in_a_draw_not_a_win() -> None:
    env = ChessEnvironment()
    env.game.env.max_turns = 5  # the game's own limit, small here
    try:
        env.reset(seed=0)
        results = [env.make_move("Qxf7#") for _ in range(5)]
        assert all(result.reward is None for result in results[:-1])
        last = results[-1]
        assert (last.reward, last.done, last.truncated) == (0.0, False, True)
    finally:
        env.close()


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
