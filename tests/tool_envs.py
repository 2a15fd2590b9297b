"""Small tool environments for tests: every kind of tool a server must serve, and misbehave with."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Annotated, Any

from pydantic import BaseModel, Field

from openenv_gym.server import Environment, Observation, State
from openenv_gym.server.tools import ToolResult, tool


class Point(BaseModel):
    """A point on the plane."""

    x: float
    y: float


class TaskObservation(Observation):
    """What a tool env shows after reset: the task."""

    prompt: str = ""


class ToolboxEnvironment(Environment[Any, TaskObservation, State]):
    """Tools of every shape: typed, defaulted, nested, async, scoring, failing, hanging, huge."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    tool_timeout_s = 5.0
    #: Set while a hanging tool's thread is inside it; cleared when the thread leaves.
    hanging = threading.Event()
    #: Lets a ``hang(until_closed=False)`` call leave (a test sets it).
    unhang = threading.Event()

    def __init__(self) -> None:
        self._state = State()
        self.release = threading.Event()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TaskObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return TaskObservation(prompt="Add 2 and 3, then submit the sum.", metadata={"task": "sum"})

    def step(self, action: Any) -> TaskObservation:
        raise NotImplementedError("this environment is driven by its tools")

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.release.set()  # a hanging tool's thread may leave now

    @tool
    def add(self, a: int, b: int = 0) -> int:
        """Add two integers.

        Args:
            a: the first number.
            b: the second number.
        """
        self._state.step_count += 1
        return a + b

    @tool
    def distance(self, start: Point, end: Point, scale: Annotated[float, Field(gt=0)] = 1.0) -> dict[str, float]:
        """The distance between two points."""
        return {"distance": scale * ((start.x - end.x) ** 2 + (start.y - end.y) ** 2) ** 0.5}

    @tool
    def submit(self, answer: int) -> ToolResult:
        """Submit the sum.

        Args:
            answer: the sum of 2 and 3.
        """
        solved = answer == 5
        return ToolResult(
            "correct" if solved else "wrong", reward=1.0 if solved else 0.0, done=True, metadata={"solved": solved}
        )

    @tool
    def fail(self, why: str) -> str:
        """Raise an error."""
        raise RuntimeError(why)

    @tool
    def hang(self, seconds: float = 60.0, until_closed: bool = True) -> str:
        """Block the worker thread until the session ends (or, with ``until_closed`` false, until
        the test sets :attr:`unhang`), at most ``seconds``."""
        type(self).hanging.set()
        try:
            (self.release if until_closed else type(self).unhang).wait(seconds)
        finally:
            type(self).hanging.clear()
        return "woke up"

    @tool(timeout_s=0.2)
    def quick(self) -> str:
        """A tool with its own short time limit."""
        time.sleep(1.0)
        return "late"

    @tool
    async def later(self, seconds: float) -> str:
        """Sleep on the event loop (cancelled at the time limit)."""
        await asyncio.sleep(seconds)
        return "done"

    @tool
    def huge(self, megabytes: int) -> str:
        """Return this many megabytes of text."""
        return "x" * (megabytes * 2**20)

    @tool
    def opaque(self) -> Any:
        """Return an object JSON cannot carry."""
        return object()

    @tool
    def nothing(self) -> None:
        """Return nothing."""

    @tool(name="get-weather", description="The weather in a city.")
    def weather(self, city: str) -> dict[str, Any]:
        return {"city": city, "forecast": "sunny"}
