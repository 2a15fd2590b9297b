"""The server's side of snapshots: the probe that decides whether an env snapshots, the limits per
session, and every snapshot freed with its session, over a real ``EnvServer`` and raw frames."""

from __future__ import annotations

import gc
import itertools
import json
import os
import threading
import time
import tracemalloc

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.client import connect

from openenv_gym.env import RemoteEnv
from openenv_gym.errors import SnapshotError, SnapshotRefusedError, SnapshotUnsupportedError
from openenv_gym.server.gym_environment import GymEnvironment
from tests.utils import UNIT, running_server, wait_until


class HiddenCounterEnv(gym.Env):
    """Its observations come from a counter outside the env: a copy of the env cannot replay them."""

    counter = itertools.count()
    observation_space = gym.spaces.Discrete(1_000_000)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return next(HiddenCounterEnv.counter), 0.0, False, False, {}


class LockedEnv(HiddenCounterEnv):
    """Holds a lock, which pickle refuses."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def step(self, action):
        return 0, 0.0, False, False, {}


class GrowingSpaceEnv(HiddenCounterEnv):
    """Widens its observation space in place as it steps: a state, which refers to the space as made, cannot follow."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Discrete(10)

    def step(self, action):
        self.observation_space.n += 1
        return 0, 0.0, False, False, {}


class ReplacingSpaceEnv(HiddenCounterEnv):
    """Makes a new action space (alike, its own generator) at every reset."""

    def __init__(self) -> None:
        self.action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        self.action_space = gym.spaces.Discrete(3, seed=seed)
        return super().reset(seed=seed)

    def step(self, action):
        return 0, 0.0, False, False, {}


def cartpole() -> GymEnvironment:
    return GymEnvironment(gym.make("CartPole-v1"))


def call(ws, frame: dict) -> dict:
    ws.send(json.dumps(frame))
    return json.loads(ws.recv(timeout=10 * UNIT))


def ws_url(server) -> str:
    return server.url.replace("http", "ws") + "/ws"


@pytest.mark.parametrize(
    ("env_type", "reason"),
    [
        (HiddenCounterEnv, "does not replay the same steps"),
        (LockedEnv, "cannot pickle '_thread.lock'"),
        (GrowingSpaceEnv, "changed its spaces in place"),
    ],
)
def test_an_env_whose_copy_is_not_exact_is_refused_with_the_probes_reason(env_type, reason):
    with running_server(lambda: GymEnvironment(env_type())) as server:
        with connect(ws_url(server)) as ws:
            call(ws, {"type": "reset", "data": {}})
            refused = call(ws, {"type": "snapshot", "data": {}})
        assert refused["type"] == "error" and refused["data"]["code"] == "SNAPSHOT_UNSUPPORTED"
        assert reason in refused["data"]["message"]
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset()
            with pytest.raises(SnapshotUnsupportedError, match=reason):
                env.snapshot()
        finally:
            env.close()


class SlowStepEnv(HiddenCounterEnv):
    """Each step takes 0.5 s, so the probe's first three alone outlast a 0.3 s probe timeout, however
    late a busy machine wakes the wait (its lock cannot be pickled: a probe that got that far would
    end with that reason); records its close."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def step(self, action):
        time.sleep(0.5)
        return 0, 0.0, False, False, {}

    def close(self):
        self.closed.set()


def test_a_probe_slower_than_its_timeout_refuses_and_the_env_is_closed_once_it_ends(monkeypatch):
    """A slow (or hung) step cannot hold up the server's start: the probe gives up, and close()
    leaves the env to the probe's thread, which closes it when its step returns."""
    monkeypatch.setattr("openenv_gym.server.gym_snapshots.PROBE_TIMEOUT", 0.3)
    inner = SlowStepEnv()
    environment = GymEnvironment(inner)
    support = environment.snapshot_support()
    assert support["supported"] is False and "longer than 0.3 s" in support["reason"]
    environment.close()
    assert not inner.closed.is_set()  # the probe still steps it
    assert inner.closed.wait(10 * UNIT)


