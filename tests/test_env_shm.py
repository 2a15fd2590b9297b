"""A plain session's steps through shared memory (``gym.make``'s env on this host): chosen, equal to
the WebSocket's, checked by the server, and cleaned up whichever side dies."""

from __future__ import annotations

import json
import os
import signal
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.client import connect

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym import RemoteEnv
from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.errors import (
    ConnectionLostError,
    EpisodeEndedError,
    InvalidActionError,
    RemoteError,
    RequestTimeoutError,
)
from openenv_gym.protocol import parse_server_frame
from openenv_gym.providers import ProcessProvider
from openenv_gym.server.runner import load_factory
from tests.testing_env import CounterEnvironment
from tests.utils import kill_stepping_client, running_server, segments_mapped, stop, wait_until


@pytest.fixture
def cartpole_server():
    provider = ProcessProvider(target="CartPole-v1")
    url = provider.start()
    try:
        yield provider, url
    finally:
        provider.stop()


def test_gym_make_takes_shared_memory_on_this_host_and_says_so():
    env = gym.make("openenv/CartPole-v1")
    try:
        assert env.unwrapped.transport == "shm", env.unwrapped.transport_reason
        assert env.unwrapped.transport_reason == "shared memory: the server is on this host"
        server_pid = env.unwrapped.provider.pid
        assert segments_mapped(os.getpid()) >= 1 and segments_mapped(server_pid) == 1
    finally:
        env.close()
    forced = gym.make("openenv/CartPole-v1", transport="ws")
    try:
        assert (forced.unwrapped.transport, forced.unwrapped.transport_reason) == ("ws", "transport='ws' asked for")
    finally:
        forced.close()
    with pytest.raises(ValueError, match="transport must be one of"):
        gym.make("openenv/CartPole-v1", transport="pipe")


def _play(env: gym.Env, steps: int) -> list[tuple]:
    """Seeded random steps, with resets at every end: each result with its types."""
    env.action_space.seed(3)
    results = [env.reset(seed=11)]
    for _ in range(steps):
        result = env.step(env.action_space.sample())
        results.append(result)
        if result[2] or result[3]:
            results.append(env.reset())
    return results


def _same(actual, expected, where: str) -> None:
    """Equal exactly, types included (numpy scalars and arrays by dtype, Python values by type)."""
    assert type(actual) is type(expected), f"{where}: {type(actual)} != {type(expected)}"
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), where
        for index, (a, e) in enumerate(zip(actual, expected)):
            _same(a, e, f"{where}[{index}]")
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys(), where
        for key in expected:
            _same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype and np.shape(actual) == np.shape(expected), where
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "FrozenLake-v1", "Taxi-v4", "Pendulum-v1", "MountainCarContinuous-v0"]
)
def test_steps_through_shared_memory_equal_the_websocket_s_and_a_local_env_s(env_id):
    """Every space that batches (Discrete and Box, observations and actions), infos with arrays
    (Taxi's action mask) and without: the same values and types by either transport, and the
    local env's observations, rewards and flags."""
    limit = gym.spec(env_id).max_episode_steps  # a client-side time limit, as gym.make's openenv/ ids have
    shm = gym.wrappers.TimeLimit(RemoteEnv(env_id), limit)
    ws = gym.wrappers.TimeLimit(RemoteEnv(env_id, transport="ws"), limit)
    local = gym.make(env_id)
    try:
        assert (shm.unwrapped.transport, ws.unwrapped.transport) == ("shm", "ws"), shm.unwrapped.transport_reason
        by_shm, by_ws, by_local = _play(shm, 300), _play(ws, 300), _play(local, 300)
        _same(by_shm, by_ws, env_id)
        assert len(by_shm) == len(by_local) and len(by_local) > 300  # some episodes ended
        for index, (remote, own) in enumerate(zip(by_shm, by_local)):
            for part, (a, e) in enumerate(zip(remote[:-1], own[:-1])):  # infos travel as JSON
                np.testing.assert_array_equal(a, e, err_msg=f"{env_id}[{index}][{part}]")
    finally:
        shm.close()
        ws.close()
        local.close()


