"""Snapshots of Coding-v0 and CodingTools-v0 episodes, through ``gym.make`` (real servers, real
sandboxes): a branch replays the original's rewards and turns, an ended episode stays ended, the
task draws continue as they would have, and a portable snapshot carries no hidden test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401 - registers openenv/...
from openenv_gym.client import http_get_json
from openenv_gym.errors import EpisodeEndedError
from openenv_gym.protocol.snapshot import unseal
from openenv_gym.snapshot import fork, release, restore, snapshot
from tests.envs.hostile_cases import SOLUTION, TASK
from tests.utils import UNIT

WRONG = "def digit_square_sum(n):\n    return n\n"  # passes 1 of the 7 hidden tests (n = 0)
KEY = "coding-snapshot-test-key"


def submit(env: gym.Env, code: str) -> tuple:
    return env.step(json.dumps({"name": "submit", "arguments": {"code": code}}))


@pytest.fixture(scope="module")
def tools_env() -> Iterator[gym.Env]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENENV_GYM_SNAPSHOT_KEY", KEY)  # the server process inherits it
        env = gym.make("openenv/CodingTools-v0", reward="fraction")  # partial scores tell branches apart
    yield env
    env.close()


def test_coding_envs_say_they_snapshot(tools_env):
    schema = http_get_json(tools_env.unwrapped.base_url, "/schema", timeout=10 * UNIT)
    assert schema["snapshot"] == {"supported": True, "method": "environment"}


def test_a_branch_from_mid_episode_pays_what_the_original_paid_and_counts_its_turns(tools_env):
    """After a wrong submission, the branch's solution pays the rise since that submission (6/7), as
    the original's did: the episode's scores come back with it, so no branch is paid twice."""
    tools_env.reset(options={"task_id": TASK})
    wrong = submit(tools_env, WRONG)
    assert wrong[1] == pytest.approx(1 / 7)
    mid = snapshot(tools_env)
    solved = submit(tools_env, SOLUTION)
    assert solved[1] == pytest.approx(6 / 7) and solved[2] is True
    text, info = restore(tools_env, mid)
    assert text == wrong[0] and info["tool_name"] == "submit"  # the call that reached the state
    assert [tool["function"]["name"] for tool in info["tools"]] == ["run_python", "run_tests", "submit"]
    assert tools_env.unwrapped.state()["step_count"] == 1
    again = submit(tools_env, SOLUTION)
    assert again[1:4] == solved[1:4]
    assert json.loads(again[0]) == json.loads(solved[0])
    release(tools_env, mid)


def test_a_restored_ended_episode_stays_ended(tools_env):
    tools_env.reset(options={"task_id": TASK})
    submit(tools_env, SOLUTION)
    ended = snapshot(tools_env)
    tools_env.reset(options={"task_id": TASK})
    restore(tools_env, ended)
    with pytest.raises(EpisodeEndedError):
        submit(tools_env, SOLUTION)
    tools_env.reset()


def test_forks_take_different_next_calls_from_one_state(tools_env):
    tools_env.reset(options={"task_id": TASK})
    submit(tools_env, WRONG)
    branches = fork(tools_env, 2)
    try:
        rewards = [submit(branch, code)[1] for branch, code in zip(branches, (WRONG, SOLUTION), strict=True)]
    finally:
        for branch in branches:
            branch.close()
    assert rewards == [pytest.approx(0.0), pytest.approx(6 / 7)]
    assert submit(tools_env, SOLUTION)[1] == pytest.approx(6 / 7)  # the parent went on untouched


def test_a_portable_snapshot_names_the_task_and_holds_none_of_its_tests(tools_env):
    """The client holds a portable snapshot: it must not carry the hidden tests out of the server."""
    tools_env.reset(options={"task_id": TASK})
    submit(tools_env, WRONG)
    handle = snapshot(tools_env, portable=True)
    header, state = unseal(KEY.encode(), handle.portable)
    episode = json.loads(state)
    assert set(episode) == {"rng", "state", "extra"}
    assert episode["state"]["task_id"] == TASK and episode["state"]["last_fraction"] == pytest.approx(1 / 7)
    text = json.dumps(episode["state"]) + json.dumps(episode["extra"])
    assert "expected" not in text and "args" not in text and 'tests"' not in text
    # Besides, only the frame the client was sent (the visible example's feedback) and flags.
    assert set(header) == {"env", "frame", "ended", "render_mode"}
    assert json.loads(header["frame"])["data"]["observation"]["tool_name"] == "submit"
    release(tools_env, handle)


def test_coding_v0_restores_its_task_draws_and_its_turn_limit():
    """The generator that draws tasks comes back with the episode: a reset after the restore draws
    the task the original's next reset drew; the turn limit counts from the restored turn."""
    env = gym.make("openenv/Coding-v0", max_episode_steps=3)
    try:
        env.reset(seed=11)
        env.step(WRONG)
        first = snapshot(env)
        truncated = [env.step(WRONG)[3] for _ in range(2)]
        assert truncated == [False, True]
        _, next_info = env.reset()
        restore(env, first)
        assert [env.step(WRONG)[3] for _ in range(2)] == [False, True]
        _, info = env.reset()
        assert info["task_id"] == next_info["task_id"]
    finally:
        env.close()


def test_the_branching_example_scores_each_candidate_from_the_shared_state(tools_env, monkeypatch):
    """``examples/branch_tool_calls.py``: the prefix runs once (the parent stays at one turn) and each
    branch's submission is paid on its own, as a first submission from that state."""
    import importlib

    from tests.utils import REPO_ROOT

    monkeypatch.syspath_prepend(str(REPO_ROOT / "examples"))
    example = importlib.import_module("branch_tool_calls")
    rewards = example.branch_rewards(tools_env, example.CANDIDATES)
    assert rewards == {
        "returns n": pytest.approx(1 / 7),
        "fails on negatives": pytest.approx(6 / 7),
        "squares the number": pytest.approx(2 / 7),
        "solves it": pytest.approx(1.0),
    }
    assert tools_env.unwrapped.state()["step_count"] == 1
    advantages = example.advantages(rewards)
    assert max(advantages, key=advantages.get) == "solves it" and sum(advantages.values()) == pytest.approx(0.0)
