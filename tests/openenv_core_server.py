"""An env built with openenv-core itself, served by its own FastAPI app under uvicorn.

Run as ``python -m tests.openenv_core_server PORT [--async-step] [--env {echo,cartpole}]`` from
the repository root. The tests use the default echo env to prove that our clients speak to
OpenEnv's real server, not only to ours; ``benchmarks/single_session.py`` measures against it.
``--async-step`` gives the env a ``step_async``, so openenv-core runs steps on its event loop
instead of its thread pool. ``--env cartpole`` serves Gymnasium's ``CartPole-v1`` instead
(action ``{"action": int}``, observation ``{"observation": [4 floats]}``, reward 1.0 per step,
done on termination or truncation), with room for 256 concurrent sessions;
``benchmarks/vector.py`` fans openenv-core's client out over it.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

ENVS = ("echo", "cartpole")


def main(port: int, async_step: bool = False, env: str = "echo") -> None:
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

    class CartPoleAction(Action):
        action: int

    class CartPoleObservation(Observation):
        observation: list[float] = []

    class CartPoleEnv(Environment[CartPoleAction, CartPoleObservation, State]):
        """Gymnasium's CartPole-v1 (with its 500-step time limit) behind openenv-core's interface."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            import gymnasium

            super().__init__()
            self._env = gymnasium.make("CartPole-v1")
            self._state = State()

        def reset(
            self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
        ) -> CartPoleObservation:
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            obs, _ = self._env.reset(seed=seed)
            return CartPoleObservation(observation=obs.tolist())

        def step(
            self, action: CartPoleAction, timeout_s: float | None = None, **kwargs: Any
        ) -> CartPoleObservation:
            self._state.step_count += 1
            obs, _, terminated, truncated, _ = self._env.step(action.action)
            return CartPoleObservation(observation=obs.tolist(), reward=1.0, done=bool(terminated or truncated))

        @property
        def state(self) -> State:
            return self._state

        def close(self) -> None:
            self._env.close()

    env_cls: Any = EchoEnv if env == "echo" else CartPoleEnv
    if async_step:

        async def step_async(self: Any, action: Any, timeout_s: float | None = None) -> Any:
            return self.step(action)

        env_cls.step_async = step_async

    if env == "echo":
        app = create_app(EchoEnv, EchoAction, EchoObservation, env_name="echo_env", max_concurrent_envs=4)
    else:
        app = create_app(
            CartPoleEnv, CartPoleAction, CartPoleObservation, env_name="cartpole_env", max_concurrent_envs=256
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--async-step", action="store_true", help="give the env a step_async (runs on the event loop)")
    parser.add_argument("--env", choices=ENVS, default="echo", help="the env to serve (default: echo)")
    args = parser.parse_args()
    main(args.port, async_step=args.async_step, env=args.env)
