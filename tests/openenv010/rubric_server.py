"""Run under OpenEnv 0.10: ``python rubric_server.py PORT {step,trajectory}`` serves a word-guessing
env written only against ``openenv``'s own base classes, whose reward is a rubric of
``rubric_defs.py`` (``Environment(rubric=...)``, reset by ``_reset_rubric``, applied by
``_apply_rubric``, as OpenEnv's envs do). An episode ends when the word is the secret, or after
four guesses."""

from __future__ import annotations

import sys
import uuid
from typing import Any

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from rubric_defs import RUBRICS, SECRET

MAX_GUESSES = 4


class GuessAction(Action):
    word: str


class GuessObservation(Observation):
    length: int = 0
    found: bool = False


def make_env(kind: str) -> type[Environment]:
    class GuessEnv(Environment[GuessAction, GuessObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__(rubric=RUBRICS[kind]())
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GuessObservation:
            self._reset_rubric()
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return GuessObservation()

        def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
            self._state.step_count += 1
            found = action.word == SECRET
            observation = GuessObservation(
                length=len(action.word), found=found, done=found or self._state.step_count >= MAX_GUESSES
            )
            observation.reward = self._apply_rubric(action, observation)
            return observation

        @property
        def state(self) -> State:
            return self._state

    return GuessEnv


if __name__ == "__main__":
    app = create_app(make_env(sys.argv[2]), GuessAction, GuessObservation, env_name="guess")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
