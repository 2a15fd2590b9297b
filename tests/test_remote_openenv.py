"""openenv/Remote-v0: any OpenEnv-protocol server as a Gymnasium env, spaces mapped from its JSON schemas.

End to end on openenv-core's real server (FastAPI under uvicorn, ``tests/openenv_core_server.py``);
the mapping itself is tested in ``tests/spaces/test_schema.py``.
"""

from __future__ import annotations

import string
import warnings
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import ProcessProvider
from openenv_gym.spaces.schema import DEFAULT_TEXT_MAX_LENGTH
from tests.utils import openenv_core_servers

INF = np.inf
TEXT = spaces.Text(DEFAULT_TEXT_MAX_LENGTH, min_length=0, charset=string.printable)
FLOAT = spaces.Box(-INF, INF, shape=(), dtype=np.float64)
INT = spaces.Box(-INF, INF, shape=(), dtype=np.int64)


def test_remote_v0_needs_a_url():
    """Remote-v0 attaches to running servers: without base_url(s) it says so."""
    with pytest.raises(ValueError, match="RemoteEnv needs base_url="):
        gym.make("openenv/Remote-v0")
    with pytest.raises(ValueError, match=r"needs server= .* or base_urls="):
        gym.make_vec("openenv/Remote-v0", num_envs=2)
    with pytest.raises(ValueError, match="not both"):
        gym.make_vec("openenv/Remote-v0", num_envs=2, base_url="http://127.0.0.1:1", base_urls=["http://127.0.0.1:1"])


# End to end, on openenv-core's own server ---------------------------------------------------------

SERVERS = ("echo", "cartpole", "typed-cartpole", "grid")


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with openenv_core_servers(SERVERS) as started:
        yield started


@pytest.mark.slow
def test_echo_through_remote_v0(urls):
    """openenv-core's echo env: Dict spaces from its schema, dict actions, float rewards, done -> terminated."""
    env = gym.make("openenv/Remote-v0", base_url=urls["echo"])
    try:
        assert env.action_space == spaces.Dict(message=TEXT)
        assert env.observation_space == spaces.Dict(echoed_message=TEXT, message_length=INT)
        obs, info = env.reset(seed=1)
        assert obs == {"echoed_message": "", "message_length": 0} and info == {}
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = env.step({"message": "hi"})
        assert obs["echoed_message"] == "hi" and obs["message_length"] == 2
        assert type(reward) is float and reward == pytest.approx(0.2)
        assert (terminated, truncated, info) == (False, False, {})
        obs, reward, terminated, truncated, _ = env.step({"message": "bye"})
        assert (terminated, truncated) == (True, False)  # OpenEnv's done is Gymnasium's terminated
        assert env.unwrapped.state()["step_count"] == 2
    finally:
        env.close()


@pytest.mark.slow
def test_grid_quirks_null_rewards_and_warnings(urls):
    """$defs, enums, Optional, a bool, list of models, free-form dicts; reward null is 0.0 until the goal."""
    with pytest.warns(UserWarning, match="no Gymnasium space") as caught:
        env = gym.make("openenv/Remote-v0", base_url=urls["grid"])
    (warning,) = [w for w in caught if "openenv-gym" in str(w.message)]  # one warning naming them all
    assert "action.options: free-form object" in str(warning.message)
    assert "observation.debug: free-form object" in str(warning.message)
    try:
        position = spaces.Dict(x=spaces.Discrete(5), y=spaces.Discrete(5))
        assert env.action_space == spaces.Dict(direction=spaces.Discrete(4), sprint=spaces.Discrete(2), note=TEXT)
        assert env.observation_space == spaces.Dict(
            position=position,
            last_direction=spaces.Discrete(4),
            visited=spaces.Sequence(position),
            distance=spaces.Box(0.0, INF, shape=(), dtype=np.float64),
        )
        obs, _ = env.reset(seed=0)
        assert obs["position"] == {"x": 0, "y": 0} and obs["last_direction"] == 0  # null: the first member
        assert obs["distance"] == 8.0 and len(obs["visited"]) == 1
        # right = 3 by index, "down" by name; sprint as an index or a bool; note may be left out or None.
        path = [{"direction": 3, "sprint": 1}, {"direction": "right", "sprint": True, "note": None},
                {"direction": "down", "sprint": True, "note": "almost"}, {"direction": "down"}]  # fmt: skip
        rewards, ends = [], []
        for action in path:
            obs, reward, terminated, truncated, _ = env.step(action)
            assert env.observation_space.contains(obs)
            rewards.append(reward)
            ends.append((terminated, truncated))
        assert rewards == [0.0, 0.0, 0.0, 0.0] and ends[-1] == (False, False)
        obs, reward, terminated, truncated, _ = env.step({"direction": "down"})
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert obs["position"] == {"x": 4, "y": 4} and obs["last_direction"] == 1 and len(obs["visited"]) == 6
    finally:
        env.close()


