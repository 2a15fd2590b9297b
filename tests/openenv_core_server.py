"""An env built with openenv-core itself, served by its own FastAPI app under uvicorn.

Run as ``python -m tests.openenv_core_server PORT [--async-step] [--env {echo,cartpole,typed-cartpole,grid,mcp}]
[--max-sessions N]`` from the repository root. The tests use the default echo env to prove that
our clients speak to OpenEnv's real server, not only to ours; ``benchmarks/single_session.py``
measures against it.
``--async-step`` gives the env a ``step_async``, so openenv-core runs steps on its event loop
instead of its thread pool. ``--env cartpole`` serves Gymnasium's ``CartPole-v1`` instead
(action ``{"action": int}``, observation ``{"observation": [4 floats]}``, reward 1.0 per step,
done on termination or truncation), with room for 256 concurrent sessions;
``benchmarks/vector.py`` fans openenv-core's client out over it. ``--env typed-cartpole`` is
the same env with its fields constrained the pydantic way (``action: int = Field(ge=0, le=1)``,
``observation: list[float] = Field(min_length=4, max_length=4)``), so that the spaces mapped from
its JSON schemas are ``Discrete(2)`` and ``Box((4,))``. ``--env grid`` walks a 5x5 grid from
(0, 0) to (4, 4) with models full of what pydantic's JSON schemas hold (a str Enum and a nested
model under ``$defs``, ``Optional`` fields, a bool, a list of models, free-form ``dict`` fields)
and ``reward: null`` on every step but the one that reaches the goal (reward 1.0, done).
``--env mcp`` is a stock ``MCPEnvironment`` with FastMCP tools: ``echo_message`` and
``echo_with_length`` as OpenEnv's echo env has them, ``calculate(expression)`` (reward -0.1 a
call) and ``submit(answer)`` (reward 1.0 and done when the answer is 42, the task's);
``benchmarks/tools.py`` measures our Echo's tool calls against it, and
``benchmarks/async_episodes.py`` runs up to 256 concurrent episodes on it. ``--max-sessions N``
replaces the env's limit of concurrent sessions (openenv-core's ``max_concurrent_envs``: 4 for
echo, 256 for the cartpoles, 16 for grid, 8 for mcp).
"""

from __future__ import annotations

import argparse
import enum
import uuid
from typing import Any

ENVS = ("echo", "cartpole", "typed-cartpole", "grid", "mcp")
GRID_SIZE = 5


