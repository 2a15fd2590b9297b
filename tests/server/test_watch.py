"""Watch mode: the list of live sessions, and a read-only, throttled view of one of them."""

from __future__ import annotations

import json
import time

import gymnasium as gym
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_gym.client import http_get_json
from openenv_gym.client.batch_client import BatchClient
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.client.vector_client import VectorClient
from openenv_gym.protocol import RenderFrame, parse_server_frame
from openenv_gym.protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode
from openenv_gym.server import env_server
from openenv_gym.server.runner import load_factory
from openenv_gym.server.watch import SubEnvTransition, Watcher, parse_watch_query, show_sub_env
from tests.utils import running_server, wait_until


@pytest.fixture(scope="module")
def cartpole():
    with running_server(load_factory("CartPole-v1")) as server:
        yield server


@pytest.fixture(scope="module")
def frozen_lake():
    with running_server(load_factory("FrozenLake-v1")) as server:
        yield server


def _watch_url(server, session_id: str, fps: float = 30.0) -> str:
    return f"ws://127.0.0.1:{server.port}/web/watch?session={session_id}&fps={fps:g}"


def _listing(server) -> list[dict]:
    return http_get_json(server.url, "/web/sessions")["sessions"]


def _only_session(server) -> dict:
    assert wait_until(lambda: len(_listing(server)) == 1, timeout=10)
    return _listing(server)[0]


def test_the_list_shows_live_sessions_with_their_counts(cartpole):
    with EnvClient(cartpole.url) as client:
        client.reset(seed=0)
        for _ in range(3):
            client.step({"action": 0})
        entry = _only_session(cartpole)
        assert entry["kind"] == "plain" and not entry["web"]
        assert (entry["steps"], entry["episodes"], entry["size"], entry["watchers"]) == (3, 1, 1, 0)
        assert entry["render_mode"] is None and entry["age_s"] >= entry["idle_s"] >= 0
    assert wait_until(lambda: _listing(cartpole) == [], timeout=10)


def _watched_steps(page, count: int) -> list[dict]:
    """The watch_step messages up to the one of batch step ``count``."""
    events = []
    while not events or events[-1]["index"] < count:
        message = json.loads(page.recv(timeout=10))
        assert message["type"] == "watch_step"
        events.append(message["data"])
    return events


@pytest.mark.parametrize("backend", [None, "gymnasium"])
def test_a_sub_env_of_a_batch_or_vector_session_is_watched_as_a_plain_session(cartpole, backend):
    """A trainer's make_vec session: sub-env 1's transitions, cut out of the batches, NextStep resets as resets."""
    mode = AutoresetMode.NEXT_STEP
    if backend is None:
        client = BatchClient(cartpole.url, envs=3, autoreset_mode=mode)
    else:
        client = VectorClient(cartpole.url, envs=3, autoreset_mode=mode, backend=backend)
    local = gym.make_vec("CartPole-v1", 3, vectorization_mode="sync" if backend is None else "vector_entry_point")
    try:
        client.connect()
        entry = _only_session(cartpole)
        assert (entry["kind"], entry["size"]) == ("batch" if backend is None else "vector", 3)
        with connect(_watch_url(cartpole, entry["id"]) + "&env=3", open_timeout=10) as page:
            assert "has 3 sub-env(s)" in json.loads(page.recv(timeout=10))["data"]["message"]
        with connect(_watch_url(cartpole, entry["id"]) + "&env=1", open_timeout=10) as page:
            assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
            assert wait_until(lambda: _listing(cartpole)[0]["watchers"] == 1, timeout=10)
            if backend is None:
                client.reset_batch(seeds=[0, 1, 2])
            else:
                client.reset_vector(seed=0)
            expected = [(local.reset(seed=0)[0][1], None, False)]  # (observation, reward, terminated) of sub-env 1
            ended = False
            steps = 39
            for _ in range(steps):
                if backend is None:
                    client.step_batch([{"action": 1}] * 3)
                else:
                    client.step_vector(np.ones(3, dtype=np.int64))
                observations, rewards, terminated, truncated, _ = local.step(np.ones(3, dtype=np.int64))
                # NextStep: the step after an episode's end resets the sub-env.
                expected.append((observations[1], None if ended else rewards[1], bool(terminated[1])))
                ended = bool(terminated[1] or truncated[1])
                time.sleep(0.01)  # a trainer's pace; the watcher samples at 30/s
            events = [json.loads(page.recv(timeout=10))["data"]]
            events += _watched_steps(page, steps) if events[0]["index"] < steps else []
        for event in events:
            observation, reward, terminated = expected[event["index"]]
            reply = event["reply"]["data"]
            np.testing.assert_allclose(reply["observation"]["observation"], observation, rtol=1e-6)
            assert (reply["reward"], reply["done"]) == (reward, terminated)
            assert (event["event"] == "reset") == (reward is None)
            assert event["action"] == (None if reward is None else ({"action": 1} if backend is None else 1))
        assert events[-1]["index"] == steps
    finally:
        client.close()
        local.close()


