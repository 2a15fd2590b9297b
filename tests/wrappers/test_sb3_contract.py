"""SB3's VecEnv contract on SB3VecEnv over from_env_fns: attributes and methods of chosen sub-envs,
per-sub-env reset options, Dict and Tuple spaces in SB3's shapes, each checked against SB3's DummyVecEnv."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from openenv_gym.vector import RemoteVectorEnv
from openenv_gym.wrappers import SB3VecEnv, make_sb3_vec_env

N_ENVS = 3
PARTS = {
    "position": spaces.Box(-1.0, 1.0, (2,), np.float32),
    "gear": spaces.Discrete(3),
    "lights": spaces.MultiBinary(2),
}


class Counter(gym.Env):
    """Counts its steps; an episode lasts ``length`` steps; its observations echo the action it was given."""

    def __init__(self, space: spaces.Space[Any], length: int = 3) -> None:
        self.observation_space = self.action_space = copy.deepcopy(space)  # its own, seeded as it is reset
        self.length = length
        self.steps = 0
        self.options_seen: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        self.steps = 0
        self.options_seen = options
        return self.action_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        return action, float(self.steps), False, self.steps >= self.length, {}

    def scaled(self, factor: int, *, offset: int = 0) -> int:
        return self.steps * factor + offset


def both(make: Callable[[], gym.Env[Any, Any]]) -> tuple[VecEnv, DummyVecEnv]:
    """The same sub-envs remote (SB3VecEnv over from_env_fns, as SB3 is told to use it) and in DummyVecEnv."""
    env_fns = [make] * N_ENVS
    return SB3VecEnv(RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode="SameStep", servers=2)), DummyVecEnv(env_fns)


def monitored_counter() -> gym.Env[Any, Any]:
    return Monitor(Counter(spaces.Discrete(2)))


def test_get_set_and_call_reach_the_chosen_sub_envs_as_in_dummy_vec_env():
    """get_attr, set_attr and env_method with SB3's indices (None, an int, a list, negative ones) act on those
    sub-envs only, and has_attr is false for an attribute no sub-env has."""
    remote, local = both(monitored_counter)
    try:
        for venv in (remote, local):
            venv.reset()
            assert not venv.has_attr("dummy")
            venv.set_attr("dummy", 12)
            assert venv.get_attr("dummy") == [12] * N_ENVS
            for index in range(N_ENVS):
                assert venv.set_attr("level", index * 10, indices=index) is None
            assert venv.get_attr("level") == [0, 10, 20]
            assert venv.get_attr("level", indices=[2, 0]) == [20, 0]
            assert venv.env_method("set_wrapper_attr", "steps", 5, indices=[0, -1]) == [True, True]
            assert venv.get_attr("steps") == [5, 0, 5]
            assert venv.env_method("scaled", 2, indices=[1, 2], offset=1) == [1, 11]
            assert venv.env_method("scaled", 3) == [15, 0, 15]
            assert venv.has_attr("level")
    finally:
        remote.close()
        local.close()


class MonitorOfOurs(Monitor):
    """A subclass of SB3's Monitor: env_is_wrapped(Monitor) is true for it too, as isinstance says."""


def sometimes_monitored(index: int) -> gym.Env[Any, Any]:
    env: gym.Env[Any, Any] = Counter(spaces.Discrete(2))
    if index == 1:
        env = Monitor(env)
    if index == 2:
        env = gym.wrappers.TimeLimit(MonitorOfOurs(env), 10)
    return env


