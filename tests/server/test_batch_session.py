"""BatchSession over real sockets: /ws/batch resets, steps, refusals, autoreset, capacity, binary codec, close."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from openenv_gym.client import http_get_json
from openenv_gym.protocol import RenderFrame
from openenv_gym.protocol.batch import BINARY_MAGIC, BINARY_SUBPROTOCOL, BatchResultFrame, parse_batch_server_frame
from openenv_gym.server import EnvServer
from openenv_gym.server.runner import load_factory
from tests.testing_env import CounterEnvironment
from tests.utils import UNIT, running_server, wait_until

K = 3
SEEDS = [0, 1, 42]


def ws(server: EnvServer, query: str = f"envs={K}", path: str = "/ws/batch", **kwargs) -> ClientConnection:
    """A raw WebSocket to the server's batch endpoint (legacy=True: the test closes it itself)."""
    url = server.url.replace("http", "ws") + path + (f"?{query}" if query else "")
    return connect(url, open_timeout=5 * UNIT, legacy=True, **kwargs)


def send(websocket: ClientConnection, frame: object) -> str | bytes:
    """Send a frame and return the raw reply, text or bytes."""
    websocket.send(frame if isinstance(frame, str) else json.dumps(frame))
    return websocket.recv(timeout=5 * UNIT)


def call(websocket: ClientConnection, frame: object) -> dict:
    """Send a frame and return its JSON text reply."""
    reply = send(websocket, frame)
    assert isinstance(reply, str), reply[:40]
    return json.loads(reply)


def reset(seeds: list | None = None, mask: list | None = None, options: dict | None = None) -> dict:
    return {"type": "batch_reset", "data": {"seeds": seeds, "options": options, "mask": mask}}


def step(*actions: dict) -> dict:
    return {"type": "batch_step", "data": {"actions": list(actions)}}


def closed_with(websocket: ClientConnection) -> ConnectionClosed:
    """Wait for the server's close and return it (its close frame is in .rcvd)."""
    with pytest.raises(ConnectionClosed) as caught:
        websocket.recv(timeout=5 * UNIT)
    return caught.value


@pytest.fixture(scope="module")
def cartpole_server() -> Iterator[EnvServer]:
    with running_server(load_factory("CartPole-v1")) as server:  # 64 slots: closing sessions never crowd it
        yield server


@pytest.fixture
def counter_server() -> Iterator[EnvServer]:
    CounterEnvironment.created.clear()
    CounterEnvironment.closed.clear()
    with running_server(CounterEnvironment) as server:
        yield server


def local_cartpoles(seeds: list[int]) -> tuple[list[gym.Env], np.ndarray]:
    envs = [gym.make("CartPole-v1") for _ in seeds]
    return envs, np.stack([env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)])


def observations(reply: dict) -> np.ndarray:
    """The JSON reply's observations as one float32 array (K, 4)."""
    return np.asarray([item["observation"] for item in reply["data"]["observations"]], dtype=np.float32)


# Reset and step ---------------------------------------------------------------------------------


def test_reset_with_seeds_matches_local_cartpole(cartpole_server):
    """batch_reset with seeds gives the observations of local CartPole resets with the same seeds."""
    envs, expected = local_cartpoles(SEEDS)
    with ws(cartpole_server) as websocket:
        reply = call(websocket, reset(SEEDS))
    assert reply["type"] == "batch_result"
    assert set(reply["data"]) == {"observations", "infos"}  # a reset result has no rewards or flags
    assert reply["data"]["infos"] == [{}] * K
    np.testing.assert_array_equal(observations(reply), expected)
    for env in envs:
        env.close()


def test_step_returns_k_rewards_and_flags_matching_local_cartpole(cartpole_server):
    """batch_step steps every sub-env once: K observations, rewards and flags, as local envs give."""
    envs, _ = local_cartpoles(SEEDS)
    actions = [0, 1, 1]
    with ws(cartpole_server) as websocket:
        call(websocket, reset(SEEDS))
        reply = call(websocket, step(*({"action": a} for a in actions)))
    data = reply["data"]
    assert reply["type"] == "batch_result"
    assert data["rewards"] == [1.0] * K
    assert data["terminated"] == [False] * K and data["truncated"] == [False] * K
    assert data["infos"] == [{}] * K and data["final"] == {}
    expected = np.stack([env.step(a)[0] for env, a in zip(envs, actions)])
    np.testing.assert_array_equal(observations(reply), expected)
    for env in envs:
        env.close()


