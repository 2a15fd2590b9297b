"""Chess (``openenv/Chess-v0``): one side's seat as tools for an LLM agent, and the game as a PettingZoo env of text.

``ChessEnvironment`` is a seat in a game of ``TextChessEnv`` (python-chess): its tools make a
move, resign and show the board, and the other side is the server's opponent (a random or a
greedy mover) or another client that joined the same game.
"""

from __future__ import annotations

from .environment import ChessEnvironment, ChessObservation, ChessState
from .opponents import GreedyMover, RandomMover
from .text_chess import TextChessEnv

__all__ = ["ChessEnvironment", "ChessObservation", "ChessState", "GreedyMover", "RandomMover", "TextChessEnv"]
