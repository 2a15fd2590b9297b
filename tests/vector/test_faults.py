"""The vector env survives a server that dies or hangs: that block restarts, truncated and flagged."""

from __future__ import annotations

import os
import signal
import socket

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.vector import RemoteVectorEnv
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.utils import REPO_ROOT, pid_alive, server_pids, wait_until


@pytest.mark.parametrize(
    ("mode", "batched"),
    [("NextStep", True), ("SameStep", True), ("NextStep", False)],
    ids=["next-batched", "same-batched", "next-plain"],
)
def test_killed_server_restarts_its_sub_envs(mode, batched):
    """SIGKILL of one server mid-rollout: its sub-envs come back truncated and flagged, the others go on."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, sessions_per_server=2, autoreset_mode=mode, batched=batched)
    providers = envs.unwrapped._providers
    started = {provider.pid for provider in providers}
    try:
        envs.reset(seed=0)
        for _ in range(3):
            envs.step(np.zeros(4, dtype=np.int64))
        victim = providers[0].pid
        os.kill(victim, signal.SIGKILL)
        obs, rewards, terminations, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations[:2].all() and not terminations[:2].any() and rewards[:2].tolist() == [0.0, 0.0]
        assert infos[f"_{FAILURE_INFO_KEY}"].tolist() == [True, True, False, False]
        assert "ConnectionLostError" in infos[FAILURE_INFO_KEY][0]
        assert rewards[2:].tolist() == [1.0, 1.0]
        if mode == "SameStep":
            assert infos["_final_obs"][:2].all() and infos["final_obs"][0].shape == (4,)
        assert not pid_alive(victim) and providers[0].is_alive() and providers[0].pid != victim
        # The rollout goes on for every sub-env.
        for _ in range(30):
            obs, rewards, *_ = envs.step(np.ones(4, dtype=np.int64))
            assert obs.shape == (4, 4)
        started |= {provider.pid for provider in providers}
    finally:
        envs.close()
    assert wait_until(lambda: not any(pid_alive(pid) for pid in started), 10)


def test_hung_sub_env_is_restarted_after_its_timeout(monkeypatch):
    """A sub-env that stops answering within call_timeout is restarted on a fresh server and flagged."""
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    before = server_pids()
    envs = openenv_gym.vector.RemoteVectorEnv(
        "tests.testing_env:make_sleepy", num_envs=2, sessions_per_server=1, call_timeout=1.0
    )
    try:
        envs.reset(seed=0)
        obs, rewards, _, truncations, infos = envs.step(np.array([1, 0]))
        assert truncations.tolist() == [True, False] and rewards.tolist() == [0.0, 1.0]
        assert "RequestTimeoutError" in infos[FAILURE_INFO_KEY][0]
        obs, rewards, _, truncations, _ = envs.step(np.array([0, 0]))  # NextStep: block 0 resets now
        assert obs[:, 0].tolist() == [0.0, 2.0] and rewards.tolist() == [0.0, 1.0]
    finally:
        envs.close()
    assert wait_until(lambda: server_pids() <= before, 15), "a server outlived close()"


def test_errors_of_the_env_itself_are_not_swallowed():
    """An exception in the env's step is the env's error: it is raised (as its own type), not turned into a restart."""
    envs = RemoteVectorEnv("tests.testing_env:make_failing_on_step", num_envs=2)
    try:
        envs.reset(seed=0)
        pids = [provider.pid for provider in envs._providers]
        with pytest.raises(RuntimeError, match="the simulator refused the action") as caught:
            envs.step(np.array([0, 1]))
        assert caught.value.__cause__.code == "EXECUTION_ERROR"
        assert [provider.pid for provider in envs._providers] == pids  # nothing restarted
        envs.step(np.array([0, 0]))
    finally:
        envs.close()


@pytest.mark.parametrize("backend", ["per_env", "gymnasium"])
def test_reset_recovers_a_dead_server(backend):
    """reset() after a server died resets its sub-envs on a new server instead of failing."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, sessions_per_server=2, vector_backend=backend)
    providers = envs.unwrapped._providers
    try:
        envs.reset(seed=0)
        os.kill(providers[1].pid, signal.SIGKILL)
        obs, _ = envs.reset(seed=3)
        if backend == "per_env":
            expected, _ = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)]).reset(seed=3)
        else:  # one vector env of 2 per server, the second seeded 3 + 2
            expected = np.concatenate([gym.make_vec("CartPole-v1", 2).reset(seed=seed)[0] for seed in (3, 5)])
        np.testing.assert_array_equal(obs, expected)
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
    finally:
        envs.close()


