"""call/get_attr/set_attr on a server-side vector env are the vector env's own, as Gymnasium gives them
in-process; OpenEnv's own servers, which have no such frame, refuse them saying so."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from tests.utils import openenv_core_servers


def test_a_vector_env_without_sub_env_objects_refuses_calls_as_gymnasiums_does():
    """CartPoleVectorEnv has no call, get_attr or set_attr: AttributeError in-process and remote alike;
    np_random_seed is still an int, the vector env's own."""
    local = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="vector_entry_point")
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=2, servers=1, vector_backend="gymnasium")
    try:
        for envs in (local, remote):
            with pytest.raises(AttributeError):
                envs.call("render")
            with pytest.raises(AttributeError):
                envs.get_attr("gravity")
            with pytest.raises(AttributeError):
                envs.set_attr("gravity", 1.0)
        with pytest.raises(AttributeError, match="CartPoleVectorEnv has no call"):
            remote.call("render")
        remote.reset(seed=3)
        assert isinstance(remote.np_random_seed, int)  # the vector env's own, not an AttributeError
        remote.call_async("render")
        with pytest.raises(AttributeError, match="CartPoleVectorEnv has no call"):
            remote.call_wait()
        remote.step(remote.action_space.sample())  # the session goes on
    finally:
        local.close()
        remote.close()


def test_openenv_cores_plain_sessions_refuse_calls_clearly():
    """Plain sessions of an openenv-core server take no batch_call: NotImplementedError saying why,
    and np_random_seed is still the vector env's own."""
    with openenv_core_servers(("cartpole",)) as theirs:
        envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=theirs["cartpole"], batched=False)
        try:
            envs.reset(seed=0)
            with pytest.raises(NotImplementedError, match="takes no batch_call"):
                envs.get_attr("gravity")
            assert isinstance(envs.np_random_seed, int)
            envs.reset(seed=1)  # the sessions go on
        finally:
            envs.close()
