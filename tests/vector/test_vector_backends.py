"""Server-side vector envs behind make_vec: Gymnasium's vector_entry_point, ALE's AtariVectorEnv, EnvPool, openenv-gym's own."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym.client import VectorClient
from openenv_gym.errors import InvalidActionError, RemoteError
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.providers import ProcessProvider
from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY
from tests.equivalence import assert_same


def assert_same_infos(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, dict):
            assert_same_infos(actual[key], value)
        else:
            np.testing.assert_array_equal(actual[key], value)
            assert actual[key].dtype == value.dtype, key


def assert_same_step(actual: tuple, expected: tuple, step: int) -> None:
    for name, got, want in zip(("observations", "rewards", "terminations", "truncations"), actual[:4], expected[:4]):
        assert got.dtype == want.dtype and got.shape == want.shape, (step, name)
        np.testing.assert_array_equal(got, want, err_msg=f"step {step}: {name}")
    assert_same_infos(actual[4], expected[4])


@pytest.mark.parametrize(("codec", "transport"), [("binary", "shm"), ("binary", "ws"), ("json", "ws")])
def test_one_server_equals_gymnasium_make_vec(codec, transport):
    """With one server, auto picks CartPoleVectorEnv and 2,000 steps equal gymnasium.make_vec's, ends and all."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=16, servers=1, codec=codec, transport=transport)
    local = gym.make_vec("CartPole-v1", num_envs=16)
    try:
        assert remote.metadata["vector_backend"] == "gymnasium"
        assert remote.metadata["transport"] == transport
        assert "CartPoleVectorEnv" in remote.metadata["vector_backend_reason"]
        assert remote.single_observation_space == local.single_observation_space
        assert remote.single_action_space == local.single_action_space
        obs, _ = remote.reset(seed=7)
        expected = local.reset(seed=7)
        np.testing.assert_array_equal(obs, expected[0])
        assert obs.flags.writeable
        actions = np.random.default_rng(0).integers(0, 2, (2000, 16))
        ends = 0
        for step, action in enumerate(actions):
            result = remote.step(action)
            assert_same_step(result, local.step(action), step)
            ends += int(result[2].sum() + result[3].sum())
        assert ends > 500  # random CartPole episodes last ~20 steps: many autoresets were compared
    finally:
        remote.close()
        local.close()


def test_each_block_equals_a_vector_env_of_its_size():
    """Over 3 servers, block k (sub-envs start..stop) is gymnasium.make_vec(stop - start) seeded seed + start."""
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=10, servers=3, max_episode_steps=50)
    try:
        blocks = [(block.start, block.stop) for block in remote.unwrapped._blocks]
        assert len(blocks) == 3
        local = [gym.make_vec("CartPole-v1", stop - start, max_episode_steps=50) for start, stop in blocks]
        obs, _ = remote.reset(seed=100)
        expected = np.concatenate([env.reset(seed=100 + start)[0] for env, (start, _) in zip(local, blocks)])
        np.testing.assert_array_equal(obs, expected)
        truncations = 0
        for action in np.random.default_rng(1).integers(0, 2, (600, 10)):
            result = remote.step(action)
            parts = [env.step(action[start:stop]) for env, (start, stop) in zip(local, blocks)]
            for index in range(4):
                np.testing.assert_array_equal(result[index], np.concatenate([part[index] for part in parts]))
            truncations += int(result[3].sum())
        assert result[4] == {}  # CartPoleVectorEnv gives no infos; none were made up
        for env in local:
            env.close()
    finally:
        remote.close()


