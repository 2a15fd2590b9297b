"""Snapshot, restore and fork of a remote env: the same trajectory again, from the same state.

For each env, a seeded episode is snapshotted at step ``t`` and run ``T`` more steps; then it is
restored and the same actions replayed, forked into 8 envs that each replay them, and restored on
a second server from the portable bytes. Every branch must give the same observations, rewards,
flags and infos as the uninterrupted run: FrozenLake is slippery (its random generator decides
every move), Pendulum's reset is random, Pong's emulator goes through ALE's own clone, and
CodingTools-v0's tool calls run programs in sandboxes, their submissions paid by hidden tests,
and Git-v0's commits and files live in its sandbox's workspace.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.env import RemoteEnv
from openenv_gym.errors import EpisodeEndedError, SnapshotError, SnapshotUnsupportedError
from openenv_gym.snapshot import Snapshot, fork, release, restore, snapshot
from openenv_gym.startup import SNAPSHOT_KEY_ENV_VAR

BEFORE, AFTER, FORKS = 6, 12, 8


def make_frozen_lake() -> gym.Env:
    return gym.wrappers.TimeLimit(RemoteEnv("FrozenLake-v1", is_slippery=True), 100)


ENVS = {
    "CartPole": lambda: gym.make("openenv/CartPole-v1"),
    "FrozenLake": make_frozen_lake,
    "Pendulum": lambda: gym.make("openenv/Pendulum-v1"),
    "Pong": lambda: gym.make("openenv/ALE-Pong-v5"),
    "CodingTools": lambda: gym.make("openenv/CodingTools-v0"),
    "Git": lambda: gym.make("openenv/Git-v0"),
    # Restores (and resets) take sandboxes the server started ahead: the same runs all the same.
    "GitSpares": lambda: gym.make("openenv/Git-v0", spare_sandboxes=FORKS),
}


def tool_calls(count: int) -> list[str]:
    """CodingTools-v0's actions: programs run, examples run and submissions, in turn (none solves a task)."""
    programs = ["print({i} * 7)", "def digit_square_sum(n):\n    return {i}\n", "import sys; sys.exit({i})"]
    tools = ["run_python", "run_tests", "submit"]
    return [
        json.dumps({"name": tools[i % 3], "arguments": {"code": programs[i % 3].format(i=i)}}) for i in range(count)
    ]


def git_calls(count: int) -> list[str]:
    """Git-v0's actions: commits (their ids fixed by the env's date and author), files written and read."""
    calls = [
        {
            "name": "run",
            "arguments": {
                "command": "echo {i} >> notes.txt && git add -A && git commit -qm n{i} && git log --oneline -3"
            },
        },
        {"name": "write_file", "arguments": {"path": "file{i}.txt", "content": "line {i}\n"}},
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "run", "arguments": {"command": "git status --short; ls; git rev-parse HEAD"}},
    ]
    return [json.dumps(calls[i % 4]).replace("{i}", str(i)) for i in range(count)]


def actions_of(name: str, env: gym.Env) -> list:
    if name == "CodingTools":
        return tool_calls(BEFORE + AFTER)
    if name.startswith("Git"):
        return git_calls(BEFORE + AFTER)
    env.action_space.seed(3)
    return [env.action_space.sample() for _ in range(BEFORE + AFTER)]


def run(env: gym.Env, actions: list) -> list:
    """The steps ``actions`` take, up to the end of the episode."""
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


def assert_same(first: list, second: list) -> None:
    assert len(first) == len(second)
    for (obs_a, reward_a, term_a, trunc_a, info_a), (obs_b, reward_b, term_b, trunc_b, info_b) in zip(
        first, second, strict=True
    ):
        np.testing.assert_array_equal(obs_a, obs_b)
        assert (reward_a, term_a, trunc_a) == (reward_b, term_b, trunc_b)
        assert info_a.keys() == info_b.keys()
        for key in info_a:
            np.testing.assert_array_equal(info_a[key], info_b[key])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENVS))
