"""RemoteEnv through gym.make: Gymnasium's and SB3's checkers, trajectory equivalence, errors, close."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import InvalidActionError, RemoteEnv, RemoteError
from tests.equivalence import assert_same_trajectory, checker_warnings, gym_check, play, sb3_check
from tests.utils import own_server_pids, pid_alive, server_pids, wait_until


@pytest.mark.parametrize("checker", [gym_check, sb3_check], ids=["gymnasium", "sb3"])
@pytest.mark.parametrize(
    "gym_id", ["CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0", "Acrobot-v1", "MountainCar-v0"]
)
def test_checkers_pass_with_no_warning_beyond_the_local_env(checker, gym_id):
    """Gymnasium's and SB3's env checkers pass on remote twins, warning about nothing the local env does not."""
    remote = gym.make(f"openenv/{gym_id}")
    try:
        remote_warnings = checker_warnings(checker, remote.unwrapped)
    finally:
        remote.close()
    local_warnings = checker_warnings(checker, gym.make(gym_id).unwrapped)
    assert remote_warnings <= local_warnings


def test_gymnasium_check_env_on_echo():
    """Gymnasium's env checker passes on the Echo env (Dict of Text spaces) without a single warning."""
    env = gym.make("openenv/Echo-v0")
    try:
        assert checker_warnings(gym_check, env.unwrapped) == set()
    finally:
        env.close()


@pytest.mark.parametrize(
    ("gym_id", "kwargs", "steps"),
    [
        ("CartPole-v1", {}, 600),  # many terminations
        ("CartPole-v1", {"max_episode_steps": 15}, 100),  # truncations from the client's TimeLimit
        ("Pendulum-v1", {}, 450),  # truncated at the registered 200 steps
        ("MountainCar-v0", {"max_episode_steps": 40}, 130),
    ],
)
def test_same_trajectory_as_local(gym_id, kwargs, steps):
    """Same seeds and actions give the same observations, rewards and flags as the local env, exactly."""
    local = gym.make(gym_id, **kwargs)
    remote = gym.make(f"openenv/{gym_id}", **kwargs)
    try:
        expected = play(local, seed=42, steps=steps, action_seed=7)
        actual = play(remote, seed=42, steps=steps, action_seed=7)
    finally:
        remote.close()
        local.close()
    assert assert_same_trajectory(actual, expected) >= 2, "the trajectory should cross several episode ends"


def test_types_returned():
    """Rewards are Python float, flags Python bool, info a dict; spaces come from the server."""
    env = gym.make("openenv/CartPole-v1")
    try:
        assert env.observation_space == gym.make("CartPole-v1").observation_space
        assert env.action_space == gym.spaces.Discrete(2)
        obs, info = env.reset(seed=1)
        assert isinstance(info, dict) and obs.dtype == np.float32
        _, reward, terminated, truncated, info = env.step(1)
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    finally:
        env.close()


def test_registered_time_limits():
    """The catalog registers each remote twin with the local env's max_episode_steps."""
    for gym_id, limit in [
        ("CartPole-v1", 500),
        ("MountainCar-v0", 200),
        ("Acrobot-v1", 500),
        ("Pendulum-v1", 200),
        ("MountainCarContinuous-v0", 999),
    ]:
        assert gym.spec(f"openenv/{gym_id}").max_episode_steps == limit
    assert gym.spec("openenv/Echo-v0").max_episode_steps is None


def test_echo_env_roundtrip():
    """Echo returns the message, its length, and 0.1 reward per character."""
    env = gym.make("openenv/Echo-v0")
    try:
        obs, _ = env.reset()
        assert obs == {"echoed_message": "", "message_length": 0}
        obs, reward, terminated, truncated, _ = env.step({"message": "hello"})
        assert obs == {"echoed_message": "hello", "message_length": 5}
        assert reward == pytest.approx(0.5)
        assert not terminated and not truncated
        assert env.unwrapped.state()["step_count"] == 1
    finally:
        env.close()


@pytest.mark.parametrize(
    "action, reason",
    [
        (5, "expected an integer in [0, 2)"),
        (1.7, "expected an integer, got float"),
        ("left", "expected an integer, got str"),
        (None, "expected an integer, got NoneType"),
        (True, "expected an integer, got bool"),
        (np.array([1, 0]), "expected an integer in [0, 2)"),
    ],
)
def test_action_outside_space_is_refused_before_sending_and_the_env_lives_on(action, reason):
    """An action outside Discrete(2) raises InvalidActionError naming space, value and env; nothing is sent."""
    env = gym.make("openenv/CartPole-v1", disable_env_checker=True)
    try:
        env.reset(seed=0)
        expected = f"is not in the action space Discrete(2) of openenv/CartPole-v1: {reason}"
        with pytest.raises(InvalidActionError, match=re.escape(expected)) as caught:
            env.step(action)
        assert caught.value.action is action and caught.value.env_id == "openenv/CartPole-v1"
        assert isinstance(caught.value, ValueError)
        assert env.unwrapped.state()["step_count"] == 0  # the server never saw it
        env.step(np.int64(1))
        assert env.unwrapped.state()["step_count"] == 1
    finally:
        env.close()