def test_masked_reset_resets_only_the_selected_sub_envs(cartpole_server):
    """A masked batch_reset resets the selected sub-envs and repeats the others' last observations."""
    _, expected = local_cartpoles(SEEDS)
    with ws(cartpole_server) as websocket:
        first = call(websocket, reset(SEEDS))
        stepped = call(websocket, step({"action": 0}, {"action": 0}, {"action": 0}))
        reply = call(websocket, reset([None, 1, None], mask=[False, True, False]))
    got = observations(reply)
    np.testing.assert_array_equal(got[1], expected[1])  # sub-env 1 reset with its seed again
    np.testing.assert_array_equal(got[[0, 2]], observations(stepped)[[0, 2]])
    assert not np.array_equal(got[0], observations(first)[0])


# Refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (step({"action": 0}, {"action": 1}), f"2 actions for {K} sub-envs"),
        (step(*[{"action": 0}] * (K + 1)), f"{K + 1} actions for {K} sub-envs"),
        (reset([1, 2]), f"seeds has 2 items for {K} sub-envs"),
        (reset(mask=[True]), f"mask has 1 items for {K} sub-envs"),
        (reset(mask=[False] * K), "mask selects no sub-env to reset"),
        (step({"action": 0}, {"action": 5}, {"action": 1}), "invalid action for sub-env 1: "),
        (step({"action": 0}, {"action": 1}, {"move": 1}), "invalid action for sub-env 2: "),
        (step({"action": 0}, {"action": 1}, 1), "batch_step needs data.actions, a list of action objects"),
        (reset(["1", 2, 3]), "batch_reset seeds must be null or a list of integers and nulls"),
        ({"type": "step", "data": {"action": 0}}, "Unknown message type: step (a batch session takes batch_reset"),
    ],
)
def test_bad_request_is_refused_and_the_session_lives_on(cartpole_server, frame, message):
    """Wrong counts, an empty mask or an invalid action get an error frame naming it; the next step works."""
    with ws(cartpole_server) as websocket:
        before = call(websocket, reset(SEEDS))
        reply = call(websocket, frame)
        assert reply["type"] == "error", reply
        code = "UNKNOWN_TYPE" if frame["type"] == "step" else "VALIDATION_ERROR"
        assert reply["data"]["code"] == code
        assert reply["data"]["message"].startswith(message), reply["data"]["message"]
        # Nothing was stepped or reset by the refused request.
        after = call(websocket, step({"action": 0}, {"action": 0}, {"action": 0}))
        assert after["type"] == "batch_result"
    envs, expected = local_cartpoles(SEEDS)
    np.testing.assert_array_equal(observations(before), expected)
    np.testing.assert_array_equal(observations(after), np.stack([env.step(0)[0] for env in envs]))


def test_step_before_batch_reset_is_a_session_error(cartpole_server):
    """A batch_step before any batch_reset is refused with SESSION_ERROR; after a reset it works."""
    with ws(cartpole_server) as websocket:
        reply = call(websocket, step(*[{"action": 0}] * K))
        assert reply["data"] == {"message": "step before reset: send a reset frame first", "code": "SESSION_ERROR"}
        call(websocket, reset())
        assert call(websocket, step(*[{"action": 0}] * K))["type"] == "batch_result"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("envs=0", "envs=0 is out of range: this server hosts 1 to 64 per session"),
        ("envs=65", "envs=65 is out of range: this server hosts 1 to 64 per session"),
        ("envs=abc", "/ws/batch needs ?envs=N with N a positive integer"),
        ("", "/ws/batch needs ?envs=N with N a positive integer"),
        (
            "envs=2&autoreset_mode=bogus",
            "unknown autoreset_mode 'bogus'; expected one of ['NextStep', 'SameStep', 'Disabled']",
        ),
        ("envs=2&render_mode=rgb_array", "render_mode=rgb_array: this server's env renders nothing"),
    ],
)
def test_bad_query_gets_an_error_then_close_1008(counter_server, query, message):
    """A bad batch query is answered with VALIDATION_ERROR, then a 1008 close; no environment is made."""
    with ws(counter_server, query) as websocket:
        reply = json.loads(websocket.recv(timeout=5 * UNIT))
        assert reply == {"type": "error", "data": {"message": message, "code": "VALIDATION_ERROR"}}
        closed = closed_with(websocket)
    assert closed.rcvd is not None and closed.rcvd.code == 1008
    assert closed.rcvd.reason == message
    assert CounterEnvironment.created == [] and not counter_server.sessions