def test_an_ended_episode_and_a_step_before_reset_are_refused_on_both_sides(cartpole_server):
    _, url = cartpole_server
    env = RemoteEnv(base_url=url)
    try:
        assert env.transport == "shm"
        with pytest.raises(RemoteError, match="step before reset"):
            env.step(0)  # the client does not know this rule: the server's refusal arrives through the segment
        env.reset(seed=0)
        while not env.step(0)[2]:
            pass
        with pytest.raises(EpisodeEndedError):
            env.step(0)  # refused by the client, nothing sent
        client = env._client
        client.connection.begin_shared_step("step", lambda link: link.send_one(0))  # past the client's own check
        with pytest.raises(EpisodeEndedError, match="reset before stepping again") as refused:
            client.complete()
        assert isinstance(refused.value, RemoteError) and refused.value.code == "EPISODE_ENDED"
        with pytest.raises(InvalidActionError):
            env.step(2)  # outside Discrete(2): never sent
        env.reset(seed=1)
        assert env.step(1)[1] == 1.0 and env.transport == "shm"
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_the_server_checks_every_action_it_reads_from_the_segment(env_id):
    """Random bytes in the action's row, as a buggy or hostile client could write them: the server
    steps exactly the rows its action space contains and refuses the others, the session usable."""
    env = RemoteEnv(env_id)
    rng = np.random.default_rng(0)
    space = env.action_space
    try:
        client = env._client
        row = client.link.views.actions[0:1]
        env.reset(seed=0)
        accepted = refused = 0
        for _ in range(300):
            if rng.random() < 0.5:  # half the time a valid action, to cover stepping on after refusals
                raw = np.asarray(space.sample(), dtype=row.dtype).reshape(row.shape).view(np.uint8).ravel()
            else:
                raw = rng.integers(0, 256, row.nbytes, dtype=np.uint8)
            value = raw.view(row.dtype).reshape(row.shape[1:])
            valid = (0 <= int(value) < space.n) if isinstance(space, gym.spaces.Discrete) else space.contains(value)

            def write(link, raw=raw):
                link.views.actions.view(np.uint8).reshape(-1)[: raw.size] = raw
                link.ask()

            client.connection.begin_shared_step("step", write)
            try:
                result = client.complete()
            except RemoteError as exc:
                assert not valid and exc.code == "VALIDATION_ERROR" and "invalid action" in exc.message
                refused += 1
                continue
            assert valid, f"the server stepped {value!r}"
            accepted += 1
            if result.terminated[0] or result.truncated[0]:
                client.kind.end_episode()
                env.reset()
        assert accepted > 100 and refused > 50
    finally:
        env.close()


def test_a_server_that_cannot_serve_shared_memory_says_why():
    blackjack = RemoteEnv("Blackjack-v1")  # a Tuple observation: no array to lay out
    try:
        assert blackjack.transport == "ws"  # known from its spaces: the server is not asked
        assert blackjack.transport_reason.startswith("the WebSocket: the observation space Tuple(")
        assert "does not batch into one array of numbers" in blackjack.transport_reason
        blackjack.reset(seed=0)
        assert isinstance(blackjack.step(0)[0], tuple)
    finally:
        blackjack.close()
    # Refused before any connection, as a wrong argument (no lost connection), saying what carries it.
    with pytest.raises(ValueError, match="transport='shm' cannot be served: the observation space Tuple") as refused:
        RemoteEnv("Blackjack-v1", transport="shm")
    assert not isinstance(refused.value, ConnectionLostError)
    assert str(refused.value).endswith("'auto' or 'ws' carries this env")
    echo = gym.make("openenv/Echo-v0")  # an action model of its own: not asked
    try:
        assert echo.unwrapped.transport == "ws"
        assert echo.unwrapped.transport_reason == "the WebSocket: the server's actions have a model of their own"
    finally:
        echo.close()
    with running_server(CounterEnvironment) as server:  # asked anyway: the server refuses, saying why
        with EnvClient(server.url, transport="auto") as client:
            assert client.transport == "ws"
            assert "only a Gymnasium env without tools steps through shared memory" in client.transport_reason
            client.reset()
            assert client.step({"amount": 2}).observation["count"] == 2