@pytest.mark.slow
def test_untyped_cartpole_through_remote_v0(urls):
    """Fields without bounds or length map to unbounded Box and Sequence: usable, but no Discrete(2) or (4,)."""
    env = gym.make("openenv/Remote-v0", base_url=urls["cartpole"])
    try:
        assert env.action_space == INT  # "action: int": nothing says 0 or 1
        assert env.observation_space == spaces.Sequence(FLOAT)  # "list[float] = []": no fixed length
        obs, _ = env.reset(seed=0)
        expected, _ = gym.make("CartPole-v1").reset(seed=0)
        assert np.asarray(obs).tolist() == expected.astype(np.float64).tolist()
        obs, reward, terminated, truncated, _ = env.step({"action": 1})  # the wire form of the action
        assert len(obs) == 4 and (reward, terminated, truncated) == (1.0, False, False)
    finally:
        env.close()


@pytest.mark.slow
def test_check_env_passes(urls):
    """Gymnasium's checker passes on the typed CartPole, the grid and echo over openenv-core."""
    from gymnasium.utils.env_checker import check_env

    for name in ("typed-cartpole", "grid", "echo"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unmapped-field warning of the grid, tested above
            env = gym.make("openenv/Remote-v0", base_url=urls[name])
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                check_env(env.unwrapped, skip_render_check=True)
            # Unbounded floats in the schema (no minimum/maximum) are all the checker notes (its close
            # check makes a second env: the grid's unmapped-field warning comes again).
            notes = [str(w.message) for w in caught if not str(w.message).startswith("openenv-gym:")]
            assert all("infinity" in note for note in notes), notes
        finally:
            env.close()


@pytest.mark.slow
def test_make_vec_over_openenv_core(urls):
    """make_vec(num_envs=8) on one openenv-core server: plain sessions, autoreset, same as a local SyncVectorEnv."""
    url = urls["typed-cartpole"]
    envs = gym.make_vec("openenv/Remote-v0", num_envs=8, base_urls=[url])
    local = gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="sync")
    try:
        assert len(envs.placement) == 8  # no /ws/batch on an OpenEnv server: one /ws session per sub-env
        assert envs.single_action_space == spaces.Discrete(2)
        assert envs.observation_space == spaces.Box(-INF, INF, shape=(8, 4), dtype=np.float64)
        obs, _ = envs.reset(seed=0)
        expected, _ = local.reset(seed=0)
        assert obs.shape == (8, 4) and np.array_equal(obs, expected.astype(np.float64))
        envs.action_space.seed(0)
        ends = 0
        for _ in range(300):
            actions = envs.action_space.sample()
            obs, rewards, terminations, truncations, _ = envs.step(actions)
            expected, local_rewards, local_terminations, local_truncations, _ = local.step(actions)
            assert np.array_equal(obs, expected.astype(np.float64))
            assert np.array_equal(rewards, local_rewards) and np.array_equal(terminations, local_terminations)
            assert not truncations.any() and not local_truncations.any()  # no episode reaches 500 steps here
            ends += int(terminations.sum())
        assert ends > 50  # many episodes ended and were reset in place (NextStep)
    finally:
        envs.close()
        local.close()