def test_bad_query_with_a_long_non_ascii_mode_still_closes_1008():
    """An unknown autoreset_mode of many non-ASCII characters is refused like any bad query: error, then 1008."""
    # The server logs the handler's crash after closing; asserting only once it stopped keeps that log from
    # overlapping pytest's own traceback formatting (CPython 3.11's ast is not thread-safe there).
    query = "envs=2&autoreset_mode=" + "%C3%A9" * 100
    with running_server(CounterEnvironment) as server, ws(server, query) as websocket:
        reply = json.loads(websocket.recv(timeout=5 * UNIT))
        closed = closed_with(websocket)
    assert reply["data"]["code"] == "VALIDATION_ERROR"
    assert closed.rcvd is not None and closed.rcvd.code == 1008


# Rendering --------------------------------------------------------------------------------------


def test_render_answers_every_sub_env_s_frame(cartpole_server):
    """With &render_mode=rgb_array a render frame gets one frame per sub-env, equal to local CartPoles':
    raw bytes on a binary session, inline JSON otherwise."""
    local = [gym.make("CartPole-v1", render_mode="rgb_array") for _ in SEEDS]
    try:
        with (
            ws(
                cartpole_server, f"envs={K}&render_mode=rgb_array", subprotocols=[BINARY_SUBPROTOCOL], max_size=None
            ) as fast,
            ws(cartpole_server, "envs=1&render_mode=rgb_array", max_size=None) as plain,
        ):
            send(fast, reset(SEEDS))
            call(plain, reset([SEEDS[0]]))
            for env, seed in zip(local, SEEDS):
                env.reset(seed=seed)
            message = send(fast, {"type": "render"})
            assert isinstance(message, bytes) and message.startswith(BINARY_MAGIC)
            frames = parse_batch_server_frame(message)
            assert isinstance(frames, RenderFrame) and len(frames.frame) == K
            for frame, env in zip(frames.frame, local):
                assert frame.dtype == np.uint8 and frame.shape == (400, 600, 3)
                np.testing.assert_array_equal(frame, env.render())
            text = send(plain, {"type": "render"})
            assert isinstance(text, str)
            inline = parse_batch_server_frame(text)
            assert isinstance(inline, RenderFrame)
            np.testing.assert_array_equal(inline.frame[0], frames.frame[0])
    finally:
        for env in local:
            env.close()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "envs=2&render_mode=ansi",
            "render_mode=ansi is not one of this env's ['rgb_array', 'rgb_array_list']",
        ),
        *[  # offered by no session: a window would open where the env runs
            (
                query,
                "render_mode=human would open a window where the env runs: ask rgb_array for its frames, "
                "or watch the session on this server's /web page",
            )
            for query in ("envs=2&render_mode=human", "envs=2&backend=gymnasium&render_mode=human")
        ],
        (
            "envs=2&backend=gymnasium&render_mode=rgb_array_list",
            "render_mode=rgb_array_list is not one of the gymnasium vector env's ['rgb_array']",
        ),
        # Found by the live fuzzer: a backend no server knows was a FACTORY_ERROR and close 1011.
        ("envs=2&backend=nope", "backend=nope: expected one of ['gymnasium', 'envpool', 'ale', 'openenv_gym']"),
    ],
)
def test_a_query_the_server_cannot_serve_is_refused(cartpole_server, query, message):
    """The session's render mode is checked against /schema's (the vector env's own with a backend), the
    backend's name against those there are: error, then 1008."""
    http_get_json(cartpole_server.url, "/schema")  # what the server publishes, and checks against
    with ws(cartpole_server, query) as websocket:
        reply = json.loads(websocket.recv(timeout=5 * UNIT))
        assert reply == {"type": "error", "data": {"message": message, "code": "VALIDATION_ERROR"}}
        closed = closed_with(websocket)
    assert closed.rcvd is not None and closed.rcvd.code == 1008


def test_no_render_mode_a_session_cannot_use_is_published(cartpole_server):
    """CartPole's own metadata lists "human": /schema (and so the web page) offers only what a session may ask."""
    schema = http_get_json(cartpole_server.url, "/schema")
    assert "human" in CartPoleEnv.metadata["render_modes"]
    assert schema["render"]["modes"] == ["rgb_array", "rgb_array_list"]
    backends = schema["vector_backends"]
    assert backends and all("human" not in entry.get("render_modes", []) for entry in backends.values())


# Autoreset --------------------------------------------------------------------------------------

END, ONE = {"amount": 10}, {"amount": 1}  # a CounterEnvironment ends when its count reaches 10