def test_a_watcher_follows_the_session_and_gets_the_latest_transition(cartpole):
    with EnvClient(cartpole.url) as client:
        client.reset(seed=1)
        session_id = _only_session(cartpole)["id"]
        with connect(_watch_url(cartpole, session_id, fps=5), open_timeout=10) as page:
            hello = json.loads(page.recv(timeout=10))
            assert hello["type"] == "watch_hello" and hello["data"]["session"]["id"] == session_id
            assert wait_until(lambda: _listing(cartpole)[0]["watchers"] == 1, timeout=10)
            sent = [client.step({"action": step % 2}) for step in range(40)]  # faster than 5 per second
            events = []
            while not events or events[-1]["index"] < 40:
                message = json.loads(page.recv(timeout=10))
                assert message["type"] == "watch_step"
                events.append(message["data"])
        # Throttled: fewer messages than steps, none lost without being counted, the last one kept.
        assert len(events) < 40
        assert sum(1 + event["skipped"] for event in events) == 40
        last = events[-1]
        assert last["event"] == "step" and last["action"] == {"action": 39 % 2}
        reply = parse_server_frame(json.dumps(last["reply"]))
        np.testing.assert_allclose(reply.observation["observation"], sent[-1].observation["observation"])
        assert reply.reward == sent[-1].reward


def test_the_watch_stream_counts_every_step_of_an_episode_not_only_those_sent(cartpole):
    """Sampled at 2 per second, a 53-step episode still shows return 53 and length 53, and its end
    is marked though its last step and the next reset may not be sent (issue 52: it showed ~11)."""
    with EnvClient(cartpole.url) as client:
        session_id = _only_session(cartpole)["id"]
        with connect(_watch_url(cartpole, session_id, fps=2), open_timeout=10) as page:
            assert json.loads(page.recv(timeout=10))["data"]["session"]["episodes"] == 0
            assert wait_until(lambda: _listing(cartpole)[0]["watchers"] == 1, timeout=10)
            frame = client.reset(seed=93)
            steps, total = 0, 0.0
            while not frame.done:  # pushes toward the pole's lean: 53 steps from seed 93
                frame = client.step({"action": int(frame.observation["observation"][2] > 0)})
                steps, total = steps + 1, total + frame.reward
            assert (steps, total) == (53, 53.0)
            client.reset(seed=0)
            for _ in range(5):
                client.step({"action": 0})
            events = _watched_steps(page, 58)
    ended = [episode for event in events for episode in event["ended"]]
    assert ended == [{"index": 1, "length": 53, "return": 53.0, "whole": True, "terminated": True, "truncated": False}]
    assert events[-1]["episode"] == {"index": 2, "length": 5, "return": 5.0, "whole": True}
    assert sum(1 + event["skipped"] for event in events) == 58 + 2  # every step and both resets, sent or counted


