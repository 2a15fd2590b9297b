"""Rubrics both ways, in process: an OpenEnv rubric as a reward part of ours (``openenv_gym.rubrics``),
and our reward parts in the observation's ``metadata`` a server sends (``metadata_with_parts``).

The rubrics are openenv-core 0.3's (our venv's ``openenv``; 0.10's keep the same protocol, and
``tests/test_openenv010_rubrics.py`` runs them under 0.10) and objects of the protocol alone.
"""

from __future__ import annotations

import asyncio

import pytest

from openenv_gym.rewards import StepView, metadata_with_parts, rescored
from openenv_gym.rubrics import rubric_action, rubric_observation, rubric_reward
from openenv_gym.server import Environment, Observation, State, ToolResult, tool
from openenv_gym.server.tools import ToolOutcome
from openenv_gym.trajectories import Trajectory
from tests.openenv010.rubric_defs import RUBRICS, SECRET


def guess(word: str, index: int, done: bool = False) -> StepView:
    observation = {"length": len(word), "found": word == SECRET}
    return StepView(observation, {"word": word}, 0.5, done, False, {"turn": index}, index)


def episode(words: list[str]) -> Trajectory:
    """A finished guessing episode as a record holds it (no spaces: values as they are)."""
    observations = [{"length": 0, "found": False}] + [{"length": len(w), "found": w == SECRET} for w in words]
    return Trajectory(
        observations=observations,
        actions=[{"word": word} for word in words],
        rewards=[0.0] * len(words),
        env_rewards=[0.0] * len(words),
        reward_components=[{} for _ in words],
        infos=[{}] * (len(words) + 1),
        terminated=True,
    )


def test_a_composed_rubric_scores_each_step():
    """Sequential(Gate, Gate(WeightedSum)) of openenv's rubrics reads the action's and the observation's fields."""
    part = rubric_reward(RUBRICS["step"](), name="rubric", per="step", weight=0.5)
    assert (part.name, part.per, part.weight) == ("rubric", "step", 0.5)
    scores = [part.on_step(guess(word, i)) for i, word in enumerate(["r2d2", "rub", "rubrics", SECRET])]
    assert scores == [0.0, 0.0, pytest.approx(0.7 * 5 / 6), 1.0]


def test_a_trajectory_rubric_is_reset_at_each_episode_and_scores_its_end():
    """Per step, a TrajectoryRubric gives 0 until ``done``, then its score; a new episode starts it afresh."""
    part = rubric_reward(RUBRICS["trajectory"](), name="guesses", per="step")
    first = [part.on_step(guess("a", 0)), part.on_step(guess(SECRET, 1, done=True))]
    second = [part.on_step(guess(SECRET, 0, done=True))]  # step 0: reset, else it would count 3 guesses
    assert (first, second) == ([0.0, 0.5], [1.0])


def test_per_episode_the_rubric_replays_the_trajectory_and_rescore_agrees():
    """At the episode's end the rubric sees every step in order, once; ``rescored`` pays the same."""
    part = rubric_reward(RUBRICS["trajectory"](), name="guesses")
    assert part.per == "episode"
    assert part.on_episode(episode(["a", "bb", SECRET])) == pytest.approx(1 / 3)
    assert part.on_episode(episode(["a", "bb", "ccc", "dddd"])) == 0.0
    again = rescored(episode(["a", SECRET]), [part])
    assert again.reward_components[-1] == {"guesses": 0.5} and again.rewards == [0.0, 0.5]


class Calls:
    """The rubric protocol without openenv: how many steps since its last reset, and what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[object, object]] = []

    def reset(self) -> None:
        self.seen = []

    def __call__(self, action, observation):
        self.seen.append((action, observation))
        return len(self.seen)


def test_any_object_of_the_protocol_is_a_rubric():
    calls = Calls()
    part = rubric_reward(calls, per="step")
    assert part.name == "Calls"
    assert [part.on_step(guess("a", 0)), part.on_step(guess("b", 1)), part.on_step(guess("c", 0))] == [1.0, 2.0, 1.0]
    action, observation = calls.seen[0]
    assert action.word == "c" and (observation.length, observation.done, observation.reward) == (1, False, 0.5)
    assert observation.metadata == {"turn": 0}
    with pytest.raises(TypeError, match="not callable"):
        rubric_reward(0.5)


class Judge:
    """An async rubric, as OpenEnv's LLMJudge is: its call returns a coroutine."""

    def __call__(self, action, observation):
        async def score() -> float:
            await asyncio.sleep(0)
            return 0.25

        return score()


def test_an_async_rubric_is_awaited_in_sync_code_and_inside_a_running_loop():
    part = rubric_reward(Judge(), per="step")
    assert part.on_step(guess("a", 0)) == 0.25

    async def from_a_coroutine() -> float:  # the pool's async envs pay their parts from their loop
        return part.on_step(guess("a", 0))

    assert asyncio.run(from_a_coroutine()) == 0.25


def test_the_views_give_gymnasium_values_an_openenv_observations_attributes():
    seen = rubric_observation({"stdout": "hi", "done": "field"}, reward=1.0, done=True, info={"k": 1})
    assert (seen.stdout, seen.done, seen.reward, seen.metadata) == ("hi", True, 1.0, {"k": 1})
    assert rubric_observation([1, 2], reward=0.0, done=False, info={}).observation == [1, 2]
    assert rubric_action({"code": "x"}).code == "x"
    assert rubric_action("42") == "42" and rubric_action(3) == 3


# Our parts where an OpenEnv client reads a rubric's scores --------------------------------------


def test_metadata_carries_the_steps_reward_parts():
    parts = {"reward_components": {"tests": 0.5}}
    assert metadata_with_parts(None, parts) == {"reward_components": {"tests": 0.5}}
    assert metadata_with_parts({"task_id": "t"}, parts) == {"task_id": "t", "reward_components": {"tests": 0.5}}
    assert metadata_with_parts({"reward_components": {"own": 1.0}}, parts) == {"reward_components": {"own": 1.0}}
    assert metadata_with_parts({}, {}) is None and metadata_with_parts({"a": 1}, {"reward_components": {}}) == {"a": 1}


class Scored(Environment):
    """Pays 1.0 in one part, ``score``, as an observation and as a tool's result."""

    blocking = False

    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation()

    def step(self, action):
        return Observation(reward=1.0, info={"reward_components": {"score": 1.0}}, metadata={"turn": 1})

    @property
    def state(self):
        return State()

    @tool
    def answer(self, text: str) -> ToolResult:
        """Answer."""
        return ToolResult("ok", reward=1.0, info={"reward_components": {"score": 1.0}})


def test_a_servers_frames_carry_the_parts_in_metadata():
    """A step's frame and a tool call's; a tool env's also inside the observation, where OpenEnv's
    tool client reads it."""
    env = Scored()
    frame = env.observation_frame(env.step(None))
    assert frame.metadata == {"turn": 1, "reward_components": {"score": 1.0}}
    assert frame.observation["metadata"] == frame.metadata
    assert frame.info == {"reward_components": {"score": 1.0}}  # our clients read them there, as before
    outcome = ToolOutcome("answer", result={"content": []}, reward=1.0, info={"reward_components": {"score": 1.0}})
    called = env.tool_frame(outcome)
    assert called.metadata == {"reward_components": {"score": 1.0}}
    assert called.observation["metadata"] == called.metadata