def test_next_step_autoreset(counter_server):
    """NextStep: a sub-env that ended is reset by the next step, with reward 0 and false flags."""
    with ws(counter_server, "envs=2&autoreset_mode=NextStep") as websocket:
        call(websocket, reset())
        data = call(websocket, step(END, ONE))["data"]
        assert data["observations"] == [{"count": 10}, {"count": 1}]
        assert (data["rewards"], data["terminated"], data["final"]) == ([10.0, 1.0], [True, False], {})
        data = call(websocket, step(ONE, ONE))["data"]
        assert data["observations"] == [{"count": 0}, {"count": 2}]
        assert (data["rewards"], data["terminated"], data["truncated"]) == ([0.0, 1.0], [False, False], [False, False])
        assert call(websocket, step(ONE, ONE))["data"]["observations"] == [{"count": 1}, {"count": 3}]


def test_same_step_autoreset(counter_server):
    """SameStep: a sub-env that ends is reset in the same step; its final observation travels in final."""
    with ws(counter_server, "envs=2&autoreset_mode=SameStep") as websocket:
        call(websocket, reset())
        data = call(websocket, step(ONE, END))["data"]
        assert data["observations"] == [{"count": 1}, {"count": 0}]
        assert (data["rewards"], data["terminated"]) == ([1.0, 10.0], [False, True])
        assert data["final"] == {"1": {"observation": {"count": 10}, "info": {}}}
        data = call(websocket, step(ONE, ONE))["data"]
        assert data["observations"] == [{"count": 2}, {"count": 1}]
        assert (data["terminated"], data["final"]) == ([False, False], {})


def test_disabled_autoreset(counter_server):
    """Disabled: stepping an ended sub-env is refused (EPISODE_ENDED) until a masked batch_reset resets it."""
    with ws(counter_server, "envs=2&autoreset_mode=Disabled") as websocket:
        call(websocket, reset())
        data = call(websocket, step(END, ONE))["data"]
        assert data["observations"] == [{"count": 10}, {"count": 1}]
        assert (data["terminated"], data["final"]) == ([True, False], {})
        reply = call(websocket, step(ONE, ONE))
        assert reply["data"]["code"] == "EPISODE_ENDED"
        assert reply["data"]["message"].startswith("sub-env 0 ended")
        data = call(websocket, reset(mask=[True, False]))["data"]
        assert data["observations"] == [{"count": 0}, {"count": 1}]
        assert call(websocket, step(ONE, ONE))["data"]["observations"] == [{"count": 1}, {"count": 2}]


# Capacity ---------------------------------------------------------------------------------------


def test_capacity_counts_sub_envs():
    """With max_sessions=4 a batch of 3 fills 3 slots: a batch of 2 is refused, a plain /ws session fits."""
    with running_server(load_factory("CartPole-v1"), max_sessions=4) as server:
        with ws(server, "envs=3") as first:
            call(first, reset())  # the session is registered once it answers
            assert server.active_sessions == 3
            with ws(server, "envs=2") as second:
                refusal = json.loads(second.recv(timeout=5 * UNIT))
                assert refusal["data"]["code"] == "CAPACITY_REACHED"
                assert (refusal["data"]["active_sessions"], refusal["data"]["max_sessions"]) == (3, 4)
                assert refusal["data"]["requested"] == 2
                closed = closed_with(second)
                assert closed.rcvd is not None and closed.rcvd.code == 1013
            with ws(server, "", path="/ws") as plain:
                reply = call(plain, {"type": "reset", "data": {"seed": 0}})
                assert reply["type"] == "observation"
                assert server.active_sessions == 4
            assert call(first, step(*[{"action": 1}] * 3))["type"] == "batch_result"
        assert wait_until(lambda: server.active_sessions == 0, 5 * UNIT)
        with ws(server, "envs=4") as full:
            assert call(full, reset())["type"] == "batch_result"


# Binary codec -----------------------------------------------------------------------------------


