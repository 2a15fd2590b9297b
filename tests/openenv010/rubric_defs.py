"""Rubrics written only against ``openenv.core.rubrics`` (RFC 004), for a word-guessing episode.

The same source scores on both sides: ``rubric_server.py`` serves them under OpenEnv 0.10 (the
env's reward is the rubric's score), and the tests import them under openenv-core 0.3 (our
venv's ``openenv``) to pay them on our client through ``openenv_gym.rubrics.rubric_reward``.
The action has a ``word``; the observation its ``length`` and whether it was the ``secret``.
"""

from __future__ import annotations

from openenv.core.rubrics import Gate, Sequential, TrajectoryRubric, WeightedSum
from openenv.core.rubrics.base import Rubric

SECRET = "rubric"


class Alphabetic(Rubric):
    """1 for a word of letters only."""

    def forward(self, action, observation) -> float:
        return float(action.word.isalpha())


class Closeness(Rubric):
    """How close the word's length is to the secret's, in [0, 1]."""

    def forward(self, action, observation) -> float:
        return max(0.0, 1.0 - abs(observation.length - len(SECRET)) / len(SECRET))


class Found(Rubric):
    """1 when the word is the secret."""

    def forward(self, action, observation) -> float:
        return float(observation.found)


class GuessesToFind(TrajectoryRubric):
    """At the episode's end: 1 / the guesses it took to find the secret (0 if never found)."""

    def score_trajectory(self, trajectory) -> float:
        _, last = trajectory[-1]
        return 1.0 / len(trajectory) if last.found else 0.0

    def compute_step_rewards(self) -> list[float]:
        return [self.score_trajectory(self._trajectory)] * len(self._trajectory)


def step_rubric() -> Rubric:
    """Letters only, or nothing; then 0.7 closeness + 0.3 found, when that reaches 0.5."""
    return Sequential(Gate(Alphabetic()), Gate(WeightedSum([Closeness(), Found()], [0.7, 0.3]), threshold=0.5))


RUBRICS = {"step": step_rubric, "trajectory": GuessesToFind}
