"""Run under OpenEnv 0.10: a stock server (``create_app``, uvicorn on port ``argv[1]``) of an env
written only against ``openenv``'s base classes whose ``step`` refuses to run before ``reset``, as
many envs' do, and whose ``reset`` refuses an unknown ``task_id``: the tests ask it what the
stateless ``POST /step`` and ``POST /reset`` answer then."""

from __future__ import annotations

import sys

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app


class CountAction(Action):
    amount: int = 1


class CountObservation(Observation):
    total: int = 0


class ResetFirstEnvironment(Environment):
    """Counts; refuses to step before a reset."""

    def __init__(self) -> None:
        super().__init__()
        self._total: int | None = None

    def reset(self, seed=None, episode_id=None, options=None, **kwargs) -> CountObservation:
        if options is not None and options.get("task_id") not in (None, "count"):
            raise ValueError(f"unknown task_id {options['task_id']!r}")
        self._total = 0
        return CountObservation(total=0)

    def step(self, action: CountAction, timeout_s=None, **kwargs) -> CountObservation:
        if self._total is None:
            raise RuntimeError("reset before the first step")
        self._total += action.amount
        return CountObservation(total=self._total)

    @property
    def state(self) -> State:
        return State(step_count=0)


if __name__ == "__main__":
    app = create_app(ResetFirstEnvironment, CountAction, CountObservation, env_name="reset_first")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
