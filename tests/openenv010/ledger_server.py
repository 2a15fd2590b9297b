"""Run under OpenEnv 0.10: a stock env, written only against ``openenv``'s own base classes, that
keeps a ledger of what it pays, served by ``create_app`` under uvicorn.

``ledger_server.py PORT LEDGER [MODE [PING_INTERVAL PING_TIMEOUT]]``: each step appends one JSON
line to the file LEDGER (``{"pid", "episode", "pay"}``) before it answers, then holds its reply
for the action's ``hold`` seconds (so a test can drop the server while a paid reply is on its
way). A reset draws a number from its seed. MODE ``seeded`` (default) has the base class's
``reset(seed, episode_id)``; ``unseeded`` has a ``reset()`` that takes no seed, which 0.10's server
drops without a word (OpenEnv #1102). uvicorn pings every PING_INTERVAL seconds (default 20, as
uvicorn's) and drops a client whose pong takes longer than PING_TIMEOUT (default 20).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import uuid
from typing import Any

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app


class LedgerAction(Action):
    pay: int = 1
    hold: float = 0.0


class LedgerObservation(Observation):
    draw: int = 0
    paid: int = 0


class LedgerEnvironment(Environment[LedgerAction, LedgerObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True
    ledger = ""

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._paid = 0

    def _start(self, rng: random.Random, episode_id: str | None) -> LedgerObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self._paid = 0
        return LedgerObservation(draw=rng.randrange(10**9), paid=0, reward=0.0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> LedgerObservation:
        return self._start(random.Random(seed), episode_id)

    def step(self, action: LedgerAction, timeout_s: float | None = None, **kwargs: Any) -> LedgerObservation:
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
    """Its reset takes no seed: 0.10's server keeps only the keyword arguments a reset takes."""

    def reset(self) -> LedgerObservation:
        return self._start(random.Random(), None)


if __name__ == "__main__":
    port, LedgerEnvironment.ledger = int(sys.argv[1]), sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "seeded"
    ping_interval, ping_timeout = (float(sys.argv[4]), float(sys.argv[5])) if len(sys.argv) > 5 else (20.0, 20.0)
    env = {"seeded": LedgerEnvironment, "unseeded": UnseededLedgerEnvironment}[mode]
    app = create_app(env, LedgerAction, LedgerObservation, env_name="ledger", max_concurrent_envs=8)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws_ping_interval=ping_interval,
        ws_ping_timeout=ping_timeout,
    )
