"""Built-in chess opponents for seats no client takes: they read the legal moves an observation lists."""

from __future__ import annotations

import random
from typing import Any

import chess

__all__ = ["GreedyMover", "RandomMover"]

_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


class RandomMover:
    """A uniformly random legal move, from a generator seeded anew each game: with what the game
    gives it (:meth:`~openenv_gym.server.game_rules.GameRules.opponent_seed`: the server's
    randomness, or the players' seed mixed with the server's secret), never with the players'
    seed alone, so a line of moves learnt against it does not replay."""

    def __init__(self) -> None:
        self._rng = random.Random()

    def reset(self, seed: int | None) -> None:
        self._rng = random.Random(seed)

    def __call__(self, observation: dict[str, str], agent: str, action_space: Any) -> str:
        return self._rng.choice(observation["legal_moves"].split())


class GreedyMover(RandomMover):
    """Mates when it can, else takes the most valuable piece it can, else moves at random:
    a scripted opponent a little stronger than chance."""

    def __call__(self, observation: dict[str, str], agent: str, action_space: Any) -> str:
        board = chess.Board(observation["board"].splitlines()[0].removeprefix("FEN: "))
        moves = observation["legal_moves"].split()

        def gain(san: str) -> int:
            move = board.parse_san(san)
            board.push(move)
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return 100
            captured = board.piece_at(move.to_square)
            return _VALUES[captured.piece_type] if captured is not None else 0

        best = max(gain(san) for san in moves)
        return self._rng.choice([san for san in moves if gain(san) == best])