def test_box_actions_are_checked_for_shape_type_and_bounds():
    """Pendulum refuses a wrong shape, a string and a torque beyond its bounds; lists and ints are fine."""
    env = gym.make("openenv/Pendulum-v1", disable_env_checker=True)
    try:
        env.reset(seed=0)
        for action, reason in [
            ([0.5, 0.5], "expected shape (1,), got shape (2,)"),
            ("0.5", "got str"),
            ([3.0], "outside the bounds"),
        ]:
            with pytest.raises(InvalidActionError, match=re.escape(reason)):
                env.step(action)
        env.step([1])
        env.step(np.array([-2.0], dtype=np.float64))
    finally:
        env.close()


def test_echo_refuses_a_bare_string_and_says_how_to_give_a_dict_action():
    """Echo's Dict action given as a plain string is refused with the dict form to use."""
    env = gym.make("openenv/Echo-v0")
    try:
        env.reset()
        with pytest.raises(
            InvalidActionError, match=re.escape("a Dict action is a dict of its fields, {'message': ...}; got str")
        ):
            env.step("hello")
        with pytest.raises(InvalidActionError, match=re.escape("missing ['message'], unexpected ['msg']")):
            env.step({"msg": "hello"})
    finally:
        env.close()


def test_server_still_validates_what_the_client_lets_through():
    """A value given in the server's own action model goes out as is, and the server's refusal comes back."""
    env = gym.make("openenv/CartPole-v1", disable_env_checker=True)
    try:
        env.reset(seed=0)
        with pytest.raises(RemoteError, match=re.escape("is outside the action space Discrete(2)")) as caught:
            env.unwrapped._client.step({"action": 5})
        assert caught.value.code == "VALIDATION_ERROR"
        env.step({"action": 1})  # the wire form of an action is checked like the action itself
        for action in ({"action": 7}, {}, {"metadata": {}}, {"action": 1.7, "metadata": {}}):
            with pytest.raises(InvalidActionError):
                env.step(action)
    finally:
        env.close()


def test_close_is_idempotent_and_stops_the_server():
    """close() twice is fine, and the server process is gone afterwards."""
    env = gym.make("openenv/CartPole-v1")
    pid = env.unwrapped.provider.pid
    assert pid_alive(pid)
    env.close()
    env.close()
    assert wait_until(lambda: not pid_alive(pid), 5)


def test_base_url_attaches_to_a_running_server():
    """gym.make(..., base_url=) drives a server someone else started, and leaves it running on close."""
    from openenv_gym.providers import ProcessProvider

    with ProcessProvider("CartPole-v1", max_episode_steps=None) as url:
        env = gym.make("openenv/CartPole-v1", base_url=url.replace("http", "ws"))
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs, gym.make("CartPole-v1").reset(seed=0)[0])
        env.close()
        with openenv_gym.EnvClient(url) as client:  # still serving
            assert client.reset(seed=0).observation["observation"] == obs.tolist()


@pytest.mark.parametrize("call", ["reset", "step", "state", "render"])
def test_every_call_after_close_raises_a_clear_error(call):
    """reset/step/state/render after close() raise ClosedEnvError (Gymnasium's ClosedEnvironmentError); nothing restarts."""
    env = gym.make("openenv/CartPole-v1")
    env.reset(seed=0)
    pid = env.unwrapped.provider.pid
    env.close()
    before = own_server_pids()
    args = {"step": (0,)}.get(call, ())
    with pytest.raises(openenv_gym.ClosedEnvError, match=re.escape(f"{call}() on RemoteEnv(CartPole-v1, ")) as caught:
        getattr(env.unwrapped, call)(*args)
    assert isinstance(caught.value, gym.error.ClosedEnvironmentError)
    assert own_server_pids() <= before and not pid_alive(pid)
    env.close()  # still idempotent


def test_keyword_arguments_beyond_ours_go_to_the_env():
    """gym.make(id, sutton_barto_reward=True) reaches CartPole on the server, as with a local gym.make."""
    remote = gym.make("openenv/CartPole-v1", sutton_barto_reward=True)
    local = gym.make("CartPole-v1", sutton_barto_reward=True)
    try:
        remote.reset(seed=0)
        local.reset(seed=0)
        rewards = [remote.step(0)[1] for _ in range(3)]
        assert rewards == [local.step(0)[1] for _ in range(3)] == [0.0, 0.0, 0.0]
    finally:
        remote.close()


def test_a_keyword_argument_given_twice_is_refused():
    """A loose env argument that env_kwargs also sets is an error naming it, before a server starts."""
    with pytest.raises(
        ValueError, match=re.escape("'sutton_barto_reward' is given twice: as a keyword argument and in env_kwargs")
    ):
        gym.make("openenv/CartPole-v1", sutton_barto_reward=True, env_kwargs={"sutton_barto_reward": False})