def test_binary_results_equal_the_json_ones(cartpole_server):
    """Offering the binary subprotocol gives packed batch_result bytes whose arrays equal the JSON session's."""
    actions = step({"action": 1}, {"action": 0}, {"action": 1})
    with ws(cartpole_server) as plain, ws(cartpole_server, subprotocols=[BINARY_SUBPROTOCOL]) as fast:
        assert plain.subprotocol is None and fast.subprotocol == BINARY_SUBPROTOCOL
        for frame in (reset(SEEDS), actions, actions):
            expected = call(plain, frame)
            message = send(fast, frame)
            assert isinstance(message, bytes) and message.startswith(BINARY_MAGIC)
            parsed = parse_batch_server_frame(message)
            assert isinstance(parsed, BatchResultFrame)
            got = np.asarray(parsed.observations)
            assert got.dtype == np.float32 and got.shape == (K, 4)
            np.testing.assert_array_equal(got, observations(expected))
            data = expected["data"]
            assert parsed.infos == data["infos"]
            assert (parsed.rewards, parsed.terminated, parsed.truncated) == (
                data.get("rewards"),
                data.get("terminated"),
                data.get("truncated"),
            )
        # Errors stay JSON text on a binary session.
        reply = call(fast, step({"action": 0}))
        assert reply["data"] == {"message": f"1 actions for {K} sub-envs", "code": "VALIDATION_ERROR"}


def test_binary_first_partial_reset_is_answered():
    """A first batch_reset that leaves sub-envs never reset is refused clearly; the session lives on."""
    replies: list = []
    with running_server(load_factory("CartPole-v1")) as server, ws(server, subprotocols=[BINARY_SUBPROTOCOL]) as fast:
        with contextlib.suppress(ConnectionClosed):  # asserted once the server stopped, as above
            replies.append(send(fast, reset(mask=[True, False, False])))
            replies.append(send(fast, reset(SEEDS)))
    assert len(replies) == 2, "the connection closed instead of answering the partial reset"
    refusal = json.loads(replies[0])
    assert refusal["data"]["code"] == "VALIDATION_ERROR"
    assert "were never reset: the first batch_reset must select every sub-env" in refusal["data"]["message"]
    assert isinstance(replies[1], bytes) and replies[1].startswith(BINARY_MAGIC)


def test_non_box_env_answers_json_even_when_binary_is_offered():
    """A server whose env has no Box observation space answers JSON text on a binary session."""
    with running_server(load_factory("openenv_gym.envs.echo:EchoEnvironment")) as server:
        with ws(server, "envs=2", subprotocols=[BINARY_SUBPROTOCOL]) as websocket:
            reply = call(websocket, reset())
            assert reply["data"]["observations"] == [{"echoed_message": "", "message_length": 0}] * 2
            reply = call(websocket, step({"message": "hi"}, {"message": "abcd"}))
            assert reply["data"]["observations"] == [
                {"echoed_message": "hi", "message_length": 2},
                {"echoed_message": "abcd", "message_length": 4},
            ]
            assert reply["data"]["rewards"] == pytest.approx([0.2, 0.4])


# Environment lifetime ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["close frame", "client vanishes"])
def test_every_sub_env_is_closed_when_the_connection_ends(counter_server, how):
    """All K sub-envs' close() run, and the slots free up, whether the client says close or just goes."""
    with ws(counter_server, "envs=4") as websocket:
        assert call(websocket, reset())["type"] == "batch_result"
        assert len(CounterEnvironment.created) == 4 and counter_server.active_sessions == 4
        if how == "close frame":
            websocket.send('{"type":"close"}')
            closed_with(websocket)
        else:
            websocket.socket.shutdown(socket.SHUT_RDWR)
        assert wait_until(lambda: len(CounterEnvironment.closed) == 4, 5 * UNIT)
    assert set(map(id, CounterEnvironment.closed)) == set(map(id, CounterEnvironment.created))
    assert wait_until(lambda: counter_server.active_sessions == 0, 5 * UNIT)


class FailsOnThird(CounterEnvironment):
    """A factory whose third instance of each batch cannot be made."""

    made = 0

    def __init__(self) -> None:
        FailsOnThird.made += 1
        if FailsOnThird.made % 3 == 0:
            raise OSError("no third device")
        super().__init__()


def test_factory_failing_midway_closes_the_sub_envs_already_made():
    """If one sub-env cannot be made, the client gets FACTORY_ERROR and the ones made are closed."""
    FailsOnThird.made = 0
    CounterEnvironment.created.clear()
    CounterEnvironment.closed.clear()
    with running_server(FailsOnThird) as server, ws(server, "envs=3") as websocket:
        reply = json.loads(websocket.recv(timeout=5 * UNIT))
        assert reply["data"]["code"] == "FACTORY_ERROR"
        assert "OSError: no third device" in reply["data"]["message"]
        closed = closed_with(websocket)
        assert closed.rcvd is not None and closed.rcvd.code == 1011
        assert wait_until(lambda: len(CounterEnvironment.closed) == 2, 5 * UNIT)
        assert wait_until(lambda: not server.sessions, 5 * UNIT)
