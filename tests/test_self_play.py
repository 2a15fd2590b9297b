"""Self-play on a remote Parallel env: its agents as one VectorEnv's sub-envs, trained with SB3's PPO."""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode

from openenv_gym.pettingzoo import AgentsVectorEnv, make_agents_vec
from openenv_gym.server.runner import load_factory
from openenv_gym.wrappers import SB3VecEnv
from tests.utils import running_server

RPS = "classic/rps-v2"


def test_each_agent_of_each_copy_is_a_sub_env_and_copies_reset_in_the_same_step() -> None:
    with running_server(load_factory(RPS, env_kwargs={"max_cycles": 3})) as server:
        envs = make_agents_vec(base_url=server.url, copies=2)
        local = pettingzoo.make("parallel", RPS, max_cycles=3)
        try:
            assert isinstance(envs, AgentsVectorEnv)
            assert envs.num_envs == 4 and envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
            observations, _ = envs.reset(seed=[7, 7, 9, 9])
            local_obs, _ = local.reset(seed=7)
            assert data_equivalence(observations[:2], np.stack([local_obs["player_0"], local_obs["player_1"]]))
            actions = np.array([0, 1, 2, 2])
            for _ in range(3):
                observations, rewards, terminated, truncated, infos = envs.step(actions)
                expected = local.step({"player_0": 0, "player_1": 1})
                assert rewards[:2].tolist() == [expected[1]["player_0"], expected[1]["player_1"]]
                assert rewards[2:].tolist() == [0.0, 0.0]  # the second copy drew
            assert truncated.all() and not terminated.any()  # rps truncates at max_cycles
            assert infos["_final_obs"].all() and infos["final_obs"][0] is not None
            assert observations.shape == (4,)  # the copies' first observations again, after their reset
        finally:
            envs.close()
            local.close()


def test_an_env_without_a_parallel_api_is_refused() -> None:
    with running_server(load_factory("classic/connect_four-v3")) as server:
        # Connect Four is an AEC env that is not parallelizable: it has no Parallel API to step all agents at once.
        with pytest.raises(Exception, match=r"no Parallel API"):
            make_agents_vec(base_url=server.url)


@pytest.mark.slow
def test_sb3_ppo_self_plays_on_a_remote_parallel_env() -> None:
    """One PPO policy plays both seats of rock-paper-scissors, served remotely."""
    from stable_baselines3 import PPO

    envs = make_agents_vec(RPS, copies=2, max_cycles=20)
    try:
        venv = SB3VecEnv(envs)
        model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=2, seed=0, device="cpu")
        model.learn(total_timesteps=4 * 32 * 3)
        assert model.num_timesteps >= 4 * 32 * 3
        observations = venv.reset()
        actions, _ = model.predict(observations)
        assert actions.shape == (4,)
    finally:
        envs.close()