def test_keyword_arguments_cannot_reach_an_env_on_a_running_server():
    """With base_url, an argument that is not ours says the running server makes its env itself."""
    from openenv_gym.providers import ProcessProvider

    with ProcessProvider("CartPole-v1") as url:
        with pytest.raises(
            TypeError,
            match=re.escape(
                "unexpected keyword arguments ['sutton_barto_reward']: a running server (base_url=) makes its env itself"
            ),
        ):
            gym.make("openenv/CartPole-v1", base_url=url, sutton_barto_reward=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bogus": 1}, "TypeError: CartPoleEnv.__init__() got an unexpected keyword argument 'bogus'"),
        ({"env_kwargs": {"bogus": 1}}, "TypeError: CartPoleEnv.__init__() got an unexpected keyword argument 'bogus'"),
    ],
)
def test_an_env_that_cannot_be_made_is_an_env_creation_error(kwargs, message):
    """Bad env kwargs give EnvCreationError with the server's reason, not a connection failure; no server is left."""
    before = server_pids()
    with pytest.raises(
        openenv_gym.EnvCreationError, match=re.escape(f"the server could not create CartPole-v1: {message}")
    ) as caught:
        gym.make("openenv/CartPole-v1", **kwargs)
    assert caught.value.code == "FACTORY_ERROR"
    assert not isinstance(caught.value, ConnectionError)
    assert wait_until(lambda: server_pids() <= before, 5)


def test_a_running_server_whose_env_cannot_be_made_says_so_on_schema():
    """A server that cannot make its env answers /schema with FACTORY_ERROR, which the client raises as EnvCreationError."""
    from tests.utils import running_server

    def broken():
        raise FileNotFoundError("no tasks file at /nowhere.jsonl")

    with running_server(broken) as server:
        with pytest.raises(
            openenv_gym.EnvCreationError, match=re.escape("FileNotFoundError: no tasks file at /nowhere.jsonl")
        ):
            RemoteEnv(base_url=server.url)


def test_a_catalog_id_on_a_server_of_another_env_is_refused():
    """gym.make('openenv/Pendulum-v1', base_url=<a CartPole server>) raises EnvMismatchError; Remote-v0 attaches."""
    from openenv_gym.providers import ProcessProvider

    with ProcessProvider("CartPole-v1") as url:
        with pytest.raises(
            openenv_gym.EnvMismatchError,
            match=re.escape(f"the server at {url} serves 'CartPole-v1', not 'Pendulum-v1'"),
        ):
            gym.make("openenv/Pendulum-v1", base_url=url)
        with pytest.raises(openenv_gym.EnvMismatchError):
            gym.make_vec("openenv/Pendulum-v1", num_envs=2, base_urls=[url])
        env = gym.make("openenv/Remote-v0", base_url=url)
        assert env.action_space == gym.spaces.Discrete(2)
        env.close()
        gym.make("openenv/CartPole-v1", base_url=url).close()


def test_pickling_an_env_says_how_to_make_it_in_a_worker():
    """pickle and deepcopy of a remote env raise a TypeError that says to pass a function making the env."""
    import copy
    import pickle

    env = gym.make("openenv/CartPole-v1")
    try:
        for attempt in (pickle.dumps, copy.deepcopy):
            with pytest.raises(
                TypeError, match=re.escape("holds a live session with its server and cannot be pickled or copied")
            ):
                attempt(env)
        env.reset(seed=0)  # still usable
    finally:
        env.close()


def test_build_provider_is_deprecated_for_make_options_and_still_sorts_the_arguments():
    """``build_provider`` (positional, as it was called) warns and gives what ``MakeOptions.parse`` gives."""
    from openenv_gym.env import build_provider

    with pytest.warns(DeprecationWarning, match=re.escape("MakeOptions.parse(...).providers()[0]")):
        provider = build_provider(
            "CartPole-v1", None, "process", None, None, {"sutton_barto_reward": True}, None, 5.0, 9.0
        )
    assert isinstance(provider, openenv_gym.providers.ProcessProvider)
    assert (provider.target, provider.env_kwargs, provider.startup_timeout) == (
        "CartPole-v1",
        {"sutton_barto_reward": True},
        9.0,
    )


@pytest.mark.parametrize("transport", ["ws", "shm"])
def test_a_single_env_whose_server_died_says_so_and_to_make_a_new_one(transport):
    """A single env does not restart its server (the vector env and the pool do): once the server
    process is gone, step and reset say that it died and that a new env is the way on."""
    import os
    import signal

    from openenv_gym.errors import ClientError

    env = gym.make("openenv/CartPole-v1", transport=transport)
    try:
        env.reset(seed=0)
        provider = env.unwrapped.provider
        os.kill(provider.pid, signal.SIGKILL)
        assert wait_until(lambda: not provider.is_alive(), timeout=10)
        for call in (lambda: env.step(0), lambda: env.reset(seed=1), lambda: env.reset(seed=2)):
            with pytest.raises(ClientError) as lost:
                call()
            assert isinstance(lost.value, ConnectionError)
            assert "the server process died" in str(lost.value) and "make a new env" in str(lost.value)
    finally:
        env.close()