@pytest.mark.slow
def test_make_vec_over_a_url_list_and_a_single_url(urls):
    """base_urls may list servers (repeated too); base_url= puts every sub-env on one server."""
    url = urls["typed-cartpole"]
    for kwargs in ({"base_urls": [url, url, url]}, {"base_url": url}):
        envs = gym.make_vec("openenv/Remote-v0", num_envs=8, **kwargs)
        try:
            obs, _ = envs.reset(seed=3)
            assert obs.shape == (8, 4)
            for _ in range(20):
                obs, rewards, _, _, _ = envs.step(envs.action_space.sample())
            assert obs.shape == (8, 4) and rewards.dtype == np.float64
        finally:
            envs.close()
    # Dict actions and observations through the vector env: the grid, two sub-envs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its unmapped-field warning, tested above
        envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=urls["grid"])
    try:
        obs, _ = envs.reset(seed=0)
        actions = {"direction": np.array([3, 1]), "sprint": np.array([1, 0]), "note": ("", "x")}
        obs, rewards, terminations, _, _ = envs.step(actions)
        assert obs["position"]["x"].tolist() == [2, 0] and obs["position"]["y"].tolist() == [0, 1]
        assert rewards.tolist() == [0.0, 0.0] and not terminations.any()
    finally:
        envs.close()


@pytest.mark.slow
def test_our_servers_keep_their_published_spaces():
    """Through Remote-v0, an openenv-gym server's exact published spaces and batch sessions are used."""
    from openenv_gym.envs.echo.environment import MAX_MESSAGE_LENGTH

    with ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as echo_url:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no mapping, so no warning
            env = gym.make("openenv/Remote-v0", base_url=echo_url)
        try:
            text = spaces.Text(MAX_MESSAGE_LENGTH, min_length=0, charset=string.printable)
            assert env.action_space == spaces.Dict(message=text)
            assert env.observation_space == spaces.Dict(
                echoed_message=text, message_length=spaces.Discrete(MAX_MESSAGE_LENGTH + 1)
            )
            env.reset()
            assert env.step({"message": "abc"})[0] == {"echoed_message": "abc", "message_length": 3}
        finally:
            env.close()
    with ProcessProvider("CartPole-v1") as cartpole_url:
        envs = gym.make_vec("openenv/Remote-v0", num_envs=4, base_url=cartpole_url)
        try:
            assert len(envs.placement) == 1  # one batch (or vector) session for the server's sub-envs
            assert envs.single_observation_space == gym.make("CartPole-v1").observation_space
            obs, _ = envs.reset(seed=0)
            assert obs.dtype == np.float32 and obs.shape == (4, 4)
            envs.step(np.array([0, 1, 0, 1]))
        finally:
            envs.close()


@pytest.mark.slow
def test_sub_envs_beyond_capacity_raise_and_an_unclosed_vector_env_leaves_no_socket(urls):
    """Five sub-envs on an echo server that takes four give CapacityReachedError; garbage collection closes every session."""
    import gc
    import weakref

    from openenv_gym import CapacityReachedError

    made = []

    def beyond_capacity() -> None:
        envs = gym.make_vec("openenv/Remote-v0", num_envs=5, base_url=urls["echo"])
        made.append(weakref.ref(envs))
        envs.reset(seed=0)  # never closed: the error leaves it to the garbage collector

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            beyond_capacity()
        except CapacityReachedError as exc:
            assert "4/4 sessions active" in str(exc)
        else:
            pytest.fail("no CapacityReachedError")
        gc.collect()
    assert made and made[0]() is None  # collected, so its sockets' fate was decided here
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