def test_a_restored_or_forked_env_replays_the_run_it_was_taken_from(name, monkeypatch):
    monkeypatch.setenv(SNAPSHOT_KEY_ENV_VAR, "a key both servers share")
    env, other = ENVS[name](), ENVS[name]()
    try:
        actions = actions_of(name, env)
        for seed in range(50):  # the first seeded episode still going at the snapshot (FrozenLake has holes)
            env.reset(seed=seed)
            before = run(env, actions[:BEFORE])
            if len(before) == BEFORE and not (before[-1][2] or before[-1][3]):
                break
        handle = snapshot(env, portable=True)
        assert handle.size > 0 and handle.portable
        uninterrupted = run(env, actions[BEFORE:])

        restore(env, handle)
        assert_same(run(env, actions[BEFORE:]), uninterrupted)

        restore(env, handle)  # a handle restores any number of times
        children = fork(env, FORKS)
        try:
            assert len(children) == FORKS
            for child in children:
                assert_same(run(child, actions[BEFORE:]), uninterrupted)
            assert_same(run(env, actions[BEFORE:]), uninterrupted)  # the parent goes on as before
        finally:
            for child in children:
                child.close()

        other.reset(seed=99)  # another server of the env, in another state
        restore(other, handle)
        assert_same(run(other, actions[BEFORE:]), uninterrupted)
    finally:
        other.close()
        env.close()


def test_the_client_side_time_limit_counts_on_from_the_snapshot():
    env = gym.make("openenv/CartPole-v1", max_episode_steps=8)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step(0 if _ % 2 else 1)
        handle = snapshot(env)
        for _ in range(4):
            env.step(0 if _ % 2 else 1)
        restore(env, handle)
        steps = run(env, [1, 0, 1, 0, 1, 0, 1, 0])
        assert len(steps) == 5 and steps[-1][3]  # 3 + 5 = the limit of 8, as before the restore
    finally:
        env.close()


def test_restoring_an_ended_episode_ends_it_again():
    env = gym.make("openenv/CartPole-v1")
    try:
        env.reset(seed=0)
        while not run(env, [0])[-1][2]:
            pass
        ended = snapshot(env)
        env.reset(seed=1)
        env.step(0)
        observation, _ = restore(env, ended)
        assert env.observation_space.contains(observation)
        with pytest.raises(EpisodeEndedError):
            env.step(0)
        env.reset()
        env.step(0)  # a reset starts afresh
    finally:
        env.close()


def test_a_snapshot_is_freed_when_released_and_unknown_after():
    env = RemoteEnv("CartPole-v1")
    try:
        env.reset(seed=0)
        handle = env.snapshot()
        release(env, handle)
        with pytest.raises(SnapshotError, match="keeps no snapshot") as raised:
            env.restore(handle)
        assert raised.value.code == "SNAPSHOT_UNKNOWN"
        portable = env.snapshot(portable=True)
        env.release(portable)
        env.restore(portable)  # released on the server, restored from its bytes
    finally:
        env.close()


def test_portable_bytes_sealed_with_another_key_or_altered_are_refused(monkeypatch):
    monkeypatch.setenv(SNAPSHOT_KEY_ENV_VAR, "first key")
    first = RemoteEnv("CartPole-v1")
    monkeypatch.setenv(SNAPSHOT_KEY_ENV_VAR, "second key")
    second = RemoteEnv("CartPole-v1")
    try:
        first.reset(seed=0)
        handle = first.snapshot(portable=True)
        with pytest.raises(SnapshotError, match="not sealed with this server's key") as raised:
            second.restore(handle)
        assert raised.value.code == "SNAPSHOT_REFUSED"
        altered = bytearray(handle.portable)
        altered[-1] ^= 1
        with pytest.raises(SnapshotError, match="not sealed with this server's key"):
            first.restore(Snapshot("s-gone", handle.server, handle.size, bytes(altered)))
        with pytest.raises(SnapshotError, match="not a portable snapshot"):
            first.restore(Snapshot("s-gone", handle.server, handle.size, b"a pickle of my own"))
    finally:
        second.close()
        first.close()