def test_a_session_holds_at_most_its_count_and_bytes_of_snapshots():
    with running_server(cartpole, max_snapshots=3) as server:
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=0)
            handles = [env.snapshot() for _ in range(3)]
            with pytest.raises(SnapshotError, match="holds 3 snapshots, the most the server allows") as raised:
                env.snapshot()
            assert raised.value.code == "SNAPSHOT_LIMIT"
            env.release(handles[0])
            env.snapshot()  # room again
            env.restore(handles[1])  # the refused one changed nothing
        finally:
            env.close()
    with running_server(cartpole, max_snapshot_bytes=5000) as server:
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=0)
            first = env.snapshot()
            assert 0 < first.size <= 5000
            with pytest.raises(SnapshotError, match="over the server's 5000"):
                while True:
                    env.snapshot()
        finally:
            env.close()


class ImageEnv(gym.Env):
    """A small state and a large observation: a fresh random image each step (its frame, JSON, is
    about 70 KiB; the state, a generator and a count, under 1 KiB)."""

    observation_space = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.np_random.integers(0, 256, (64, 64, 3), dtype=np.uint8), 0.0, False, False, {}


def test_snapshots_count_their_observation_against_a_bound_for_the_whole_server():
    """Two sessions snapshot an env whose observation dwarfs its state, each step's kept: together
    they stop at the server's bound, although each is far from its own, and what the server grew
    by is what it counted."""
    bound = 4 * 2**20
    with running_server(lambda: GymEnvironment(ImageEnv()), max_server_snapshot_bytes=bound) as server:
        with connect(ws_url(server), max_size=None) as first, connect(ws_url(server), max_size=None) as second:
            for ws in (first, second):
                call(ws, {"type": "reset", "data": {"seed": 0}})
                call(ws, {"type": "snapshot", "data": {}})  # the probe and the first snapshot, before measuring
                call(ws, {"type": "release", "data": {"ids": []}})
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                counted_before, taken, refusal = server.snapshots.held_bytes, 0, None
                while refusal is None and taken < 200:  # counted, ~64 fit; their states alone, thousands
                    ws = (first, second)[taken % 2]
                    call(ws, {"type": "step", "data": {"action": 0}})
                    reply = call(ws, {"type": "snapshot", "data": {}})
                    if reply["type"] == "error":
                        refusal = reply["data"]
                    else:
                        taken += 1
                gc.collect()
                grown = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
            counted = server.snapshots.held_bytes - counted_before
            assert refusal is not None and refusal["code"] == "SNAPSHOT_LIMIT", f"{taken} snapshots were kept"
            assert f"over its {bound} for them all" in refusal["message"], refusal
            assert "--max-server-snapshot-bytes" in refusal["message"]
            per_session = [s.handler.snapshots.held_bytes for s in server.sessions]
            assert all(held < server.snapshots.max_bytes / 16 for held in per_session)  # far from their own bound
            assert server.snapshots.held_bytes <= bound
            # What was counted is what the server holds (allocator slack and the replies in flight aside).
            assert 0.8 * grown <= counted <= 1.25 * grown, (counted, grown)
            released = call(first, {"type": "release", "data": {"ids": []}})  # no ids: nothing released
            assert released["data"]["held_bytes"] in per_session
        assert wait_until(lambda: server.snapshots.held_bytes == 0, 10 * UNIT)  # every byte given back


def test_a_sessions_snapshots_go_when_it_closes_and_any_session_restores_a_kept_one():
    with running_server(cartpole) as server:
        owner = RemoteEnv(base_url=server.url)
        other = RemoteEnv(base_url=server.url)
        try:
            owner.reset(seed=0)
            handles = [owner.snapshot() for _ in range(20)]
            assert len(server.snapshots) == 20
            other.restore(handles[5])  # a session that never reset starts from another's state
            other.step(0)
        finally:
            owner.close()
        try:
            with pytest.raises(SnapshotError, match="keeps no snapshot"):
                other.restore(handles[5])
        finally:
            other.close()
        # the server drops a session's snapshots once it has seen the session close, after close() returns
        assert wait_until(lambda: len(server.snapshots) == 0, 10 * UNIT)


