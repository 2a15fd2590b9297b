"""`TextChessEnv`: chess as a PettingZoo AEC env of text, for agents that read and write moves.

Two agents, ``white`` and ``black``. Each observes the board as text (FEN and a diagram) and its
legal moves in SAN; each acts with one move as text (SAN such as ``"Nf3"``, or UCI such as
``"g1f3"``), or ``"resign"``. A move that is not legal changes nothing and the same agent moves
again, with ``infos[agent]["illegal_move"]`` saying why: an agent's mistake is its to fix, never
a crash, but ``max_illegal_moves`` of them in a row forfeit the game (a loss, as resigning is,
with ``infos[agent]["forfeit"] = {"agent": ..., "cause": "illegal_moves"}``), so stalling
with illegal moves never pays better than losing. The game pays once, at its end: +1 to the
winner and -1 to the loser (mate, resignation or forfeit), 0 to both for a draw (stalemate,
insufficient material, the 75-move rule, fivefold repetition); after ``max_turns`` moves it is
truncated, paying 0. Only moves count towards that limit: illegal ones cannot hurry it.
"""

from __future__ import annotations

import string
from typing import Any

import chess
import pettingzoo
from gymnasium import spaces

from openenv_gym.server.game_rules import FORFEIT_INFO_KEY, ILLEGAL_MOVES

__all__ = ["AGENTS", "RESIGN", "TextChessEnv", "board_text"]

AGENTS = ("white", "black")
#: The action that resigns the game.
RESIGN = "resign"
_CHARSET = string.printable


def board_text(board: chess.Board) -> str:
    """The board as an agent reads it: its FEN, then a diagram (white's pieces in capitals, rank 8 on top)."""
    return f"FEN: {board.fen()}\n{board}"


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """``text`` as a legal move of ``board`` (SAN, else UCI).

    Raises:
        ValueError: not a legal move here; the message says why.
    """
    text = text.strip()
    try:
        move = board.parse_san(text)
        # parse_san reads "--", "0000" and "Z0" as the null move, which passes the turn: no chess move.
        if not move or move not in board.legal_moves:
            raise ValueError(f"{text!r} is not a legal move here")
        return move
    except ValueError:
        try:
            move = chess.Move.from_uci(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a legal move here (nor a move in SAN or UCI)") from None
        if move not in board.legal_moves:
            raise ValueError(f"{text!r} is not a legal move here") from None
        return move


class TextChessEnv(pettingzoo.AECEnv[str, dict[str, str], str]):
    """Chess between ``white`` and ``black``, observed and played as text (see the module's docstring).

    Args:
        max_turns: moves (legal ones, both sides') after which the game is truncated (a draw,
            paying 0).
        max_illegal_moves: illegal moves in a row that forfeit the game for the side making them.
        render_mode: ``"ansi"`` gives the board as text.
    """

    metadata = {"name": "text_chess_v0", "render_modes": ["ansi"], "is_parallelizable": False}  # noqa: RUF012

    def __init__(self, max_turns: int = 400, max_illegal_moves: int = 5, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if max_turns < 1 or max_illegal_moves < 1:
            raise ValueError(
                f"max_turns and max_illegal_moves must be at least 1, got {max_turns}, {max_illegal_moves}"
            )
        self.max_turns = max_turns
        self.max_illegal_moves = max_illegal_moves
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        text = spaces.Text(4096, min_length=0, charset=_CHARSET)
        self.observation_spaces = {agent: spaces.Dict({"board": text, "legal_moves": text}) for agent in AGENTS}
        self.action_spaces = {agent: spaces.Text(64, min_length=1, charset=_CHARSET) for agent in AGENTS}
        self.board = chess.Board()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game (from ``options["fen"]`` when given; chess draws nothing at random, so ``seed`` changes nothing)."""
        fen = (options or {}).get("fen")
        self.board = chess.Board(fen) if fen else chess.Board()
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in AGENTS}
        self.agent_selection = self._mover()
        self.turns = 0
        self.illegal_in_a_row = 0  # the side to move's (an illegal move keeps the turn)

    def _mover(self) -> str:
        return "white" if self.board.turn == chess.WHITE else "black"

    def observe(self, agent: str) -> dict[str, str]:
        playing = (
            agent == self._mover()
            and agent in self.agents
            and not (self.terminations[agent] or self.truncations[agent])
        )
        legal = " ".join(sorted(self.board.san(move) for move in self.board.legal_moves)) if playing else ""
        return {"board": board_text(self.board), "legal_moves": legal}

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards[agent] = 0.0
        self.infos = {name: {} for name in self.agents}
        if str(action).strip().lower() == RESIGN:
            self._end({agent: -1.0, _other(agent): 1.0}, f"{agent} resigned")
            return
        try:
            move = parse_move(self.board, str(action))
        except ValueError as exc:
            self.infos[agent] = {"illegal_move": str(exc)}  # the same agent moves again
            self.illegal_in_a_row += 1
            if self.illegal_in_a_row >= self.max_illegal_moves:
                forfeit = {"agent": agent, "cause": ILLEGAL_MOVES}
                for name in AGENTS:
                    self.infos.setdefault(name, {})[FORFEIT_INFO_KEY] = dict(forfeit)
                self._end(
                    {agent: -1.0, _other(agent): 1.0},
                    f"{_other(agent)} won: {agent} forfeited ({self.illegal_in_a_row} illegal moves in a row)",
                )
            return
        self.illegal_in_a_row = 0
        self.turns += 1
        san = self.board.san(move)
        self.infos[agent] = {"move": san}
        self.infos[_other(agent)] = {"opponent_move": san}  # what the other side reads on its turn
        self.board.push(move)
        outcome = self.board.outcome(claim_draw=False)
        if outcome is not None:
            if outcome.winner is None:
                self._end(dict.fromkeys(AGENTS, 0.0), f"draw: {outcome.termination.name.lower()}")
            else:
                winner = "white" if outcome.winner == chess.WHITE else "black"
                self._end({winner: 1.0, _other(winner): -1.0}, f"{winner} won: {outcome.termination.name.lower()}")
            return
        self.agent_selection = self._mover()
        self._truncate_at_limit()
        self._accumulate_rewards()

    def _truncate_at_limit(self) -> None:
        if self.turns >= self.max_turns:
            self.truncations = dict.fromkeys(AGENTS, True)
            for name in AGENTS:
                self.infos[name]["result"] = f"draw: the game reached its limit of {self.max_turns} turns"

    def _end(self, rewards: dict[str, float], result: str) -> None:
        self.rewards = rewards
        self.terminations = dict.fromkeys(AGENTS, True)
        for name in AGENTS:
            self.infos[name]["result"] = result
        self.agent_selection = self._mover()
        self._accumulate_rewards()

    def render(self) -> str | None:
        return board_text(self.board) if self.render_mode == "ansi" else None

    def close(self) -> None:
        pass


def _other(agent: str) -> str:
    return "black" if agent == "white" else "white"
