"""Rubrics both ways with OpenEnv 0.10 (PyPI ``openenv``), run from its own venv (``tests/openenv010``).

- 0.10's ``GenericEnvClient`` and ``MCPToolClient`` read our task envs' reward parts in each step's
  ``metadata`` (``{"reward_components": {name: value}}``), beside the reward they make.
- One rubric source (``tests/openenv010/rubric_defs.py``: ``Sequential``, ``Gate``, ``WeightedSum``,
  a ``TrajectoryRubric``) pays the reward of a stock 0.10 env on its server, and pays the same
  numbers on our client as a reward part (``openenv_gym.rubrics.rubric_reward``), imported there
  under our venv's ``openenv`` (openenv-core 0.3, whose rubrics keep the same protocol).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import ProcessProvider
from openenv_gym.rubrics import rubric_reward
from openenv_gym.wrappers import RecordEpisodes
from tests.envs.coding_reference import SOLUTIONS
from tests.openenv010 import peer_server, run_peer
from tests.openenv010.rubric_defs import RUBRICS, SECRET

WRONG = "def digit_square_sum(n):\n    return 0\n"


@pytest.fixture(scope="module")
def coding_url() -> Iterator[str]:
    with ProcessProvider("openenv_gym.envs.coding:CodingEnvironment", env_kwargs={"reward": "fraction"}) as url:
        yield url


def test_openenv_010_client_reads_our_reward_parts_in_metadata(coding_url):
    """Coding-v0's parts reach 0.10's StepResult.metadata on every step, and they make its reward."""
    actions = [{"code": WRONG}, {"code": SOLUTIONS["digit-square-sum"]}]
    reset = {"options": {"task_id": "digit-square-sum"}}
    steps = run_peer("step_metadata.py", coding_url, json.dumps(actions), json.dumps(reset))
    assert [step["metadata"]["reward_components"] for step in steps] == [{"tests": step["reward"]} for step in steps]
    assert 0 < steps[0]["reward"] < 1 and steps[1]["reward"] > 0 and steps[1]["done"] is True


def test_reasoning_gym_parts_reach_an_openenv_010_client():
    """ReasoningGym-v0's ``verifier`` part, answered through 0.10's client."""
    with ProcessProvider(
        "openenv_gym.envs.reasoning:ReasoningGymEnvironment", env_kwargs={"generators": ["gcd"]}
    ) as url:
        (step,) = run_peer("step_metadata.py", url, json.dumps([{"answer": "1"}]), json.dumps({"seed": 0}))
    assert step["metadata"]["reward_components"] == {"verifier": step["reward"]} and step["done"] is True


def test_openenv_010_tool_client_reads_a_scoring_calls_parts():
    """CodingTools-v0's ``submit`` through 0.10's MCPToolClient: the part in the step's metadata
    and in its observation's."""
    with ProcessProvider("openenv_gym.envs.coding_tools:CodingToolsEnvironment") as url:
        arguments = {"code": SOLUTIONS["digit-square-sum"]}
        seen = run_peer(
            "tool_metadata.py",
            url,
            json.dumps({"options": {"task_id": "digit-square-sum"}}),
            "submit",
            json.dumps(arguments),
        )
    assert (seen["reward"], seen["done"]) == (1.0, True)
    assert seen["metadata"]["reward_components"] == seen["observation_metadata"]["reward_components"] == {"tests": 1.0}


def play(url: str, words: list[str], rewards: list) -> list[tuple[float, dict[str, float]]]:
    """Our client on the 0.10 guessing env: each step's reward and reward parts."""
    env = RecordEpisodes(gym.make("openenv/Remote-v0", base_url=url), rewards=rewards)
    try:
        env.reset(seed=0)
        seen = []
        for word in words:
            _, reward, terminated, truncated, info = env.step({"word": word})
            seen.append((reward, info["reward_components"]))
        assert terminated and not truncated
        return seen
    finally:
        env.close()


def test_a_rubric_pays_on_our_client_what_it_pays_on_an_openenv_010_server():
    """``Sequential(Gate(...), Gate(WeightedSum(...)))`` per step: the part our client computes
    (weight 0: logged, not paid) is the reward 0.10's env paid with the same rubric."""
    words = ["r2d2", "rub", "rubrics", SECRET]
    with peer_server("rubric_server.py", "step") as url:
        seen = play(url, words, [rubric_reward(RUBRICS["step"](), name="rubric", per="step", weight=0.0)])
    assert [reward for reward, _ in seen] == [pytest.approx(x) for x in (0.0, 0.0, 0.7 * 5 / 6, 1.0)]
    assert [parts["rubric"] for _, parts in seen] == [pytest.approx(reward) for reward, _ in seen]


@pytest.mark.parametrize("per", ["step", "episode"])
def test_a_trajectory_rubric_scores_the_episode_on_both_sides(per):
    """A ``TrajectoryRubric``: 0 until the episode ends, then its score of the whole episode, on
    the server and in our part; ``per="episode"`` adds it at the last step only."""
    words = ["a", "bb", SECRET]
    with peer_server("rubric_server.py", "trajectory") as url:
        seen = play(url, words, [rubric_reward(RUBRICS["trajectory"](), name="guesses", per=per, weight=0.0)])
    assert [reward for reward, _ in seen] == [0.0, 0.0, pytest.approx(1 / 3)]
    paid = [parts.get("guesses") for _, parts in seen]
    assert paid == ([0.0, 0.0, pytest.approx(1 / 3)] if per == "step" else [None, None, pytest.approx(1 / 3)])
