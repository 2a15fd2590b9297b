"""`ChessEnvironment`: one player's seat of a chess game, as tools an LLM agent calls (``openenv/Chess-v0``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from openenv_gym.server import Environment, Observation, State
from openenv_gym.server.games import FAILURE_INFO_KEY, FORFEIT_INFO_KEY, Game, Games, Outcome, SeatQuery
from openenv_gym.server.tools import ToolResult, tool

from .opponents import GreedyMover, RandomMover
from .text_chess import RESIGN, TextChessEnv

__all__ = ["ChessEnvironment", "ChessObservation", "ChessState"]

Move = Annotated[
    str, Field(min_length=1, max_length=32, description='a move in SAN ("Nf3", "e4", "O-O") or UCI ("g1f3")')
]


class ChessObservation(Observation):
    """What a reset shows: the side played, the board and the legal moves."""

    prompt: str = ""


class ChessState(State):
    """The seat: which side, in which game."""

    agent: str | None = None
    game: str | None = None


def _games() -> Games:
    return Games(
        lambda render_mode: TextChessEnv(render_mode=render_mode),
        policies={"random": RandomMover, "greedy": GreedyMover},
    )


class ChessEnvironment(Environment[Any, ChessObservation, ChessState]):
    """Chess for a tool-calling agent: one side's seat, against the server's opponent or another client.

    ``gym.make("openenv/Chess-v0")`` plays white against a random mover; ``agent="black"``,
    ``opponents={"white": "greedy"}`` and, for self-play between two clients,
    ``game="ID"`` (each client takes one side) choose otherwise. Tools: ``make_move`` (SAN or
    UCI; an illegal move is an error result and the agent moves again), ``resign`` and
    ``show_board``. A move's result is the opponent's reply and the board after it. The game
    pays once, at its end: +1 for a win, -1 for a loss, 0 for a draw or the move limit. A side
    that forfeits loses (and the other wins): five illegal moves in a row, or, in a game of two
    clients, leaving it or overrunning its turn; ``info["forfeit"]`` says who and why.
    """

    observation_type = ChessObservation
    state_type = ChessState
    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = True  # a move waits for the other side's
    render_modes = ("ansi",)
    takes_render_mode = True  # a session may ask /ws?render_mode=ansi
    #: The chess games of this server process, which sessions join by id.
    games: ClassVar[Games] = _games()

    def __init__(self, query: SeatQuery | None = None, render_mode: str | None = None) -> None:
        self.game: Game
        self.game, self.agent = self.games.take(query or SeatQuery(), render_mode, default_agent="white")
        self._ended = True
        self._closed = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ChessObservation:
        """A new game from the initial position (every player of the game resets); the board once
        it is this side's turn.

        Raises:
            ValueError: reset options: a start position chosen by whoever resets (an agent, through
                the MCP bridge's reset tool) could be a won one, so every game starts from the start.
        """
        if kwargs.get("options"):
            raise ValueError("Chess-v0 takes no reset options: every game starts from the initial position")
        outcome = self.game.reset(self.agent, seed, None)
        # A game the other side forfeited before this side's first move ended already: the
        # next tool call takes its end, with its reward.
        self._ended = False
        return ChessObservation(prompt=self._prompt(outcome), reward=0.0, info={"agent": self.agent})

    def step(self, action: Any) -> ChessObservation:
        raise NotImplementedError("Chess-v0 is played with its tools: make_move, resign, show_board")

    def schema(self) -> dict[str, Any]:
        result = super().schema()
        # A client taking a side names it: /schema lists the sides (the seats have tools, no spaces).
        result["agents"] = {"api": "aec", "possible_agents": list(self.game.possible_agents)}
        return result

    @property
    def state(self) -> ChessState:
        return ChessState(agent=self.agent, game=self.game.id)

    @tool
    def make_move(self, move: Move) -> ToolResult:
        """Play a move; the result is the opponent's reply and the board, or why the move is not legal.

        Args:
            move: the move in SAN ("Nf3", "exd5", "O-O", "e8=Q") or UCI ("g1f3").
        """
        return self._play(move)

    @tool
    def resign(self) -> ToolResult:
        """Resign the game (it ends, and counts as a loss)."""
        return self._play(RESIGN)

    @tool
    def show_board(self) -> str:
        """The board as it is now (FEN and a diagram), and the legal moves if it is this side's turn."""
        observation = self.game.observe(self.agent)
        return _board_and_moves(observation)

    def _play(self, move: str) -> ToolResult:
        if self._ended:
            return ToolResult("the game is over: reset for a new one", is_error=True)
        try:
            outcome = self.game.act(self.agent, move)
        except ValueError as exc:  # not even text a move could be (or not this side's turn)
            return ToolResult(f"illegal move: {exc}", is_error=True)
        illegal = outcome.info.get("illegal_move")
        if illegal is not None and not outcome.done:
            return ToolResult(f"illegal move: {illegal}\n{_board_and_moves(outcome.observation)}", is_error=True)
        self._ended = outcome.done
        text = self._report(outcome)
        if outcome.done:
            forfeit = {key: outcome.info[key] for key in (FORFEIT_INFO_KEY,) if key in outcome.info}
            return ToolResult(
                text, reward=outcome.reward, done=outcome.terminated, truncated=outcome.truncated, info=forfeit
            )
        return ToolResult(text)

    def _report(self, outcome: Outcome) -> str:
        info = outcome.info
        if FAILURE_INFO_KEY in info:
            paid = f" (your reward: {outcome.reward:+g})" if FORFEIT_INFO_KEY in info else ""
            return f"the game ended: {info[FAILURE_INFO_KEY]}{paid}"
        lines = []
        reply = info.get("opponent_move")
        if reply:
            lines.append(f"your opponent played {reply}")
        if outcome.done:
            lines.append(f"game over: {info.get('result', 'ended')} (your reward: {outcome.reward:+g})")
        lines.append(_board_and_moves(outcome.observation))
        return "\n".join(lines)

    def _prompt(self, outcome: Outcome) -> str:
        side = f"You play {self.agent} in a game of chess."
        how = "Call make_move with your move in SAN (such as e4 or Nf3), show_board to see the board, or resign."
        return f"{side} {how}\n{self._report(outcome)}"

    def render(self) -> Any:
        return self.game.render()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.games.leave(self.game, self.agent)


def _board_and_moves(observation: dict[str, str] | None) -> str:
    if not observation:
        return ""
    moves = observation.get("legal_moves")
    return observation["board"] + (f"\nyour legal moves: {moves}" if moves else "")