def main(port: int, async_step: bool = False, env: str = "echo", max_sessions: int | None = None) -> None:
    import uvicorn
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from pydantic import BaseModel, Field

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
        observation: list[float] = []  # noqa: RUF012 - a pydantic field: copied per instance

    class TypedCartPoleAction(Action):
        action: int = Field(ge=0, le=1, description="push the cart left (0) or right (1)")

    class TypedCartPoleObservation(Observation):
        observation: list[float] = Field(default_factory=lambda: [0.0] * 4, min_length=4, max_length=4)

    class CartPoleEnv(Environment[CartPoleAction, CartPoleObservation, State]):
        """Gymnasium's CartPole-v1 (with its 500-step time limit) behind openenv-core's interface."""

        observation_cls: Any = CartPoleObservation

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            import gymnasium

            super().__init__()
            self._env = gymnasium.make("CartPole-v1")
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CartPoleObservation:
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            obs, _ = self._env.reset(seed=seed)
            return self.observation_cls(observation=obs.tolist())

        def step(self, action: CartPoleAction, timeout_s: float | None = None, **kwargs: Any) -> CartPoleObservation:
            self._state.step_count += 1
            obs, _, terminated, truncated, _ = self._env.step(action.action)
            return self.observation_cls(observation=obs.tolist(), reward=1.0, done=bool(terminated or truncated))

        @property
        def state(self) -> State:
            return self._state

        def close(self) -> None:
            self._env.close()

    class TypedCartPoleEnv(CartPoleEnv):
        observation_cls = TypedCartPoleObservation

    class Direction(str, enum.Enum):
        UP = "up"
        DOWN = "down"
        LEFT = "left"
        RIGHT = "right"

    class GridAction(Action):
        direction: Direction
        sprint: bool = False  # two cells instead of one
        note: str | None = None
        options: dict[str, Any] = Field(default_factory=dict)  # free-form: no Gymnasium space

    class Position(BaseModel):
        x: int = Field(ge=0, le=GRID_SIZE - 1)
        y: int = Field(ge=0, le=GRID_SIZE - 1)

    class GridObservation(Observation):
        position: Position = Field(default_factory=lambda: Position(x=0, y=0))
        last_direction: Direction | None = None  # null after a reset
        visited: list[Position] = Field(default_factory=list)  # any length
        distance: float = Field(default=0.0, ge=0.0, description="Manhattan distance to the goal")
        debug: dict[str, Any] = Field(default_factory=dict)  # free-form: no Gymnasium space

    moves = {Direction.UP: (0, -1), Direction.DOWN: (0, 1), Direction.LEFT: (-1, 0), Direction.RIGHT: (1, 0)}

    class GridEnv(Environment[GridAction, GridObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State()
            self._visited: list[Position] = []

        def _observation(self, last: Direction | None, **kwargs: Any) -> GridObservation:
            here = self._visited[-1]
            distance = float(2 * (GRID_SIZE - 1) - here.x - here.y)
            return GridObservation(
                position=here, last_direction=last, visited=list(self._visited), distance=distance,
                debug={"step": self._state.step_count}, **kwargs,
            )  # fmt: skip

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GridObservation:
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            self._visited = [Position(x=0, y=0)]
            return self._observation(None)

        def step(self, action: GridAction, timeout_s: float | None = None, **kwargs: Any) -> GridObservation:
            self._state.step_count += 1
            dx, dy = moves[action.direction]
            cells = 2 if action.sprint else 1
            here = self._visited[-1]
            x = min(max(here.x + dx * cells, 0), GRID_SIZE - 1)
            y = min(max(here.y + dy * cells, 0), GRID_SIZE - 1)
            self._visited.append(Position(x=x, y=y))
            at_goal = x == y == GRID_SIZE - 1
            # reward stays None (null on the wire) until the goal
            return self._observation(action.direction, done=at_goal, reward=1.0 if at_goal else None)

        @property
        def state(self) -> State:
            return self._state

    def mcp_env() -> Any:
        # Imported here: FastMCP takes seconds to import, and only this env needs it.
        from fastmcp import FastMCP
        from openenv.core.env_server.mcp_environment import MCPEnvironment
        from openenv.core.env_server.mcp_types import CallToolAction

        class CalculatorEnv(MCPEnvironment):
            SUPPORTS_CONCURRENT_SESSIONS = True

            def __init__(self) -> None:
                server = FastMCP("calculator")

                @server.tool
                def echo_message(message: str) -> str:
                    """Echo back the provided message.

                    Args:
                        message: The message to echo back
                    """
                    return message

                @server.tool
                def echo_with_length(message: str) -> dict:
                    """Echo back the message with its length.

                    Args:
                        message: The message to echo back
                    """
                    return {"message": message, "length": len(message)}

                @server.tool
                def calculate(expression: str) -> float:
                    """Evaluate an arithmetic expression.

                    Args:
                        expression: the expression, e.g. "2*3+4"
                    """
                    if not set(expression) <= set("0123456789+-*/(). "):
                        raise ValueError("only numbers and + - * / ( ) are allowed")
                    return float(eval(expression))  # the characters were checked above

                @server.tool
                def submit(answer: float) -> str:
                    """Submit the final answer.

                    Args:
                        answer: the number asked for
                    """
                    return "correct" if answer == 42 else "wrong"

                super().__init__(server)
                self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

            def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
                self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
                return Observation(metadata={"prompt": "What is 6 times 7? Use the calculator, then submit."})

            def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
                return Observation(metadata={"error": f"not a tool call: {type(action).__name__}"})

            def _scored(self, action: Any, observation: Any) -> Observation:
                self._state.step_count += 1
                if isinstance(action, CallToolAction) and action.tool_name == "submit":
                    solved = observation.error is None and action.arguments.get("answer") == 42
                    observation.reward, observation.done = (1.0 if solved else 0.0), True
                elif isinstance(action, CallToolAction) and action.tool_name == "calculate":
                    observation.reward = -0.1
                return observation

            def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
                return self._scored(action, super().step(action, timeout_s=timeout_s, **kwargs))

            async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
                # openenv-core awaits this on its own loop, where the MCP session is open.
                return self._scored(action, await super().step_async(action, timeout_s=timeout_s, **kwargs))

            @property
            def state(self) -> State:
                return self._state

        return CalculatorEnv

    if env == "mcp":
        from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

        app = create_app(
            mcp_env(),
            CallToolAction,
            CallToolObservation,
            env_name="calculator_env",
            max_concurrent_envs=max_sessions or 8,
        )
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return

    env_cls: Any = {"echo": EchoEnv, "cartpole": CartPoleEnv, "typed-cartpole": TypedCartPoleEnv, "grid": GridEnv}[env]
    if async_step:

        async def step_async(self: Any, action: Any, timeout_s: float | None = None) -> Any:
            return self.step(action)

        env_cls.step_async = step_async

    if env == "echo":
        app = create_app(
            EchoEnv, EchoAction, EchoObservation, env_name="echo_env", max_concurrent_envs=max_sessions or 4
        )
    elif env == "cartpole":
        app = create_app(
            CartPoleEnv,
            CartPoleAction,
            CartPoleObservation,
            env_name="cartpole_env",
            max_concurrent_envs=max_sessions or 256,
        )
    elif env == "typed-cartpole":
        app = create_app(
            TypedCartPoleEnv,
            TypedCartPoleAction,
            TypedCartPoleObservation,
            env_name="typed_cartpole_env",
            max_concurrent_envs=max_sessions or 256,
        )
    else:
        app = create_app(
            GridEnv, GridAction, GridObservation, env_name="grid_env", max_concurrent_envs=max_sessions or 16
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--async-step", action="store_true", help="give the env a step_async (runs on the event loop)")
    parser.add_argument("--env", choices=ENVS, default="echo", help="the env to serve (default: echo)")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        metavar="N",
        help="concurrent sessions allowed (openenv-core's max_concurrent_envs; default: the env's own)",
    )
    args = parser.parse_args()
    if args.max_sessions is not None and args.max_sessions < 1:
        parser.error(f"--max-sessions must be at least 1, got {args.max_sessions}")
    main(args.port, async_step=args.async_step, env=args.env, max_sessions=args.max_sessions)