@pytest.mark.parametrize(("servers", "transport"), [(1, "shm"), (1, "ws"), (2, "shm")])
def test_same_step_is_served_by_openenv_gyms_own_vector_env(servers, transport):
    """SameStep (what SB3 needs) is not CartPoleVectorEnv's mode: auto takes openenv-gym's own, says why, and
    2,000 steps equal SyncVectorEnv of CartPole-v1 in SameStep (final_obs and all), on one server or split."""
    remote = gym.make_vec(
        "openenv/CartPole-v1",
        num_envs=6,
        servers=servers,
        autoreset_mode="SameStep",
        max_episode_steps=40,
        transport=transport,
    )
    local = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=40)] * 6, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    try:
        assert remote.metadata["vector_backend"] == "openenv_gym"
        assert remote.metadata["transport"] == transport
        reason = remote.metadata["vector_backend_reason"]
        assert "not SameStep" in reason and "openenv_gym.envs.cartpole_vector:CartPoleVectorEnv" in reason
        assert len(remote.unwrapped._blocks) == servers
        assert_same(remote.reset(seed=21), local.reset(seed=21), "reset")
        rng, terminations, truncations = np.random.default_rng(4), 0, 0
        for step in range(2000):
            actions = rng.integers(0, 2, 6)
            result = remote.step(actions)
            assert_same(result, local.step(actions), f"step {step}")
            terminations += int(result[2].sum())
            truncations += int(result[3].sum())
        assert terminations > 200 and truncations > 10  # each kind of end, with its final_obs, compared
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"vector_backend": "gymnasium", "autoreset_mode": "SameStep"},
            "serves autoreset modes ['NextStep'], not SameStep",
        ),
        ({"vector_backend": "ale"}, "CartPole-v1 is not an ALE game"),
        ({"vector_backend": "fast"}, "vector_backend must be one of"),
        ({"vector_backend": "gymnasium", "batched": False}, "runs on batch sessions"),
    ],
)
def test_a_forced_backend_that_cannot_serve_fails_clearly(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        gym.make_vec("openenv/CartPole-v1", num_envs=2, **kwargs)


def test_per_env_is_exactly_sync_vector_env_semantics():
    """vector_backend='per_env' keeps one env per sub-env, each seeded seed + i, as SyncVectorEnv."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3, vector_backend="per_env")
    try:
        obs, _ = envs.reset(seed=5)
        expected, _ = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3).reset(seed=5)
        np.testing.assert_array_equal(obs, expected)
        assert envs.metadata["vector_backend"] == "per_env"
    finally:
        envs.close()


def test_seeds_a_vector_env_cannot_take_are_refused_by_it():
    """CartPoleVectorEnv takes one seed: a list is refused with Gymnasium's own message, as in-process."""
    local = gym.make_vec("CartPole-v1", 3, vectorization_mode="vector_entry_point")
    with pytest.raises(gym.error.Error, match="Seed must be a python integer"):
        local.reset(seed=[3, 9, 1])
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3, servers=1)
    try:
        # A sub-env's error reaches the caller as a RemoteError naming it (as its own type: pending_errors.py).
        with pytest.raises((RemoteError, gym.error.Error), match="Seed must be a python integer"):
            envs.reset(seed=[3, 9, 1])
        obs, _ = envs.reset(seed=[4, 5, 6])  # [s, s+1, ...] is reset(seed=s)
        np.testing.assert_array_equal(obs, gym.make_vec("CartPole-v1", 3).reset(seed=4)[0])
    finally:
        envs.close()


def test_bad_actions_are_refused_before_sending_and_by_the_server():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=1)
    provider = ProcessProvider(target="CartPole-v1", max_episode_steps=500)
    try:
        envs.reset(seed=0)
        with pytest.raises(InvalidActionError):
            envs.step(np.array([0, 1, 2, 0]))
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4  # still usable
        # A client that sends anyway gets a VALIDATION_ERROR, and the session lives on.
        client = VectorClient(provider.start(), 4, WireAutoresetMode.NEXT_STEP, "gymnasium", codec="binary")
        client.reset_vector(seed=0)
        for bad in (np.array([0, 1, 5, 0]), np.zeros(3, dtype=np.int64), np.zeros((4, 2), dtype=np.float32)):
            with pytest.raises(RemoteError) as exc_info:
                client.step_vector(bad)
            assert exc_info.value.code == "VALIDATION_ERROR"
        assert client.step_vector(np.ones(4, dtype=np.int64)).rewards.tolist() == [1.0] * 4
        client.close()
    finally:
        envs.close()
        provider.stop()