def test_env_is_wrapped_looks_through_each_sub_env_s_wrappers_as_dummy_vec_env():
    """env_is_wrapped answers per sub-env, through other wrappers and for subclasses, with SB3's indices."""
    env_fns = [functools.partial(sometimes_monitored, index) for index in range(N_ENVS)]
    remote = SB3VecEnv(RemoteVectorEnv.from_env_fns(env_fns, autoreset_mode="SameStep", servers=2))
    local = DummyVecEnv(env_fns)
    try:
        for venv in (remote, local):
            assert venv.env_is_wrapped(Monitor) == [False, True, True]
            assert venv.env_is_wrapped(MonitorOfOurs, indices=[2, 1]) == [True, False]
            assert venv.env_is_wrapped(gym.wrappers.TimeLimit, indices=-1) == [True]
            assert venv.env_is_wrapped(gym.wrappers.RecordEpisodeStatistics) == [False] * N_ENVS
    finally:
        remote.close()
        local.close()


def test_sub_envs_of_a_server_side_vector_env_are_not_wrapped_and_take_no_calls():
    """One server-side vector env serves the sub-envs: env_is_wrapped is false for each (as SB3's
    evaluate_policy asks), a call is refused before anything is sent, and the env steps on."""
    venv = make_sb3_vec_env("openenv/CartPole-v1", n_envs=2, monitor=False, vector_backend="auto")
    try:
        assert venv.venv.metadata["vector_backend"] == "openenv_gym"
        assert venv.env_is_wrapped(Monitor) == [False, False]
        with pytest.raises(NotImplementedError, match="not separate envs"):
            venv.get_attr("gravity")
        venv.reset()
        assert venv.step(np.array([0, 1]))[0].shape == (2, 4)
    finally:
        venv.close()


def test_options_reach_each_sub_env_at_its_next_reset():
    """set_options with one dict, then with one dict per sub-env: each sub-env's reset gets its own, once."""
    remote, local = both(monitored_counter)
    try:
        for venv in (remote, local):
            venv.set_options({"hello": 1})
            venv.reset()
            assert venv.get_attr("options_seen") == [{"hello": 1}] * N_ENVS
            venv.reset()
            assert venv.get_attr("options_seen") == [None] * N_ENVS
            own = [{"other": 2}, {"hello": 1}, {"hello": 1}]
            venv.set_options(own)
            venv.reset()
            assert venv.get_attr("options_seen") == own
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("space", [spaces.Dict(PARTS), spaces.Tuple(tuple(PARTS.values()))], ids=["Dict", "Tuple"])
def test_dict_and_tuple_spaces_travel_in_sb3_s_shapes(space):
    """One action per sub-env in, as SB3 hands them; a dict (or tuple) of batched arrays out, and each
    ended sub-env's terminal_observation its own: DummyVecEnv's values, seed for seed."""
    remote, local = both(lambda: Counter(space))
    try:
        remote.seed(3)
        local.seed(3)
        observations = [remote.reset(), local.reset()]
        for step in range(4):
            actions = [space.sample() for _ in range(N_ENVS)]
            results = [venv.step(actions) for venv in (remote, local)]
            (r_obs, r_rew, r_done, r_infos), (l_obs, l_rew, l_done, l_infos) = results
            observations += [r_obs, l_obs]
            np.testing.assert_array_equal(r_rew, l_rew)
            np.testing.assert_array_equal(r_done, l_done)
            for r_info, l_info in zip(r_infos, l_infos):
                assert r_info.keys() == l_info.keys()
                if "terminal_observation" in l_info:
                    assert_same_value(r_info["terminal_observation"], l_info["terminal_observation"])
            if step < 2:  # no sub-env has ended yet: each observation is the action it was given
                assert_same_value(r_obs, concatenate(space, actions, create_empty_array(space, N_ENVS)))
        for r_obs, l_obs in zip(observations[::2], observations[1::2]):
            assert_same_value(r_obs, l_obs)
    finally:
        remote.close()
        local.close()


def assert_same_value(got: Any, expected: Any) -> None:
    """Equal dicts (same keys), tuples (same length) and arrays (same shape and values)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected)
        for key in expected:
            assert_same_value(got[key], expected[key])
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for item, want in zip(got, expected):
            assert_same_value(item, want)
    else:
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_array_equal(got, expected)