def test_a_snapshot_taken_after_shared_memory_steps_keeps_the_last_step(cartpole_server):
    _, url = cartpole_server
    env = RemoteEnv(base_url=url)
    try:
        assert env.transport == "shm"
        env.reset(seed=4)
        for _ in range(5):
            kept = env.step(1)[0]
        snapshot = env.snapshot()
        after = [env.step(0)[0] for _ in range(3)]
        restored, _ = env.restore(snapshot)
        np.testing.assert_array_equal(restored, kept)  # the frame of the step before the snapshot
        replayed = [env.step(0)[0] for _ in range(3)]
        for a, b in zip(replayed, after):
            np.testing.assert_array_equal(a, b)
        assert env.transport == "shm"
    finally:
        env.close()


def test_a_watcher_and_the_session_list_see_shared_memory_steps():
    with running_server(load_factory("CartPole-v1")) as server:
        with EnvClient(server.url, transport="shm") as client:
            assert client.transport == "shm", client.transport_reason
            client.reset(seed=1)
            for step in range(3):
                client.step_shared(step % 2)
            (entry,) = http_get_json(server.url, "/web/sessions")["sessions"]
            assert (entry["steps"], entry["episodes"]) == (3, 1)
            watch = f"ws://127.0.0.1:{server.port}/web/watch?session={entry['id']}&fps=5"
            with connect(watch, open_timeout=10) as page:
                assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
                sessions = lambda: http_get_json(server.url, "/web/sessions")["sessions"]  # noqa: E731
                assert wait_until(lambda: sessions()[0]["watchers"] == 1, timeout=10)
                sent = [client.step_shared(step % 2) for step in range(3, 43)]  # alternating: CartPole stays up
                events = []
                while not events or events[-1]["index"] < 43:
                    message = json.loads(page.recv(timeout=10))
                    assert message["type"] == "watch_step"
                    events.append(message["data"])
            last = events[-1]
            assert last["event"] == "step" and last["action"] == {"action": 42 % 2}
            reply = parse_server_frame(json.dumps(last["reply"]))
            np.testing.assert_array_equal(
                np.asarray(reply.observation["observation"], np.float32), sent[-1].observations[0]
            )
            assert reply.reward == float(sent[-1].rewards[0])


def test_a_stopped_server_times_out_and_a_killed_one_is_reported(cartpole_server):
    provider, url = cartpole_server
    before = segments_mapped(os.getpid())
    env = RemoteEnv(base_url=url, call_timeout=1.0)
    try:
        assert env.transport == "shm"
        env.reset(seed=0)
        env.step(0)
        stop(provider.pid)
        try:
            with pytest.raises(RequestTimeoutError):
                env.step(0)
        finally:
            os.kill(provider.pid, signal.SIGCONT)
        assert env.transport == "ws"  # the session was abandoned, its segment let go
        assert wait_until(lambda: segments_mapped(os.getpid()) == before, timeout=10)
        # The rest must not hinge on a busy machine answering within a second.
        env._client.connection.terms.call_timeout = 30.0
        env.reset(seed=0)  # connects again, and takes shared memory again
        assert env.transport == "shm"
        stop(provider.pid)  # so that the step cannot be answered before the kill
        env._client.connection.begin_shared_step("step", lambda link: link.send_one(0))
        os.kill(provider.pid, signal.SIGKILL)
        with pytest.raises(ConnectionLostError):
            env._client.complete()
    finally:
        env.close()
    assert wait_until(lambda: segments_mapped(os.getpid()) == before, timeout=10)