def test_a_portable_snapshot_of_another_env_is_refused(monkeypatch):
    monkeypatch.setenv(SNAPSHOT_KEY_ENV_VAR, "shared")
    cartpole, acrobot = RemoteEnv("CartPole-v1"), RemoteEnv("Acrobot-v1")
    try:
        cartpole.reset(seed=0)
        acrobot.reset(seed=0)
        with pytest.raises(SnapshotError, match=r"is of 'CartPole-v1'.*serves 'Acrobot-v1'"):
            acrobot.restore(cartpole.snapshot(portable=True))
    finally:
        acrobot.close()
        cartpole.close()


def test_an_env_that_does_not_snapshot_is_refused_before_anything_is_sent():
    env = gym.make("openenv/Echo-v0")
    try:
        env.reset()
        with pytest.raises(SnapshotUnsupportedError, match="does not implement snapshot"):
            snapshot(env)
    finally:
        env.close()


def test_release_names_only_the_releasing_sessions_own(monkeypatch):
    env = RemoteEnv("CartPole-v1")
    try:
        env.reset(seed=0)
        handle = env.snapshot()
        (child,) = env.fork(1)
        try:
            child.release(handle)  # not the child's: left alone
            env.restore(handle)
        finally:
            child.close()
    finally:
        env.close()


def test_the_async_env_snapshots_restores_and_forks():
    from tests.utils import run_async

    async def main() -> None:
        env = await openenv_gym.make_async("openenv/CartPole-v1", max_episode_steps=6)
        try:
            await env.reset(seed=0)
            await env.step(1)
            handle = await env.snapshot()
            first = [await env.step(a) for a in (0, 1, 0)]
            await env.restore(handle)
            again = [await env.step(a) for a in (0, 1, 0)]
            assert_same(first, again)
            await env.restore(handle)
            children = await env.fork(2)
            try:
                for child in children:
                    steps = [await child.step(a) for a in (0, 1, 0, 1, 0)]
                    assert_same(steps[:3], first)
                    assert steps[-1][3] and not steps[-2][3]  # 1 + 5 = the limit of 6, counted on
            finally:
                for child in children:
                    await child.aclose()
            # The restore falls back as the single env's does (one rule, EnvCore.restore_request).
            portable = await env.snapshot(portable=True)
            await env.release(handle, portable)
            with pytest.raises(SnapshotError, match="keeps no snapshot"):
                await env.restore(handle)
            await env.restore(portable)  # released on the server, restored from its bytes
            assert_same([await env.step(a) for a in (0, 1, 0)], first)
        finally:
            await env.aclose()

    run_async(main(), timeout=60)


@pytest.mark.slow
def test_tree_search_through_the_wire_beats_random_play(monkeypatch):
    """``examples/mcts_cartpole.py`` with a small budget (8 simulations of 8 steps a move, episodes
    capped at 60): its returns must be well above random play's on the same server."""
    import importlib

    from tests.utils import REPO_ROOT

    monkeypatch.syspath_prepend(str(REPO_ROOT / "examples"))
    example = importlib.import_module("mcts_cartpole")
    env = gym.make("openenv/CartPole-v1", max_episode_steps=60)
    try:
        searched = [example.mcts_return(env, seed, simulations=8, depth=8) for seed in range(3)]
        played = [example.random_return(env, seed) for seed in range(20)]
    finally:
        env.close()
    mean_searched, mean_played = sum(searched) / len(searched), sum(played) / len(played)
    assert mean_played < 35, played  # CartPole's random play lasts about 22 steps
    assert mean_searched >= 50, searched
    assert mean_searched >= 2 * mean_played, (searched, played)


def test_a_handle_taken_under_other_wrappers_is_refused_before_the_env_changes():
    env = gym.make("openenv/CartPole-v1")
    try:
        env.reset(seed=0)
        handle = snapshot(env)
        moved = env.step(1)[0]
        with pytest.raises(SnapshotError, match="taken under 3 wrappers, this env has 0") as raised:
            restore(env.unwrapped, handle)
        assert raised.value.code == "SNAPSHOT_REFUSED"
        assert not np.array_equal(env.step(1)[0], moved)  # stepped on from where it was
    finally:
        env.close()
