"""load_factory: what `openenv-gym serve TARGET` accepts, and the errors for what it does not."""

from __future__ import annotations

import re

import pytest

from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.server import GymEnvironment, load_factory
from tests.testing_env import CounterEnvironment


def test_environment_class_is_served_as_is():
    """module:Class of an Environment subclass is the factory itself."""
    assert load_factory("openenv_gym.envs.echo:EchoEnvironment") is EchoEnvironment


def test_gymnasium_id():
    """A Gymnasium id becomes GymEnvironment sessions, with the spec's time limit unless told otherwise."""
    env = load_factory("CartPole-v1")()
    assert isinstance(env, GymEnvironment)
    assert env.env.spec.max_episode_steps == 500
    unlimited = load_factory("CartPole-v1", max_episode_steps=None)()
    assert unlimited.env.spec.max_episode_steps is None
    short = load_factory("CartPole-v1", max_episode_steps=7)()
    assert short.env.spec.max_episode_steps == 7


def test_module_prefixed_gymnasium_id():
    """Gymnasium's own "module:Id" form imports the module and serves the id."""
    env = load_factory("gymnasium.envs.classic_control:Acrobot-v1")()
    assert env.env.spec.id == "Acrobot-v1"


def test_factory_returning_a_gymnasium_env_is_adapted():
    """module:function returning a gymnasium.Env is wrapped in GymEnvironment, with its kwargs bound."""
    factory = load_factory("tests.testing_env:make_pendulum", env_kwargs={"g": 2.0})
    env = factory()
    assert isinstance(env, GymEnvironment)
    assert env.env.unwrapped.g == 2.0
    assert factory.SUPPORTS_CONCURRENT_SESSIONS is True


def test_environment_class_with_kwargs_keeps_its_concurrency_flag():
    """Binding kwargs to an Environment class keeps what it declares about concurrent sessions."""

    class Single(CounterEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = False

        def __init__(self, start: int = 0) -> None:
            super().__init__()
            self.count = start

    import tests.testing_env as module

    module.Single = Single
    try:
        factory = load_factory("tests.testing_env:Single", env_kwargs={"start": 5})
        assert factory.SUPPORTS_CONCURRENT_SESSIONS is False
        assert factory().count == 5
    finally:
        del module.Single


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("NoSuchEnv-v3", "'NoSuchEnv-v3' is neither 'module:attr' nor a registered Gymnasium id"),
        ("no_such_module:Env", "cannot import 'no_such_module' to serve 'no_such_module:Env'"),
        ("tests.testing_env:NOT_CALLABLE", "'tests.testing_env:NOT_CALLABLE' is not callable"),
    ],
)
def test_bad_targets(target, message):
    """Targets that cannot be served raise ValueError saying why."""
    with pytest.raises(ValueError, match=re.escape(message)):
        load_factory(target)


def test_a_module_that_lacks_the_name_says_what_it_has():
    """module:attr whose module imports but has no attr: the error says so and names what the module
    defines that serve takes, not "neither module:attr nor a Gymnasium id" (issue 52, 5)."""
    with pytest.raises(ValueError) as caught:
        load_factory("tests.testing_env:CounterEnv")
    message = str(caught.value)
    assert "module 'tests.testing_env' has no attribute 'CounterEnv'; it has: CounterEnvironment, " in message
    assert "make_pendulum" in message and "(the Environment subclasses and callables it defines)" in message
    # An id-like name keeps Gymnasium's hint about the ids there are.
    with pytest.raises(ValueError, match=r"has no attribute 'Acrobot-v9'.*versioned environments: \[ `v1` \]"):
        load_factory("gymnasium.envs.classic_control:Acrobot-v9")


def test_serve_exits_at_start_up_when_the_env_cannot_be_made():
    """`serve --env-kwargs '{"bogus": 1}'` makes one env before listening, and exits 1 with the reason."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0", "--env-kwargs", '{"bogus": 1}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    last_line = result.stderr.splitlines()[-1]
    assert last_line.startswith(
        "openenv-gym serve: cannot create the environment: "
        "TypeError: CartPoleEnv.__init__() got an unexpected keyword argument 'bogus'"
    )
    assert "listening" not in result.stdout


def test_metadata_names_what_the_server_serves():
    """/metadata carries the served target and a description that is prose, not a Markdown heading."""
    from openenv_gym.client import http_get_json
    from tests.utils import running_server

    factory = load_factory("CartPole-v1")
    with running_server(factory, target="CartPole-v1") as server:
        metadata = http_get_json(server.url, "/metadata")
    assert metadata["target"] == "CartPole-v1" and metadata["name"] == "CartPole-v1"
    assert metadata["description"].startswith("This environment corresponds to the version of the cart-pole problem")
