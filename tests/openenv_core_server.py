"""An echo env built with openenv-core itself, served by its own FastAPI app under uvicorn.

Run as ``python -m tests.openenv_core_server PORT [--async-step]`` from the repository root. The
tests use it to prove that our clients speak to OpenEnv's real server, not only to ours;
``benchmarks/single_session.py`` measures against it. ``--async-step`` gives the env a
``step_async``, so openenv-core runs steps on its event loop instead of its thread pool.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any


def main(port: int, async_step: bool = False) -> None:
    import uvicorn
    from openenv.core.env_server import Action, Environment, Observation, State, create_app

    class EchoAction(Action):
        message: str

    class EchoObservation(Observation):
        echoed_message: str = ""
        message_length: int = 0

    class EchoEnv(Environment[EchoAction, EchoObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return EchoObservation()  # reward stays None: sent as null

        def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
            self._state.step_count += 1
            message = action.message
            return EchoObservation(
                echoed_message=message, message_length=len(message), reward=0.1 * len(message), done=message == "bye"
            )

        @property
        def state(self) -> State:
            return self._state

    if async_step:

        async def step_async(self: EchoEnv, action: EchoAction, timeout_s: float | None = None) -> EchoObservation:
            return self.step(action)

        EchoEnv.step_async = step_async  # type: ignore[method-assign]

    app = create_app(EchoEnv, EchoAction, EchoObservation, env_name="echo_env", max_concurrent_envs=4)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), async_step="--async-step" in sys.argv[2:])