def test_episode_ends_are_marked_without_a_reset_and_a_cut_episode_ends_at_the_next_reset():
    plain = Watcher(connection=None, session=_Watched(AutoresetMode.NEXT_STEP), fps=10)
    plain.offer("step", 1, 0, "{}", 1.0, False, False)  # under way when watching began
    plain.offer("reset", 1, None, "{}")
    for index in range(2, 5):
        plain.offer("step", index, 0, "{}", 0.5, False, False)
    plain.offer("reset", 4, None, "{}")  # cuts the episode short
    ended, dropped = plain.episodes.take_ended()
    assert dropped == 0 and [(e["index"], e["length"], e["return"], e["whole"], e["terminated"]) for e in ended] == [
        (0, 1, 1.0, False, False),
        (1, 3, 1.5, True, False),
    ]
    for mode, current in ((AutoresetMode.SAME_STEP, (2, 1, 3.0)), (AutoresetMode.NEXT_STEP, (2, 0, 0.0))):
        watcher = Watcher(connection=None, session=_Watched(mode), fps=10)
        watcher.offer_sub_env("reset", 0, None, _transition(None, False))
        watcher.offer_sub_env("step", 1, 1, _transition(1.0, False))
        watcher.offer_sub_env("step", 2, 1, _transition(1.0, True))
        watcher.offer_sub_env("step", 3, 1, _transition(3.0, False))  # SameStep: the next episode's first
        ended, _ = watcher.episodes.take_ended()
        assert [(e["index"], e["length"], e["return"], e["terminated"]) for e in ended] == [(1, 2, 2.0, True)]
        episode = watcher.episodes.current()
        assert (episode["index"], episode["length"], episode["return"]) == current


def test_a_watch_connection_is_read_only(cartpole):
    with EnvClient(cartpole.url) as client:
        client.reset(seed=2)
        session_id = _only_session(cartpole)["id"]
        with connect(_watch_url(cartpole, session_id), open_timeout=10) as page:
            assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
            for frame in ('{"type":"step","data":{"action":1}}', '{"type":"reset","data":{}}', "nonsense"):
                page.send(frame)
                refusal = json.loads(page.recv(timeout=10))
                assert refusal["type"] == "error" and refusal["data"]["code"] == "READ_ONLY"
        entry = _only_session(cartpole)
        assert (entry["steps"], entry["episodes"]) == (0, 1)
        assert client.step({"action": 1}).done is False  # its own client goes on as before


def test_the_watcher_is_told_when_the_session_ends(cartpole):
    client = EnvClient(cartpole.url).connect()
    client.reset(seed=3)
    session_id = _only_session(cartpole)["id"]
    with connect(_watch_url(cartpole, session_id), open_timeout=10) as page:
        assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
        client.close()
        end = json.loads(page.recv(timeout=10))
        assert end == {"type": "watch_end", "data": {"reason": "the session closed"}}
    assert wait_until(lambda: cartpole.watchers == set(), timeout=10)


def test_a_rendering_session_s_frames_reach_the_watcher(frozen_lake):
    client = EnvClient(frozen_lake.url)
    client.ask_render_mode("ansi")
    with client.connect():
        client.reset(seed=0)
        entry = _only_session(frozen_lake)
        assert entry["render_mode"] == "ansi"
        with connect(_watch_url(frozen_lake, entry["id"]), open_timeout=10) as page:
            assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
            client.step({"action": 2})
            assert json.loads(page.recv(timeout=10))["type"] == "watch_step"
            frame = parse_server_frame(page.recv(timeout=10))
            assert isinstance(frame, RenderFrame) and frame.frame == client.render()


def test_rgb_frames_are_binary_when_the_page_asks():
    """A watcher that offers the binary subprotocol gets rendered RGB frames packed, as a client does."""
    import ale_py  # noqa: F401  (registers ALE/ for the factory)

    with running_server(load_factory("ALE/Pong-v5")) as server:
        client = EnvClient(server.url)
        client.ask_render_mode("rgb_array")
        with client.connect():
            client.reset(seed=0)
            session_id = _only_session(server)["id"]
            with connect(_watch_url(server, session_id), subprotocols=[BINARY_SUBPROTOCOL], open_timeout=10) as page:
                assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
                client.step({"action": 0})
                assert json.loads(page.recv(timeout=10))["type"] == "watch_step"
                message = page.recv(timeout=10)
                assert isinstance(message, bytes)
                frame = parse_server_frame(message)
                assert isinstance(frame, RenderFrame)
                np.testing.assert_array_equal(frame.frame, client.render())


