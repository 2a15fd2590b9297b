"""What a watcher knows of the watched env's episodes: every transition counted, not only those sent.

Watch mode sends a sample of the transitions (the latest one, a few times a second), so the
page cannot sum rewards nor see resets itself: a 53-step episode would show the return of the
dozen steps it was sent, and an episode whose reset was dropped would run into the next one.
The watcher hands each transition of its session to an :class:`EpisodeTally`, which keeps the
current episode's return and length exactly and lists the episodes that ended since the page
last heard, whether or not their last step or the next reset was sent.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any

__all__ = ["MAX_ENDED_KEPT", "EpisodeTally"]

#: Ended episodes kept for the page between two sends (the oldest are dropped and counted).
MAX_ENDED_KEPT = 4096


@dataclasses.dataclass
class EpisodeTally:
    """The watched env's current episode and those that ended since :meth:`take_ended`.

    ``index`` numbers episodes as the session does (its count of resets when watching began,
    then one more per episode). An episode is ``whole`` when the watcher saw it begin: the one
    under way when watching began counts only the steps seen.
    """

    index: int = 0
    length: int = 0
    total: float = 0.0
    whole: bool = False
    over: bool = False
    ended: collections.deque[dict[str, Any]] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=MAX_ENDED_KEPT)
    )
    dropped: int = 0

    def reset(self) -> None:
        """A reset: an episode under way ends here (cut short), and the next one begins."""
        self._end(terminated=False, truncated=False)
        self._begin()

    def step(self, reward: Any, terminated: Any, truncated: Any) -> None:
        """A step. After an episode's end it is the next episode's first (an autoreset env
        resets without a reset call)."""
        if self.over:
            self._begin()
        self.length += 1
        self.total += _number(reward)
        if terminated or truncated:
            self._end(terminated=bool(terminated), truncated=bool(truncated))

    def current(self) -> dict[str, Any]:
        """The episode under way (or just ended), as the page shows it."""
        return {"index": self.index, "length": self.length, "return": self.total, "whole": self.whole}

    def take_ended(self) -> tuple[list[dict[str, Any]], int]:
        """The episodes that ended since the last call, oldest first, and how many were dropped."""
        ended, dropped = list(self.ended), self.dropped
        self.ended.clear()
        self.dropped = 0
        return ended, dropped

    def _begin(self) -> None:
        self.index += 1
        self.length, self.total, self.whole, self.over = 0, 0.0, True, False

    def _end(self, *, terminated: bool, truncated: bool) -> None:
        if self.over or self.length == 0:  # ended already, or nothing happened in it
            return
        self.over = True
        if len(self.ended) == self.ended.maxlen:
            self.dropped += 1
        self.ended.append({**self.current(), "terminated": terminated, "truncated": truncated})


def _number(reward: Any) -> float:
    # OpenEnv's reward may be None or a bool; a NaN would poison the sum for the rest of the episode.
    try:
        value = float(reward) if reward is not None else 0.0
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0
