"""The rules of a server's games, what a seat asks for and what it gets back (:mod:`.games` plays them).

:class:`GameRules` are the server's: the longest turn, how many actions outside its space a
player may send in a row, what a forfeit pays, and what the opponents' randomness is mixed
with. A seat may only shorten its own turns (:meth:`GameRules.clock`).
"""

from __future__ import annotations

import dataclasses
import hmac
import os
import secrets
from typing import Any

__all__ = [
    "DEFAULT_TURN_TIMEOUT",
    "FAILURE_INFO_KEY",
    "FORFEIT_INFO_KEY",
    "ILLEGAL_MOVES",
    "LEFT",
    "OPPONENT_SECRET_ENV_VAR",
    "TIMEOUT",
    "GameRules",
    "Outcome",
    "SeatQuery",
]

#: The info key of why the game cut a round short: a forfeit, or the game closed.
FAILURE_INFO_KEY = "game_failure"
#: The info key of a forfeit: ``{"agent": who lost it, "cause": "illegal_moves" | "left" | "timeout"}``.
FORFEIT_INFO_KEY = "forfeit"
#: Seconds a turn may wait for a player when neither the server nor the game says otherwise.
DEFAULT_TURN_TIMEOUT = 60.0
#: When set, the server's opponents draw from it and the round's seed (a seeded game replays);
#: unset, from fresh randomness every round. An operator's option, kept off the command line.
OPPONENT_SECRET_ENV_VAR = "OPENENV_GYM_OPPONENT_SECRET"
#: The causes of a forfeit: too many illegal moves in a row, leaving the round, overrunning a turn.
ILLEGAL_MOVES, LEFT, TIMEOUT = "illegal_moves", "left", "timeout"


@dataclasses.dataclass(frozen=True)
class GameRules:
    """The server's rules for its games.

    Args:
        turn_timeout: the most seconds a turn (or a round's start) waits for a player; a seat
            may ask for less (:meth:`clock`), never more.
        max_illegal_actions: actions in a row outside a player's action space that forfeit its round.
        loss: what a forfeit pays the player that forfeits (PettingZoo classic's loss).
        win: what it pays every other player of the round (PettingZoo classic's win).
        opponent_secret: what the opponents' randomness is mixed with: with it, a round's seed
            gives the same opponents' draws every time; ``None`` (the default, unless
            ``$OPENENV_GYM_OPPONENT_SECRET`` is set), fresh randomness every round, so a line of
            moves learnt by heart does not replay.
    """

    turn_timeout: float = DEFAULT_TURN_TIMEOUT
    max_illegal_actions: int = 5
    loss: float = -1.0
    win: float = 1.0
    opponent_secret: str | None = None

    def clock(self, asked: float | None) -> float:
        """The turn timeout of a seat that asks for ``asked`` seconds (``None``: the server's).

        Raises:
            ValueError: not a number of seconds above 0 and at most the server's.
        """
        if asked is None:
            return self.turn_timeout
        if isinstance(asked, bool) or not isinstance(asked, int | float) or not 0 < asked <= self.turn_timeout:
            raise ValueError(
                f"turn_timeout must be above 0 and at most this server's {self.turn_timeout:g} s "
                f"(a seat may shorten its own turns, never lengthen them), got {asked!r}"
            )
        return float(asked)

    def opponent_seed(self, seed: int | None) -> int | None:
        """The seed the opponents draw from in a round the players seeded with ``seed``."""
        secret = self.opponent_secret if self.opponent_secret is not None else os.environ.get(OPPONENT_SECRET_ENV_VAR)
        if not secret:
            return secrets.randbits(64)
        if seed is None:
            return None
        return int.from_bytes(hmac.digest(secret.encode(), str(seed).encode(), "sha256")[:8], "big")


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
    ``turn_timeout`` is this seat's own (at most the server's).
    """

    agent: str | None = None
    game: str | None = None
    token: str | None = None
    opponents: dict[str, str] | None = None
    turn_timeout: float | None = None