def test_watch_queries_are_checked():
    assert parse_watch_query("session=abc") == ("abc", 10.0, 0)
    assert parse_watch_query("session=abc&fps=1000&env=7") == ("abc", 30.0, 7)
    assert parse_watch_query("session=abc&fps=1e-9") == ("abc", 0.5, 0)  # it still sees its session end soon
    for query, message in [
        ("", r"needs \?session="),
        ("session=a&fps=x", "not a number"),
        ("session=a&fps=0", "positive"),
        ("session=a&env=-1", "not a sub-env index"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_watch_query(query)


def test_an_unknown_session_is_refused(cartpole):
    with connect(_watch_url(cartpole, "nope"), open_timeout=10) as page:
        refusal = json.loads(page.recv(timeout=10))
        assert refusal["data"]["code"] == "VALIDATION_ERROR"
        with pytest.raises(ConnectionClosed):  # and the server closes the connection
            page.recv(timeout=10)


def test_a_rendering_batch_session_s_watched_sub_env_sends_its_own_frames(frozen_lake):
    client = BatchClient(frozen_lake.url, envs=2, autoreset_mode=AutoresetMode.NEXT_STEP, render_mode="ansi")
    try:
        client.reset_batch(seeds=[0, 1])
        entry = _only_session(frozen_lake)
        assert entry["render_mode"] == "ansi"
        with connect(_watch_url(frozen_lake, entry["id"]) + "&env=1", open_timeout=10) as page:
            assert json.loads(page.recv(timeout=10))["type"] == "watch_hello"
            client.step_batch([{"action": 2}, {"action": 1}])
            assert json.loads(page.recv(timeout=10))["type"] == "watch_step"
            frame = parse_server_frame(page.recv(timeout=10))
            frames = client.render()
            assert isinstance(frame, RenderFrame) and frame.frame == frames[1] != frames[0]
    finally:
        client.close()


class _Watched:
    """What a Watcher reads of its session, for unit tests without a server."""

    def __init__(self, autoreset_mode):
        self.autoreset_mode = autoreset_mode
        self.steps = 0
        self.episodes = 0
        self.watchers = set()


def _transition(reward, terminated):
    return SubEnvTransition(None, {"observation": [reward]}, reward, terminated, False, {})


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_step_after_an_episode_s_end_is_shown_as_a_reset_under_next_step(mode):
    watcher = Watcher(connection=None, session=_Watched(mode), fps=10)
    watcher.offer_sub_env("step", 1, 1, _transition(1.0, True))
    watcher.offer_sub_env("step", 2, 0, _transition(0.0, False))  # NextStep: this one reset the sub-env
    event, index, action, transition = watcher._latest
    if mode is AutoresetMode.NEXT_STEP:
        assert (event, action, transition.reward, transition.terminated) == ("reset", None, None, False)
    else:
        assert (event, action, transition.reward) == ("step", 0, 0.0)
    assert index == 2 and watcher._skipped == 1
    reply = json.loads(transition.reply_text())
    assert reply["type"] == "observation" and reply["data"]["done"] is False


def test_a_failing_watcher_never_fails_the_session_s_step():
    session = _Watched(AutoresetMode.NEXT_STEP)
    calm = Watcher(connection=None, session=session, fps=10)
    session.watchers = {Watcher(connection=None, session=session, fps=10, sub_env=5), calm}

    def transition_of(index):
        if index == 5:
            raise IndexError("no sub-env 5")
        return _transition(1.0, False)

    show_sub_env(session, True, [0, 1, 2, 3, 4, 5], None, transition_of)  # logs, does not raise
    assert calm._latest is not None and calm._latest[2] == 0


def test_watch_connections_are_capped(cartpole, monkeypatch):
    monkeypatch.setattr(env_server, "MAX_WATCHERS", 1)
    with EnvClient(cartpole.url) as client:
        client.reset(seed=0)
        session_id = _only_session(cartpole)["id"]
        with connect(_watch_url(cartpole, session_id), open_timeout=10) as first:
            assert json.loads(first.recv(timeout=10))["type"] == "watch_hello"
            with connect(_watch_url(cartpole, session_id), open_timeout=10) as second:
                refusal = json.loads(second.recv(timeout=10))
                assert "1 watch connections are open already" in refusal["data"]["message"]