def resident_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
def test_ten_thousand_snapshot_restore_pairs_hold_nothing_beyond_what_is_kept():
    with running_server(cartpole) as server:  # in this process: its memory is ours to read
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=0)
            root = env.snapshot()
            for _ in range(500):  # warm up allocators and caches
                env.release(env.snapshot())
                env.restore(root)
            start = resident_bytes()
            for step in range(10_000):
                handle = env.snapshot()
                env.restore(handle)
                env.step(step % 2)
                env.release(handle)
                if env._client.kind.session.state.value == "ended":
                    env.restore(root)
            grown = resident_bytes() - start
            assert len(server.snapshots) == 1  # the root alone
            (session,) = server.sessions
            assert session.handler.snapshots.held == 1
            assert session.handler.snapshots.held_bytes == server.snapshots.held_bytes > root.size  # and its frame
            assert grown < 16 * 2**20, f"the process grew by {grown / 2**20:.1f} MiB over 10,000 pairs"
        finally:
            env.close()
        assert wait_until(lambda: len(server.snapshots) == 0, 10 * UNIT)


def test_a_restore_into_a_session_of_another_render_mode_is_refused():
    def factory(render_mode=None):
        return GymEnvironment(gym.make("CartPole-v1", render_mode=render_mode))

    from openenv_gym.server.served_env import ServedEnv

    with running_server(ServedEnv(factory, takes_render_mode=True)) as server:
        plain = RemoteEnv(base_url=server.url)
        rendering = RemoteEnv(base_url=server.url, render_mode="rgb_array")
        try:
            plain.reset(seed=0)
            rendering.reset(seed=0)
            with pytest.raises(SnapshotError, match="render_mode=None, this session's has render_mode=rgb_array"):
                rendering.restore(plain.snapshot())
            rendering.render()
            handle = rendering.snapshot()  # a window's surface is kept by reference, not copied
            rendering.step(0)
            rendering.restore(handle)
            assert rendering.render().shape == (400, 600, 3)
        finally:
            rendering.close()
            plain.close()


def test_a_batch_snapshot_refused_partway_keeps_none_of_its_sub_envs():
    """Past the limit on its third sub-env, a batch snapshot of three releases the two it kept:
    their ids would never reach the client."""
    with running_server(cartpole, max_snapshots=2) as server:
        with connect(server.url.replace("http", "ws") + "/ws/batch?envs=3&autoreset_mode=NextStep") as ws:
            call(ws, {"type": "batch_reset", "data": {}})
            refused = call(ws, {"type": "snapshot", "data": {"envs": [0, 1, 2]}})
            assert refused["data"]["code"] == "SNAPSHOT_LIMIT"
            assert call(ws, {"type": "release", "data": {"ids": []}})["data"]["held"] == 0
            assert len(server.snapshots) == 0
            kept = call(ws, {"type": "snapshot", "data": {"envs": [0, 1]}})
            assert kept["data"]["held"] == 2


def test_a_portable_snapshot_a_restore_frame_could_not_carry_is_refused():
    with running_server(cartpole, max_frame_bytes=2048) as server:
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=0)
            with pytest.raises(SnapshotError, match="over the 2048 a frame may hold") as raised:
                env.snapshot(portable=True)
            assert raised.value.code == "SNAPSHOT_LIMIT"
            kept = env.snapshot()  # kept on the server, it need not travel
            env.restore(kept)
            assert len(server.snapshots) == 1  # the refused one was not kept
        finally:
            env.close()


class ClosingCounterEnv(HiddenCounterEnv):
    """Counts its closes, class-wide: a restore swaps in a copy and must close the env it replaces."""

    closes = 0

    def __init__(self) -> None:
        self.position = 0

    def step(self, action):
        self.position += 1
        return self.position, 0.0, False, False, {}

    def close(self):
        ClosingCounterEnv.closes += 1


def test_the_env_a_restore_replaces_is_closed():
    environment = GymEnvironment(ClosingCounterEnv())
    environment.reset(seed=0)
    state = environment.snapshot()
    before = ClosingCounterEnv.closes
    for _ in range(3):
        environment.restore(state)
    assert ClosingCounterEnv.closes == before + 3
    environment.close()