CLIENT = textwrap.dedent(
    """
    import sys
    from openenv_gym import RemoteEnv
    env = RemoteEnv(base_url=sys.argv[1], transport="shm")
    env.reset(seed=0)
    print("stepping", flush=True)
    while True:
        if env.step(0)[2]:
            env.reset()
    """
)


def test_a_killed_client_lets_the_server_release_the_session_and_its_segment(cartpole_server):
    provider, url = cartpole_server
    kill_stepping_client(CLIENT, url, provider.pid)
    env = RemoteEnv(base_url=url)  # the server serves on
    try:
        env.reset(seed=1)
        assert env.step(1)[1] == 1.0 and env.transport == "shm"
    finally:
        env.close()
    assert wait_until(lambda: segments_mapped(provider.pid) == 0, timeout=30)  # closed: its segment let go


def test_only_a_face_of_published_spaces_outside_a_game_asks_for_shared_memory():
    from openenv_gym.env import shm_refusal
    from openenv_gym.face import PublishedSpaces, SchemaSpaces
    from openenv_gym.spaces.schema import openenv_spaces
    from openenv_gym.tool_face import ToolFace

    spaces = (gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (3,)))
    assert shm_refusal(PublishedSpaces(*spaces), {}) is None
    own_model = {"properties": {"code": {"type": "string"}}, "required": ["code"]}
    assert "a model of their own" in shm_refusal(PublishedSpaces(*spaces, action_schema=own_model), {})
    assert "a seat in a game" in shm_refusal(PublishedSpaces(*spaces), {"agent": "player_0"})
    assert "a tool call's step" in shm_refusal(ToolFace([{"name": "echo", "description": "", "input_schema": {}}]), {})
    mapped = SchemaSpaces(
        *openenv_spaces({"action": own_model, "observation": {"properties": {"n": {"type": "integer"}}}}), {}
    )
    assert "an OpenEnv server" in shm_refusal(mapped, {})
    # Shared memory carries arrays of numbers: any other space of either side is known to stay on the WebSocket.
    box = gym.spaces.Box(-1, 1, (3,))
    for action_space, observation_space, side in [
        (gym.spaces.Discrete(2), gym.spaces.Dict({"x": box}), "observation"),
        (gym.spaces.Discrete(2), gym.spaces.Sequence(box), "observation"),
        (gym.spaces.Text(5), box, "action"),
    ]:
        said = shm_refusal(PublishedSpaces(action_space, observation_space), {})
        assert said is not None and said.startswith(f"the {side} space"), said
        assert "does not batch into one array of numbers" in said
    arrays = (gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(4))
    assert shm_refusal(PublishedSpaces(*arrays), {}) is None


def test_channels_watch_their_segment_only_while_alone_in_their_process():
    """A watching (spinning) channel thread holds the GIL: with a second channel in the process,
    neither watches, so one session's steps never wait on another's spin."""
    from openenv_gym.server.shm_channel import ShmChannel

    with running_server(load_factory("CartPole-v1")) as server:
        first = EnvClient(server.url, transport="shm").connect()
        assert wait_until(lambda: ShmChannel.running == 1, timeout=10)
        second = EnvClient(server.url, transport="shm").connect()
        assert wait_until(lambda: ShmChannel.running == 2, timeout=10)
        for client in (first, second):
            client.reset(seed=0)
        for step in range(20):  # alternating between the two channels
            for client in (first, second):
                assert client.step_shared(step % 2).rewards[0] == 1.0
        first.close()
        assert wait_until(lambda: ShmChannel.running == 1, timeout=10)
        assert second.step_shared(0).rewards[0] == 1.0
        second.close()
        assert wait_until(lambda: ShmChannel.running == 0, timeout=10)
