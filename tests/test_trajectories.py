"""Recorded episodes: 100 of them (a vector env's and the async pool's) re-play with no divergence,
a tampered record is caught, both file formats keep everything, and re-scoring offline gives the
numbers the same reward functions paid live."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.rewards import RewardFunction, rescored
from openenv_gym.trajectories import Trajectory, TrajectoryWriter, read_trajectories, replay, write_trajectories
from openenv_gym.wrappers import RecordAsyncEpisodes, RecordEpisodes, RecordVectorEpisodes
from tests.utils import REPO_ROOT


def upright(step) -> float:
    """A step-level part: how near upright the pole is (1 at 0 rad)."""
    return 1.0 - abs(float(step.observation[2])) / 0.21


def short_episode(trajectory) -> float:
    """An episode-level part: 1 for an episode of at most 20 steps."""
    return float(trajectory.length <= 20)


REWARDS = [RewardFunction(upright, per="step", weight=0.1), RewardFunction(short_episode, weight=-0.5)]


def record_vector(path, episodes: int) -> list[Trajectory]:
    envs = RecordVectorEpisodes(
        gym.make_vec("openenv/CartPole-v1", num_envs=4, vector_backend="per_env"), path, rewards=REWARDS
    )
    envs.reset(seed=10)
    actions = np.random.default_rng(0)
    try:
        while len(envs.episodes) < episodes:
            envs.step(actions.integers(0, 2, size=4))
    finally:
        envs.close()
    return envs.episodes


def record_pool(path, episodes: int) -> None:
    async def run() -> None:
        with TrajectoryWriter(path) as writer:
            async with openenv_gym.AsyncEnvPool("openenv/CartPole-v1", size=4) as pool:

                async def one(index: int) -> None:
                    async with RecordAsyncEpisodes(await pool.acquire(), writer, env_id="openenv/CartPole-v1") as env:
                        await env.reset(seed=1000 + index)
                        actions, done = np.random.default_rng(index), False
                        while not done:
                            _, _, terminated, truncated, _ = await env.step(int(actions.integers(0, 2)))
                            done = terminated or truncated

                await asyncio.gather(*(one(index) for index in range(episodes)))

    asyncio.run(run())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("episodes")
    live = record_vector(folder / "vector.jsonl", 50)
    record_pool(folder / "pool.parquet", 50)
    return folder, live


@pytest.mark.slow
def test_a_hundred_recorded_episodes_replay_with_no_divergence(recorded):
    folder, _ = recorded
    vector = list(read_trajectories(folder / "vector.jsonl"))
    pool = list(read_trajectories(folder / "pool.parquet"))
    finished = [episode for episode in vector + pool if episode.done]
    assert len(finished) >= 100
    assert len({episode.stream for episode in vector}) == 4 and len({episode.stream for episode in pool}) == 50
    assert sorted(episode.seed for episode in vector if episode.episode == 0) == [10, 11, 12, 13]
    count, divergences = replay(vector + pool, lambda trajectory: gym.make(trajectory.env_id))
    assert divergences == [] and count == len(vector) + len(pool)


def test_a_tampered_record_is_reported_where_it_diverges(recorded):
    folder, _ = recorded
    pool = list(read_trajectories(folder / "pool.parquet"))[:3]
    bad = replace(pool[1], actions=[*pool[1].actions[:4], 1 - pool[1].actions[4], *pool[1].actions[5:]])
    count, divergences = replay([pool[0], bad, pool[2]], lambda trajectory: gym.make(trajectory.env_id))
    assert count == 3 and len(divergences) == 1
    (divergence,) = divergences
    assert (divergence.stream, divergence.step, divergence.what) == (bad.stream, 4, "observation")
    unseeded = replace(pool[0], seed=None)
    assert replay([unseeded], lambda trajectory: gym.make(trajectory.env_id))[1][0].what == "unseeded"


def test_jsonl_and_parquet_keep_the_same_records(recorded, tmp_path):
    folder, _ = recorded
    episodes = list(read_trajectories(folder / "vector.jsonl"))
    write_trajectories(tmp_path / "copy.parquet", episodes)
    assert [episode.to_record() for episode in read_trajectories(tmp_path / "copy.parquet")] == [
        episode.to_record() for episode in episodes
    ]
    first = episodes[0]
    observations = first.decoded_observations()
    assert isinstance(observations[0], np.ndarray) and observations[0].dtype == np.float32
    assert first.infos[-1] == {} and set(first.reward_components[-1]) == {"upright", "short_episode"}


def test_rescoring_offline_gives_what_the_functions_paid_live(recorded):
    """The vector episodes were paid REWARDS live; re-scored from their records with the same
    functions, every step's reward and component is the same number."""
    _, live = recorded
    for episode in live:
        again = rescored(episode, REWARDS)
        assert again.rewards == episode.rewards and again.reward_components == episode.reward_components
        plain = replace(episode, rewards=list(episode.env_rewards), reward_components=[{}] * episode.length)
        assert rescored(plain, REWARDS).rewards == episode.rewards
    assert any(ep.rewards != ep.env_rewards for ep in live)


