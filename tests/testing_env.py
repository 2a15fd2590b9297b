"""Small real environments for tests, with behaviour injected per instance."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import Field

from openenv_gym.server import Action, Environment, Observation, State


class CountAction(Action):
    """Add ``amount`` to the counter; optionally sleep or fail first."""

    amount: int = Field(default=1, ge=0, le=100)
    sleep: float = 0.0
    fail: bool = False


class CountObservation(Observation):
    """The counter after the step."""

    count: int = 0


class CounterEnvironment(Environment[CountAction, CountObservation, State]):
    """Counts up; sleeps or raises on request; records every instance it made and closed."""

    action_type = CountAction
    observation_type = CountObservation
    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = True

    created: ClassVar[list[CounterEnvironment]] = []
    closed: ClassVar[list[CounterEnvironment]] = []

    def __init__(self) -> None:
        self.count = 0
        self._state = State()
        CounterEnvironment.created.append(self)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self.count = 0
        self._state = State(episode_id=episode_id or "episode", step_count=0)
        return CountObservation(count=0, reward=0.0)

    def step(self, action: CountAction) -> CountObservation:
        if action.sleep:
            time.sleep(action.sleep)
        if action.fail:
            raise RuntimeError("asked to fail")
        self.count += action.amount
        self._state.step_count += 1
        return CountObservation(count=self.count, reward=float(action.amount), done=self.count >= 10)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        CounterEnvironment.closed.append(self)


class BrokenFactoryEnvironment(CounterEnvironment):
    """An environment whose constructor fails."""

    def __init__(self) -> None:
        raise OSError("no such device")


def make_pendulum(g: float = 10.0):
    """A factory returning a plain gymnasium.Env, as a user might write one."""
    import gymnasium as gym

    return gym.make("Pendulum-v1", g=g)


NOT_CALLABLE = 42


def make_blocking_cartpole(blocking: bool = True):
    """CartPole served inline or in the session's thread, for measuring the thread hop."""
    import gymnasium as gym

    from openenv_gym.server import GymEnvironment

    return GymEnvironment(gym.make("CartPole-v1"), blocking=blocking)


def make_sleepy(seconds: float = 60):
    """A Gymnasium env whose action 1 hangs for ``seconds`` (a minute: a stuck simulator)."""
    import gymnasium as gym
    import numpy as np

    class Sleepy(gym.Env):
        observation_space = gym.spaces.Box(0, 1e6, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.zeros(1, np.float32), {}

        def step(self, action):
            if action == 1:
                time.sleep(seconds)
            self.t += 1
            return np.array([self.t], np.float32), 1.0, False, False, {}

    return Sleepy()


def make_pixels():
    """A Gymnasium env with 84x84x3 uint8 observations, like an Atari frame."""
    import gymnasium as gym
    import numpy as np

    class Pixels(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (84, 84, 3), np.uint8)
        action_space = gym.spaces.Discrete(4)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.frame = self.np_random.integers(0, 256, (84, 84, 3), dtype=np.uint8)
            return self.frame, {}

        def step(self, action):
            self.frame = np.roll(self.frame, int(action) + 1, axis=1)
            return self.frame, 1.0, False, False, {}

    return Pixels()


def make_environ_reporter():
    """CartPole whose reset info says what the server's environment, and a child process started
    by the env, see of the server's token variable (both should see nothing)."""
    import os
    import subprocess
    import sys

    import gymnasium as gym

    from openenv_gym.providers.process import TOKEN_ENV_VAR

    class EnvironReporter(gym.Wrapper):
        def reset(self, **kwargs):
            observation, _info = self.env.reset(**kwargs)
            child = subprocess.run(
                [sys.executable, "-c", f"import os; print(os.environ.get({TOKEN_ENV_VAR!r}, ''))"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            return observation, {"server_sees": os.environ.get(TOKEN_ENV_VAR, ""), "child_sees": child.stdout.strip()}

    return EnvironReporter(gym.make("CartPole-v1"))


def make_failing_on_step():
    """CartPole whose action 1 raises inside the env (its own error, not a fault of the server)."""
    import gymnasium as gym

    class FailingOnStep(gym.Wrapper):
        def step(self, action):
            if action == 1:
                raise RuntimeError("the simulator refused the action")
            return self.env.step(action)

    return FailingOnStep(gym.make("CartPole-v1"))


class BlobAction(Action):
    """Ask for a reply of ``size`` characters."""

    size: int = Field(default=16, ge=0, le=2**20)


class BlobObservation(Observation):
    blob: str = ""


class BlobEnvironment(Environment[BlobAction, BlobObservation, State]):
    """Replies as big as asked: a client that does not read them fills its buffers fast."""

    action_type = BlobAction
    observation_type = BlobObservation
    SUPPORTS_CONCURRENT_SESSIONS = True
    blocking = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> BlobObservation:
        return BlobObservation()

    def step(self, action: BlobAction) -> BlobObservation:
        return BlobObservation(blob="x" * action.size)

    @property
    def state(self) -> State:
        return State()


SLOW_CLOSES_BEGUN: list[float] = []  # when each close() of make_slow_closing's envs began, in this process


def make_slow_closing(seconds: float = 1.0):
    """CartPole whose close takes ``seconds`` in its session's thread (a simulator that saves or tears down
    at the end), so its slot on the server stays taken that long after its connection is gone."""
    import gymnasium as gym

    from openenv_gym.server import GymEnvironment

    class SlowClosing(gym.Wrapper):
        def close(self):
            SLOW_CLOSES_BEGUN.append(time.monotonic())
            time.sleep(seconds)
            super().close()

    return GymEnvironment(SlowClosing(gym.make("CartPole-v1")), blocking=True)