def test_a_dead_server_truncates_its_block_and_the_env_goes_on():
    """Kill one of two servers mid-run: its block comes back truncated with the reason, then steps again."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=2)
    try:
        envs.reset(seed=0)
        envs.step(np.zeros(4, dtype=np.int64))
        os.kill(envs.unwrapped._providers[1].pid, signal.SIGKILL)
        _, rewards, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations.tolist() == [False, False, True, True]
        assert infos[f"_{FAILURE_INFO_KEY}"].tolist() == [False, False, True, True]
        assert "ConnectionLostError" in infos[FAILURE_INFO_KEY][2]
        _, rewards, _, _, _ = envs.step(np.zeros(4, dtype=np.int64))  # NextStep: the lost block resets
        assert rewards.tolist()[2:] == [0.0, 0.0]
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
    finally:
        envs.close()


@pytest.mark.filterwarnings("ignore:.*precision lowered by casting:UserWarning")  # EnvPool's own spaces
@pytest.mark.parametrize("transport", ["shm", "ws"])
def test_envpool_backend_equals_envpool_in_process(transport):
    """vector_backend='envpool' serves envpool.make_gymnasium; reset(seed=s) makes the pool with seed s."""
    envpool = pytest.importorskip("envpool")  # installed by the test command (the bench extra)
    remote = gym.make_vec("openenv/CartPole-v1", num_envs=8, servers=1, vector_backend="envpool", transport=transport)
    local = envpool.make_gymnasium("CartPole-v1", num_envs=8, seed=3, max_episode_steps=500)
    try:
        assert remote.metadata["vector_backend"] == "envpool"
        obs, _ = remote.reset(seed=3)
        np.testing.assert_array_equal(obs, local.reset()[0])
        for step, action in enumerate(np.random.default_rng(2).integers(0, 2, (300, 8))):
            result = remote.step(action)
            expected = local.step(action)
            for index in range(4):
                np.testing.assert_array_equal(result[index], expected[index], err_msg=f"step {step}")
            assert_same_infos(result[4], expected[4])
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize(
    ("transport", "autoreset_mode"), [("shm", "NextStep"), ("shm", "SameStep"), ("ws", "NextStep")]
)
def test_atari_equals_ale_vector_env(transport, autoreset_mode):
    """openenv/ALE-Pong-v5 through make_vec is ALE's AtariVectorEnv: frames and infos equal, seeded alike."""
    from ale_py.vector_env import AtariVectorEnv

    remote = gym.make_vec(
        "openenv/ALE-Pong-v5", num_envs=2, servers=1, transport=transport, autoreset_mode=autoreset_mode
    )
    local = AtariVectorEnv(
        "pong",
        num_envs=2,
        repeat_action_probability=0.25,
        max_num_frames_per_episode=108000,
        autoreset_mode=gym.vector.AutoresetMode(autoreset_mode),
    )
    try:
        assert remote.metadata["vector_backend"] == "gymnasium"
        assert remote.metadata["transport"] == transport
        assert "AtariVectorEnv" in remote.metadata["vector_backend_reason"]
        assert remote.single_observation_space == local.single_observation_space  # 4 stacked 84x84 gray frames
        obs, infos = remote.reset(seed=11)
        expected = local.reset(seed=11)
        np.testing.assert_array_equal(obs, expected[0])
        assert_same_infos(infos, expected[1])
        for step, action in enumerate(np.random.default_rng(3).integers(0, 6, (200, 2))):
            assert_same_step(remote.step(action), local.step(action), step)
    finally:
        remote.close()
        local.close()


def test_a_dead_server_under_same_step_resets_its_block_at_once():
    """SameStep (AtariVectorEnv serves it): the lost block is reset in the same step, its last frames final."""
    envs = gym.make_vec("openenv/ALE-Pong-v5", num_envs=2, servers=2, autoreset_mode="SameStep")
    try:
        assert envs.metadata["vector_backend"] == "gymnasium"
        envs.reset(seed=0)
        before, *_ = envs.step(np.zeros(2, dtype=np.int64))
        os.kill(envs.unwrapped._providers[1].pid, signal.SIGKILL)
        obs, _, _, truncations, infos = envs.step(np.zeros(2, dtype=np.int64))
        assert truncations.tolist() == [False, True]
        assert infos["_final_obs"].tolist() == [False, True]
        np.testing.assert_array_equal(infos["final_obs"][1], before[1])
        assert "ConnectionLostError" in infos["final_info"][1][FAILURE_INFO_KEY]
        assert obs.shape == (2, 4, 84, 84)
        assert envs.step(np.zeros(2, dtype=np.int64))[3].tolist() == [False, False]
    finally:
        envs.close()


def test_atari_single_env_serves_frames():
    env = gym.make("openenv/ALE-Pong-v5")
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (210, 160, 3) and obs.dtype == np.uint8
        np.testing.assert_array_equal(obs, gym.make("ALE/Pong-v5").reset(seed=0)[0])
    finally:
        env.close()


def test_each_vector_env_publishes_its_render_modes():
    """/schema's vector_backends carry the vector env's own render modes; ALE's AtariVectorEnv renders none."""
    import ale_py

    from openenv_gym.server.vector_backends import VectorBackends

    gym.register_envs(ale_py)
    cartpole = VectorBackends("CartPole-v1", -1, {}).describe_one("gymnasium")
    assert (cartpole["render_modes"], cartpole["render_fps"]) == (["rgb_array"], 50)
    pong = VectorBackends("ALE/Pong-v5", -1, {})
    assert pong.describe_one("ale")["render_modes"] == []
    with pytest.raises(ValueError, match="AtariVectorEnv renders nothing"):
        pong.make("ale", 1, WireAutoresetMode.NEXT_STEP, render_mode="rgb_array")
