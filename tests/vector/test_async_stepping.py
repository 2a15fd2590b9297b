"""EnvPool-style asynchronous stepping: async_reset / recv / send with batch_size < num_envs."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

import openenv_gym
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY


@pytest.mark.parametrize("backend", ["auto", "per_env"])
def test_each_block_steps_as_its_own_vector_env_whatever_the_order(backend):
    """recv() hands out whole blocks as they come; each block's trajectory is a vector env's of its size."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=6, batch_size=3, vector_backend=backend, max_episode_steps=40)
    blocks = [(block.start, block.stop) for block in envs.unwrapped._blocks]
    assert blocks == [(0, 3), (3, 6)]  # num_envs // batch_size servers by default
    if backend == "auto":
        local = [gym.make_vec("CartPole-v1", 3, max_episode_steps=40) for _ in blocks]
    else:
        local = [gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=40)] * 3) for _ in blocks]
    rng = np.random.default_rng(0)
    try:
        envs.async_reset(seed=10)
        expected = [env.reset(seed=10 + start) for env, (start, _) in zip(local, blocks)]
        received, ends = {0: 0, 1: 0}, 0
        for _ in range(300):
            obs, rewards, terminations, truncations, infos = envs.recv()
            ids = infos["env_id"]
            assert obs.shape == (3, 4) and ids.tolist() in ([0, 1, 2], [3, 4, 5])
            index = ids[0] // 3
            want = expected[index]
            np.testing.assert_array_equal(obs, want[0])
            if len(want) == 5:  # a step's results (a reset's come with zero rewards and no flags)
                np.testing.assert_array_equal(rewards, want[1])
                np.testing.assert_array_equal(terminations, want[2])
                np.testing.assert_array_equal(truncations, want[3])
            else:
                assert not rewards.any() and not terminations.any() and not truncations.any()
            ends += int(terminations.sum() + truncations.sum())
            received[index] += 1
            actions = rng.integers(0, 2, 3)
            envs.send(actions, ids)
            expected[index] = local[index].step(actions)
        assert min(received.values()) > 50 and ends > 20
    finally:
        envs.close()
        for env in local:
            env.close()


def test_send_and_recv_refuse_what_they_cannot_do():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, batch_size=2)
    try:
        with pytest.raises(NoAsyncCallError):
            envs.recv()
        envs.async_reset(seed=0)
        with pytest.raises(AlreadyPendingCallError):
            envs.step(np.zeros(4, dtype=np.int64))
        _, _, _, _, infos = envs.recv()
        ids = infos["env_id"]
        with pytest.raises(ValueError, match="whole server blocks"):
            envs.send(np.zeros(1, dtype=np.int64), ids[:1])
        other = np.array([2, 3]) if ids[0] == 0 else np.array([0, 1])
        with pytest.raises(ValueError, match="still in flight"):
            envs.send(np.zeros(2, dtype=np.int64), other)
        with pytest.raises(openenv_gym.InvalidActionError):
            envs.send(np.array([0, 7]), ids)
        envs.send(np.zeros(2, dtype=np.int64), ids)  # what was refused sent nothing: this goes through
        envs.recv()
        envs.recv()
    finally:
        envs.close()
    with pytest.raises(ValueError, match="whole number of equal server blocks"):
        gym.make_vec("openenv/CartPole-v1", num_envs=5, batch_size=2, servers=2)


def test_a_dead_server_comes_back_truncated_in_async_mode():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, batch_size=2)
    try:
        envs.async_reset(seed=0)
        first = envs.recv()[4]["env_id"]
        second = envs.recv()[4]["env_id"]
        victim = envs.unwrapped._blocks[1]
        os.kill(victim.provider.pid, signal.SIGKILL)
        envs.send(np.zeros(2, dtype=np.int64), first)
        envs.send(np.zeros(2, dtype=np.int64), second)
        results = {}
        for _ in range(2):
            _, _, _, truncations, infos = envs.recv()
            results[int(infos["env_id"][0])] = (truncations.tolist(), infos)
        assert results[2][0] == [True, True]
        assert "ConnectionLostError" in results[2][1][FAILURE_INFO_KEY][0]
        assert results[0][0] == [False, False]
    finally:
        envs.close()
