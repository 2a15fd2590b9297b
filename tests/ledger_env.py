"""`LedgerEnvironment`: an env of ours that keeps a ledger of what it pays, for the reconnect tests
(``openenv-gym serve tests.ledger_env:LedgerEnvironment --env-kwargs '{"ledger": PATH}'``).

Each step appends one JSON line to the file ``ledger`` (``{"pid", "episode", "pay"}``) before it
answers, then holds its reply for the action's ``hold`` seconds, so a test can drop the server
while a paid reply is on its way. A reset draws a number from its seed.
:class:`UnseededLedgerEnvironment`'s reset takes no seed.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from typing import Any

from openenv_gym.server import Action, Environment, Observation, State

__all__ = ["LedgerAction", "LedgerEnvironment", "LedgerObservation", "UnseededLedgerEnvironment"]


class LedgerAction(Action):
    pay: int = 1
    hold: float = 0.0


class LedgerObservation(Observation):
    draw: int = 0
    paid: int = 0


class LedgerEnvironment(Environment[LedgerAction, LedgerObservation, State]):
    """Pays each step's ``pay`` and writes it in the ledger first."""

    action_type = LedgerAction
    observation_type = LedgerObservation
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, ledger: str = os.devnull) -> None:
        self.ledger = ledger
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._paid = 0

    def _start(self, rng: random.Random, episode_id: str | None) -> LedgerObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self._paid = 0
        return LedgerObservation(draw=rng.randrange(10**9), paid=0, reward=0.0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> LedgerObservation:
        return self._start(random.Random(seed), episode_id)

    def step(self, action: LedgerAction) -> LedgerObservation:
        self._state.step_count += 1
        self._paid += action.pay
        with open(self.ledger, "a") as ledger:
            ledger.write(json.dumps({"pid": os.getpid(), "episode": self._state.episode_id, "pay": action.pay}) + "\n")
        time.sleep(action.hold)
        return LedgerObservation(draw=0, paid=self._paid, reward=float(action.pay))

    @property
    def state(self) -> State:
        return self._state


class UnseededLedgerEnvironment(LedgerEnvironment):
    """Its reset takes no seed: the server must refuse a seeded reset rather than drop the seed."""

    def reset(self) -> LedgerObservation:
        return self._start(random.Random(), None)


def ledger_lines(path: str) -> list[dict[str, Any]]:
    """The ledger's entries, in the order they were paid."""
    try:
        with open(path) as ledger:
            return [json.loads(line) for line in ledger if line.strip()]
    except FileNotFoundError:
        return []
