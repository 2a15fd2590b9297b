"""Snapshots of a vector env's sub-envs, over real servers: restored all or some, across servers,
forked into a new vector env, under Gymnasium's autoreset; and a clear refusal where the
sub-envs live in a server-side vector env."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401 - registers openenv/...
from openenv_gym.env import RemoteEnv
from openenv_gym.errors import SnapshotError, SnapshotUnsupportedError
from openenv_gym.snapshot import snapshot

NUM_ENVS, STEPS = 4, 40


@pytest.fixture(scope="module")
def envs() -> Iterator[gym.vector.VectorEnv]:
    """CartPole, one env per sub-env: two servers of two sub-envs each."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=NUM_ENVS, vector_backend="per_env")
    assert len({block.url for block in envs._blocks}) == 2
    yield envs
    envs.close()


def actions(seed: int, count: int = STEPS, num_envs: int = NUM_ENVS) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 2, num_envs) for _ in range(count)]


def run(envs: gym.vector.VectorEnv, batch: list[np.ndarray]) -> list[tuple]:
    return [envs.step(action) for action in batch]


def assert_same(first: list[tuple], second: list[tuple]) -> None:
    for (obs_a, rew_a, term_a, trunc_a, _), (obs_b, rew_b, term_b, trunc_b, _) in zip(first, second, strict=True):
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a, term_b)
        np.testing.assert_array_equal(trunc_a, trunc_b)


def test_restoring_every_sub_env_replays_the_run_with_its_autoresets(envs):
    """Forty steps of random CartPole cross episode ends (NextStep resets on the servers): after a
    restore of all four sub-envs, the same actions give the same batches."""
    envs.reset(seed=0)
    run(envs, actions(1, 3))
    handles = envs.snapshot()
    assert len(handles) == NUM_ENVS and len({handle.server for handle in handles}) == 2
    batch = actions(2)
    uninterrupted = run(envs, batch)
    assert any(step[2].any() for step in uninterrupted)  # episodes ended, and were reset, on the way
    observations, infos = envs.restore(handles)
    assert observations.shape == (NUM_ENVS, 4) and infos == {}
    assert_same(run(envs, batch), uninterrupted)
    envs.release(*handles)
    with pytest.raises(SnapshotError, match="keeps no snapshot"):
        envs.restore(handles[:1])


def test_one_sub_env_restored_into_others_here_and_on_the_other_server(envs):
    """Sub-env 0's portable snapshot restored into sub-env 1 (its server) and 3 (the other: the
    servers this process starts share a key): the three then step alike; 2 is left as it was."""
    envs.reset(seed=5)
    run(envs, actions(6, 2))
    (handle,) = envs.snapshot([0], portable=True)
    before = envs.step(np.zeros(NUM_ENVS, dtype=np.int64))[0]
    observations, _ = envs.restore([handle, handle], [1, 3])
    np.testing.assert_array_equal(observations[2], before[2])  # untouched
    np.testing.assert_array_equal(observations[1], observations[3])
    same = np.ones(NUM_ENVS, dtype=np.int64)
    stepped = envs.step(same)[0]
    np.testing.assert_array_equal(stepped[1], stepped[3])
    envs.release(handle)


def test_an_ended_sub_env_restored_is_reset_by_its_next_step_under_next_step(envs):
    envs.reset(seed=1)
    while True:
        _, _, terminated, truncated, _ = envs.step(np.ones(NUM_ENVS, dtype=np.int64))  # always right: falls soon
        if terminated[0] or truncated[0]:
            break
    (ended,) = envs.snapshot([0])
    envs.step(np.ones(NUM_ENVS, dtype=np.int64))  # sub-env 0's autoreset
    envs.restore([ended], [0])
    _, rewards, terminated, truncated, _ = envs.step(np.ones(NUM_ENVS, dtype=np.int64))
    assert (rewards[0], terminated[0], truncated[0]) == (0.0, False, False)  # NextStep: this step was its reset
    envs.release(ended)


def test_a_sub_env_forked_into_a_new_vector_env_goes_on_as_it_would(envs):
    envs.reset(seed=9)
    run(envs, actions(10, 4))
    forked = envs.fork(2, 3)
    try:
        assert forked.num_envs == 3 and forked.autoreset_mode == envs.autoreset_mode
        batch = actions(11)
        original = [step[0][2] for step in run(envs, [np.full(NUM_ENVS, action[0]) for action in batch])]
        branches = run(forked, [np.full(3, action[0]) for action in batch])
        for observation, step in zip(original, branches, strict=True):
            for branch in range(3):
                np.testing.assert_array_equal(step[0][branch], observation)
    finally:
        forked.close()