def test_the_wrappers_pay_the_functions_in_the_reward_and_the_info():
    env = RecordEpisodes(gym.make("openenv/CartPole-v1"), rewards=REWARDS)
    try:
        env.reset(seed=3)
        observation, reward, _, _, info = env.step(0)
        assert info["reward_components"] == {"upright": 1.0 - abs(float(observation[2])) / 0.21}
        assert reward == 1.0 + 0.1 * info["reward_components"]["upright"]
    finally:
        env.close()
    assert len(env.episodes) == 1 and not env.episodes[0].done  # cut off at close, still written


def test_replay_and_rescore_commands(recorded, tmp_path):
    folder, _ = recorded
    subset = tmp_path / "some.jsonl"
    write_trajectories(subset, [e for e in read_trajectories(folder / "pool.parquet")][:5])
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "replay", str(subset)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("5 of 5 episodes re-played; 0 diverged")
    out = tmp_path / "rescored.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "rescore", str(subset), "--reward", "tests.test_trajectories:short_episode",
         "--weight", "-0.5", "--out", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    again = list(read_trajectories(out))
    expected = [float(e.length <= 20) for e in read_trajectories(subset)]
    assert [e.reward_components[-1]["short_episode"] for e in again] == expected
    assert [e.total_reward for e in again] == [sum(e.env_rewards) - 0.5 * x for e, x in zip(again, expected)]
    assert f"short_episode: mean {sum(expected) / 5:.6g} over 5 episodes" in done.stdout


def submits(step) -> float:
    """A step-level part of a tool env: 1 for a call of submit (the action as the env took it, a dict)."""
    return float(step.action["name"] == "submit")


def test_a_tool_env_trajectory_recorded_from_dict_calls_replays_with_no_divergence(tmp_path):
    """Calls given as dicts are recorded as their JSON objects (not Python's repr of them): the file
    re-plays with 0 diverged, and re-scoring functions see each call as the env took it."""
    path = tmp_path / "tools.jsonl"
    env = RecordEpisodes(gym.make("openenv/CodingTools-v0", max_episode_steps=2), path)
    calls = [
        {"name": "run_python", "arguments": {"code": "print(6 * 7)"}},
        {"name": "submit", "arguments": {"code": "def f(*args):\n    return None\n"}},
    ]
    try:
        env.reset(seed=0)
        for call in calls:
            env.step(call)
    finally:
        env.close()
    (episode,) = read_trajectories(path)
    assert episode.actions == calls and episode.decoded_actions() == calls
    assert "42" in episode.observations[1]
    count, divergences = replay([episode], lambda trajectory: gym.make(trajectory.env_id, max_episode_steps=2))
    assert (count, divergences) == (1, [])
    again = rescored(episode, [RewardFunction(submits, per="step")])
    assert [parts["submits"] for parts in again.reward_components] == [0.0, 1.0]


@pytest.fixture(scope="module")
def two_ended_one_cut_short(tmp_path_factory):
    """CartPole episodes recorded by RecordEpisodes: two played to their end, a third cut short by close()."""
    path = tmp_path_factory.mktemp("cut-short") / "episodes.jsonl"
    env = RecordEpisodes(gym.make("openenv/CartPole-v1"), path)
    try:
        for seed in (1, 2):
            env.reset(seed=seed)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(seed % 2)
                done = terminated or truncated
        env.reset(seed=3)
        for _ in range(3):
            env.step(0)
    finally:
        env.close()
    return path


def rescore_output(path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_gym", "rescore", str(path), "--reward", "tests.test_trajectories:short_episode"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_an_episode_cut_short_by_close_is_marked_and_left_out_of_rescore_means(two_ended_one_cut_short):
    episodes = list(read_trajectories(two_ended_one_cut_short))
    assert [episode.unfinished for episode in episodes] == [False, False, True]
    assert episodes[2].length == 3 and not episodes[2].done
    done = rescore_output(two_ended_one_cut_short)
    assert done.returncode == 0, done.stderr
    ended = episodes[:2]
    assert f"short_episode: mean {sum(e.length <= 20 for e in ended) / 2:.6g} over 2 episodes" in done.stdout
    expected = sum(sum(e.env_rewards) - 0.0 + float(e.length <= 20) for e in ended) / 2
    assert f"return: mean {expected:.6g}" in done.stdout
    assert "1 episodes cut short by close() left out of the means" in done.stdout


def test_a_file_of_the_older_format_still_reads_and_rescores(two_ended_one_cut_short, tmp_path):
    """Records written before the unfinished field: an episode that ended neither way was cut short."""
    old = tmp_path / "old.jsonl"
    lines = []
    for episode in read_trajectories(two_ended_one_cut_short):
        record = episode.to_record()
        del record["unfinished"]
        lines.append(json.dumps(record))
    old.write_text("\n".join(lines) + "\n")
    assert [episode.unfinished for episode in read_trajectories(old)] == [False, False, True]
    assert rescore_output(old).stdout == rescore_output(two_ended_one_cut_short).stdout
    assert replay(list(read_trajectories(old)), lambda trajectory: gym.make(trajectory.env_id)) == (3, [])