def test_a_refused_send_leaves_no_session_waiting():
    """When one sub-env refuses a step before it is sent, the others' replies are read, so later calls work."""
    envs = gym.make_vec(
        "openenv/CartPole-v1", num_envs=2, max_episode_steps=2, autoreset_mode="Disabled", batched=False
    )
    try:
        envs.reset(seed=0)
        envs.step(np.array([0, 0]))
        envs.step(np.array([0, 0]))  # both truncated
        envs.reset(options={"reset_mask": np.array([True, False])})
        with pytest.raises(openenv_gym.ProtocolError, match="sub-env 0 ended"):
            envs.step(np.array([0, 0]))  # sub-env 1 still ended
        envs.reset(options={"reset_mask": np.array([False, True])})
        assert envs.step(np.array([0, 0]))[1].tolist() == [1.0, 1.0]
    finally:
        envs.close()


def test_step_wait_timeout_keeps_the_step_pending(monkeypatch):
    """A step_wait that runs out of its own timeout raises and keeps the step; no server is restarted."""
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    envs = openenv_gym.vector.RemoteVectorEnv(
        "tests.testing_env:make_sleepy", num_envs=2, sessions_per_server=1, env_kwargs={"seconds": 1.0}
    )
    pids = [provider.pid for provider in envs._providers]
    try:
        envs.reset(seed=0)
        envs.step_async(np.array([1, 1]))  # each step sleeps 1 s on the server
        with pytest.raises(TimeoutError, match="the step is still pending: call step_wait again"):
            envs.step_wait(timeout=0.05)
        obs, rewards, _terminations, truncations, infos = envs.step_wait()
        assert rewards.tolist() == [1.0, 1.0] and not truncations.any() and FAILURE_INFO_KEY not in infos
        assert obs[:, 0].tolist() == [1.0, 1.0]
        assert [provider.pid for provider in envs._providers] == pids
    finally:
        envs.close()


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "plain"])
def test_interrupted_step_wait_can_be_resumed(batched):
    """A Ctrl-C while reading one server leaves the step pending; the next step_wait reads the rest and restarts that block."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, sessions_per_server=1, batched=batched)
    try:
        envs.reset(seed=0)
        client = envs.unwrapped._blocks[0].client
        session = client if batched else client.client  # a PlainSessionBatch wraps one EnvClient
        real_complete = client.complete

        def interrupted(timeout=None):
            session.connection._drop("interrupted by the test")
            raise KeyboardInterrupt

        client.complete = interrupted
        envs.step_async(np.array([1, 1]))
        with pytest.raises(KeyboardInterrupt):
            envs.step_wait()
        client.complete = real_complete
        _, rewards, _, truncations, infos = envs.step_wait()
        assert truncations.tolist() == [True, False] and rewards.tolist() == [0.0, 1.0]
        assert infos[FAILURE_INFO_KEY][0].startswith("ConnectionLostError")
        assert envs.step(np.array([0, 0]))[0].shape == (2, 4)
    finally:
        envs.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_a_cut_connection_comes_back_on_the_same_server(mode, monkeypatch):
    """A block's connection cut while its server lives: the block reconnects there, even though the
    old session's env is still closing (its slot taken), and is reported truncated once."""
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    envs = RemoteVectorEnv(
        "tests.testing_env:make_slow_closing",
        num_envs=2,
        sessions_per_server=1,
        autoreset_mode=mode,
        vector_backend="per_env",
        call_timeout=10.0,
        env_kwargs={"seconds": 1.0},
    )
    pids = [provider.pid for provider in envs._providers]
    try:
        envs.reset(seed=0)
        envs.step(np.array([0, 0]))
        envs._blocks[0].client.connection._sock.shutdown(socket.SHUT_RDWR)
        _, rewards, _, truncations, infos = envs.step(np.array([0, 0]))
        assert truncations.tolist() == [True, False] and rewards.tolist() == [0.0, 1.0]
        assert infos[f"_{FAILURE_INFO_KEY}"].tolist() == [True, False]
        assert infos[FAILURE_INFO_KEY][0].startswith("ConnectionLostError")
        for _ in range(3):
            _, rewards, _, truncations, infos = envs.step(np.array([0, 0]))
            assert FAILURE_INFO_KEY not in infos and not truncations.any()
        assert rewards.tolist() == [1.0, 1.0]
        assert [provider.pid for provider in envs._providers] == pids  # no server was restarted
    finally:
        envs.close()