def test_sub_env_and_single_env_snapshots_are_one_kind_on_one_server():
    """A plain session on a sub-env's server (a RemoteEnv) restores a sub-env's snapshot by id, and
    the sub-env restores the plain session's."""
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=NUM_ENVS, vector_backend="per_env", sessions_per_server=8)
    single = RemoteEnv(base_url=envs._blocks[0].url)  # room for it: up to 8 sessions a server
    try:
        envs.reset(seed=3)
        (taken,) = envs.snapshot([1])
        single.restore(taken)
        np.testing.assert_array_equal(single.step(0)[0], envs.step(np.zeros(NUM_ENVS, dtype=np.int64))[0][1])
        back = single.snapshot()
        envs.restore([back], [0])
        np.testing.assert_array_equal(envs.step(np.ones(NUM_ENVS, dtype=np.int64))[0][0], single.step(1)[0])
        envs.release(taken)
    finally:
        single.close()
        envs.close()


def test_a_snapshot_of_an_env_made_otherwise_is_refused_and_nothing_changes(envs):
    """gym.make's CartPole has its time limit on the client, make_vec's on the server: a state of
    the one would bring its own limit into the other, so it is refused, naming the difference."""
    single = gym.make("openenv/CartPole-v1")
    try:
        single.reset(seed=21)
        handle = snapshot(single, portable=True)
        envs.reset(seed=0)
        before = envs.step(np.zeros(NUM_ENVS, dtype=np.int64))[0]
        with pytest.raises(
            SnapshotError, match=r"the snapshot is of an env made as .*null.* this one as .*500"
        ) as refused:
            envs.restore([handle], [2])
        assert refused.value.code == "SNAPSHOT_REFUSED"
        envs.restore(envs.snapshot([0]), [1])  # the session goes on
        after = envs.step(np.zeros(NUM_ENVS, dtype=np.int64))[0]
        assert not np.array_equal(after[2], before[2])  # sub-env 2 stepped on from where it was
    finally:
        single.close()


def test_sub_envs_of_a_server_side_vector_env_are_refused_with_the_way_out():
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2)  # CartPoleVectorEnv on the server
    try:
        envs.reset(seed=0)
        with pytest.raises(SnapshotUnsupportedError, match="vector_backend='per_env'"):
            envs.snapshot()
    finally:
        envs.close()


def test_bad_indices_are_refused_before_anything_is_sent(envs):
    with pytest.raises(ValueError, match=r"within 0\.\.3"):
        envs.snapshot([4])
    with pytest.raises(ValueError, match="named twice"):
        envs.snapshot([1, 1])
    with pytest.raises(ValueError, match="one snapshot per sub-env"):
        envs.restore([], [0])


def test_under_same_step_a_sub_env_reset_in_its_step_is_kept_as_going_on():
    """SameStep resets an ended sub-env within the step: a snapshot then is of a running episode,
    which a plain session on the server steps on from (no EPISODE_ENDED)."""
    envs = gym.make_vec(
        "openenv/CartPole-v1", num_envs=2, vector_backend="per_env", autoreset_mode="SameStep", sessions_per_server=8
    )
    single = RemoteEnv(base_url=envs._blocks[0].url)
    try:
        envs.reset(seed=0)
        while not envs.step(np.ones(2, dtype=np.int64))[2][0]:
            pass
        (fresh,) = envs.snapshot([0])
        single.restore(fresh)
        _, reward, terminated, truncated, _ = single.step(1)
        assert (reward, terminated, truncated) == (1.0, False, False)
    finally:
        single.close()
        envs.close()


def test_a_snapshot_refused_on_one_server_keeps_nothing_on_the_other():
    """Sub-envs 0-1 on a server allowing two snapshots a session, 2-3 on one allowing one: a snapshot
    of all four is refused by the second, and the first releases the two it kept."""
    from openenv_gym.server.gym_environment import GymEnvironment
    from openenv_gym.vector import RemoteVectorEnv
    from tests.utils import running_server

    def cartpole() -> GymEnvironment:
        return GymEnvironment(gym.make("CartPole-v1"))

    with running_server(cartpole, max_snapshots=2) as first, running_server(cartpole, max_snapshots=1) as second:
        envs = RemoteVectorEnv(num_envs=NUM_ENVS, base_urls=[first.url, second.url], vector_backend="per_env")
        try:
            envs.reset(seed=0)
            with pytest.raises(SnapshotError, match="the most the server allows"):
                envs.snapshot()  # the first server keeps two, the second refuses its second
            assert (len(first.snapshots), len(second.snapshots)) == (0, 0)  # the first's two released
            assert len(envs.snapshot([0, 1, 2])) == 3
        finally:
            envs.close()