def test_a_state_of_an_env_made_with_other_arguments_is_refused_before_anything_changes():
    """FrozenLake 8x8's state into a 4x4 server (same id, same key): refused, the session steps on."""
    small, large = GymEnvironment(gym.make("FrozenLake-v1")), GymEnvironment(gym.make("FrozenLake-v1", map_name="8x8"))
    small.reset(seed=0)
    large.reset(seed=0)
    with pytest.raises(SnapshotRefusedError, match="map_name"):
        small.restore(large.snapshot())
    assert small.step(1).observation == {"observation": small.last_observation}
    with running_server(lambda: GymEnvironment(gym.make("FrozenLake-v1")), snapshot_key="shared") as four:
        with running_server(
            lambda: GymEnvironment(gym.make("FrozenLake-v1", map_name="8x8")), snapshot_key="shared"
        ) as eight:
            source, target = RemoteEnv(base_url=eight.url), RemoteEnv(base_url=four.url)
            try:
                source.reset(seed=0)
                handle = source.snapshot(portable=True)
                target.reset(seed=0)
                with pytest.raises(SnapshotError, match="map_name") as raised:
                    target.restore(handle)
                assert raised.value.code == "SNAPSHOT_REFUSED"
                target.step(1)  # no reset needed: nothing changed
            finally:
                source.close()
                target.close()


def test_a_state_refers_to_the_spaces_the_env_was_made_with_and_brings_their_generators_back():
    """The spaces (and specs) are configuration: a restore keeps the restoring env's own objects,
    their random generators set to the state's, so sampling replays."""
    source, target = cartpole(), cartpole()
    source.reset(seed=0)
    source.env.action_space.seed(7)
    source.env.observation_space.seed(8)
    [source.env.action_space.sample() for _ in range(3)]
    state = source.snapshot()
    assert b"gymnasium.spaces" not in state and b"EnvSpec" not in state  # referred to, not held
    after = [(source.env.action_space.sample(), source.env.observation_space.sample()) for _ in range(5)]
    own_action, own_observation = target.env.action_space, target.env.observation_space
    for env in (target, source):
        env.restore(state)
        replayed = [(env.env.action_space.sample(), env.env.observation_space.sample()) for _ in range(5)]
        assert [a for a, _ in replayed] == [a for a, _ in after]
        assert all((o == p).all() for (_, o), (_, p) in zip(replayed, after, strict=True))
    assert target.env.action_space is own_action and target.env.observation_space is own_observation
    source.close()
    target.close()


def test_a_space_the_env_replaced_since_it_was_made_travels_whole():
    source, target = GymEnvironment(ReplacingSpaceEnv()), GymEnvironment(ReplacingSpaceEnv())
    source.snapshot_support()  # the probe passes: the space is replaced, never changed in place
    source.reset(seed=3)
    [source.env.action_space.sample() for _ in range(2)]
    state = source.snapshot()
    after = [source.env.action_space.sample() for _ in range(6)]
    made_with = target.env.unwrapped.action_space
    target.restore(state)
    assert target.env.unwrapped.action_space is not made_with
    assert [target.env.action_space.sample() for _ in range(6)] == after
    source.close()
    target.close()


def test_a_fork_the_server_has_no_room_for_raises_and_leaves_the_parent_as_it_was():
    """fork(k) takes its snapshot while the k sessions open: when one of them is refused, the
    snapshot's reply is still read and its state released, the opened forks closed, and the
    parent session goes on."""
    from openenv_gym.errors import CapacityReachedError

    with running_server(cartpole, max_sessions=3) as server:
        env = RemoteEnv(base_url=server.url)
        try:
            env.reset(seed=0)
            with pytest.raises(CapacityReachedError):
                env.fork(3)  # the parent and 3 forks: one more session than the server serves
            assert env.step(0)[2:4] == (False, False)
            # the forks that opened were closed: once the server has seen them go, there is room again
            assert wait_until(lambda: len(server.sessions) == 1, 10 * UNIT)
            (fork,) = env.fork(1)
            fork.close()
            assert wait_until(lambda: len(server.snapshots) == 0, 10 * UNIT)  # the forks' snapshots released
        finally:
            env.close()
