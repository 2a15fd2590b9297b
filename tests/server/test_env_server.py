"""EnvServer over real sockets: HTTP routes, bad input, capacity, frame size, idle reaping, env close."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
import urllib.request

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_gym.client.sync_client import EnvClient
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.server import EnvServer
from tests.testing_env import SLOW_CLOSES_BEGUN, BrokenFactoryEnvironment, CounterEnvironment, make_slow_closing
from tests.utils import UNIT, running_server, wait_until


def ws(server: EnvServer, **kwargs):
    """A raw WebSocket to the server's /ws (legacy=True: the test closes it itself)."""
    return connect(server.url.replace("http", "ws") + "/ws", open_timeout=5 * UNIT, legacy=True, **kwargs)


@contextlib.contextmanager
def ws_owner():
    """A list to put connections in; they are closed on exit, after the server is gone."""
    connections: list = []
    try:
        yield connections
    finally:
        for connection in connections:
            connection.close()


def call(websocket, frame) -> dict:
    websocket.send(frame if isinstance(frame, (str, bytes)) else json.dumps(frame))
    return json.loads(websocket.recv(timeout=5 * UNIT))


def get(server: EnvServer, path: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=5 * UNIT) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def counter_server():
    CounterEnvironment.created.clear()
    CounterEnvironment.closed.clear()
    with running_server(CounterEnvironment) as server:
        yield server


def test_binds_loopback_by_default():
    """A server binds 127.0.0.1 unless told otherwise."""
    assert EnvServer(EchoEnvironment).host == "127.0.0.1"
    with running_server(EchoEnvironment) as server:
        assert server.url.startswith("http://127.0.0.1:")


def test_http_routes():
    """/health, /schema (with Gymnasium spaces and tools) and /metadata answer JSON; unknown paths get 404."""
    with running_server(EchoEnvironment) as server:
        assert get(server, "/health") == (200, {"status": "healthy"})
        status, schema = get(server, "/schema")
        assert status == 200
        assert set(schema) == {"action", "observation", "state", "spaces", "tools", "snapshot"}
        assert "message" in schema["action"]["properties"]
        assert [tool["name"] for tool in schema["tools"]] == ["echo_message", "echo_with_length"]
        assert schema["spaces"]["action"]["type"] == "Dict"
        status, metadata = get(server, "/metadata")
        assert (status, metadata["name"]) == (200, "echo_env")
        status, body = get(server, "/nope")
        assert status == 404 and "/ws" in body["message"]


def test_metadata_publishes_the_session_limits():
    """/metadata says how many sessions the server takes and when it closes an idle one (None: never)."""
    with running_server(EchoEnvironment, max_sessions=3, idle_timeout=7.5) as server:
        _, metadata = get(server, "/metadata")
        assert (metadata["max_sessions"], metadata["idle_timeout"]) == (3, 7.5)
    with running_server(EchoEnvironment, idle_timeout=None) as server:
        _, metadata = get(server, "/metadata")
        assert (metadata["max_sessions"], metadata["idle_timeout"]) == (64, None)


def test_reset_step_state_close(counter_server):
    """A session resets, steps, reports its state and closes its environment on a close frame."""
    with ws(counter_server) as websocket:
        reply = call(websocket, {"type": "reset", "data": {"seed": 3, "episode_id": "ep-1"}})
        assert reply == {
            "type": "observation",
            "data": {"observation": {"count": 0}, "reward": 0.0, "done": False, "truncated": False, "info": {}},
        }
        reply = call(websocket, {"type": "step", "data": {"amount": 4}})
        assert reply["data"]["observation"] == {"count": 4} and reply["data"]["reward"] == 4.0
        assert call(websocket, {"type": "state"}) == {"type": "state", "data": {"episode_id": "ep-1", "step_count": 1}}
        websocket.send('{"type":"close"}')
        with pytest.raises(ConnectionClosed):
            websocket.recv(timeout=5 * UNIT)
    assert wait_until(lambda: len(CounterEnvironment.closed) == 1, 5 * UNIT)


@pytest.mark.parametrize(
    ("frame", "code", "message"),
    [
        ("{not json", "INVALID_JSON", "Invalid JSON"),
        (b"\x00\xff\xfe binary garbage", "INVALID_JSON", "binary frames are not accepted"),
        ('{"type":"bogus"}', "UNKNOWN_TYPE", "Unknown message type: bogus"),
        ('{"type":"step","data":{"amount":1},"timeout_s":5}', "VALIDATION_ERROR", "unexpected top-level keys"),
        ('{"type":"step","data":{"amount":"many"}}', "VALIDATION_ERROR", "invalid action"),
        ('{"type":"step","data":{"amount":1000}}', "VALIDATION_ERROR", "invalid action"),
        ('{"type":"step","data":{"unknown_field":1}}', "VALIDATION_ERROR", "invalid action"),
        ('{"type":"step","data":{"fail":true}}', "EXECUTION_ERROR", "step failed: RuntimeError: asked to fail"),
        ("[" * 100_000 + "]" * 100_000, "INVALID_JSON", "nested too deeply"),
        # Found by the live fuzzer: the reply echoes a lone surrogate, which strict UTF-8 refused
        # inside websockets (the connection was dropped); it travels as its JSON escape now.
        ('{"type":"\\ud800"}', "UNKNOWN_TYPE", "Unknown message type: \ud800"),
        # Found by atheris: a tool action's type that is an object raised TypeError (unhashable).
        ('{"type":"step","data":{"type":{"amount":1}}}', "VALIDATION_ERROR", "invalid action"),
    ],
)
def test_bad_input_gets_an_error_and_the_session_lives_on(counter_server, frame, code, message):
    """Each kind of bad frame gets an error frame with its code, and the next step still works."""
    with ws(counter_server) as websocket:
        call(websocket, {"type": "reset"})
        reply = call(websocket, frame)
        assert reply["type"] == "error"
        assert reply["data"]["code"] == code
        assert message in reply["data"]["message"]
        assert call(websocket, {"type": "step", "data": {"amount": 2}})["data"]["observation"] == {"count": 2}


def test_validation_error_lists_pydantic_errors(counter_server):
    """A VALIDATION_ERROR for a bad action carries pydantic's error list, as OpenEnv's does."""
    with ws(counter_server) as websocket:
        call(websocket, {"type": "reset"})
        reply = call(websocket, {"type": "step", "data": {"amount": -1}})
        assert reply["data"]["errors"][0]["loc"] == ["amount"]


def test_execution_error_carries_the_remote_traceback(counter_server):
    """An exception in step travels with its traceback, so the client can show where it happened."""
    with ws(counter_server) as websocket:
        call(websocket, {"type": "reset"})
        reply = call(websocket, {"type": "step", "data": {"fail": True}})
        assert "RuntimeError: asked to fail" in reply["data"]["traceback"]


def test_step_before_reset(counter_server):
    """A step before any reset is refused with SESSION_ERROR; after a reset it works."""
    with ws(counter_server) as websocket:
        reply = call(websocket, {"type": "step", "data": {"amount": 1}})
        assert reply["data"] == {"message": "step before reset: send a reset frame first", "code": "SESSION_ERROR"}
        call(websocket, {"type": "reset"})
        assert call(websocket, {"type": "step", "data": {"amount": 1}})["type"] == "observation"


def test_oversize_frame_closes_with_a_clear_reason():
    """A frame above max_frame_bytes closes the connection with code 1009 and both sizes in the reason."""
    with running_server(EchoEnvironment, max_frame_bytes=1000) as server:
        with ws(server) as websocket:
            call(websocket, {"type": "reset"})
            websocket.send(json.dumps({"type": "step", "data": {"message": "x" * 5000}}))
            with pytest.raises(ConnectionClosed) as caught:
                websocket.recv(timeout=5 * UNIT)
        close = caught.value.rcvd
        assert close is not None and close.code == 1009
        assert re.search(r"frame with \d+ bytes exceeds limit of 1000 bytes", close.reason)


def test_capacity_reached():
    """A session beyond max_sessions gets CAPACITY_REACHED with the counts, then a close; the others go on."""
    with running_server(CounterEnvironment, max_sessions=1) as server:
        with ws(server) as first:
            call(first, {"type": "reset"})
            with ws(server) as second:
                refusal = json.loads(second.recv(timeout=5 * UNIT))
                assert refusal["data"]["code"] == "CAPACITY_REACHED"
                assert (refusal["data"]["active_sessions"], refusal["data"]["max_sessions"]) == (1, 1)
                with pytest.raises(ConnectionClosed) as caught:
                    second.recv(timeout=5 * UNIT)
                assert caught.value.rcvd is not None and caught.value.rcvd.code == 1013
            assert call(first, {"type": "step", "data": {}})["data"]["observation"] == {"count": 1}
        # The slot frees up when the first session ends.
        assert wait_until(lambda: not server.sessions, 5 * UNIT)
        with ws(server) as third:
            assert call(third, {"type": "reset"})["type"] == "observation"


def test_a_newcomer_waits_for_the_slot_of_a_closing_session():
    """A session cut off while its env takes a while to close: a newcomer gets that slot once it is
    free instead of CAPACITY_REACHED (a client coming back after its connection was cut)."""
    SLOW_CLOSES_BEGUN.clear()
    with running_server(lambda: make_slow_closing(0.5 * UNIT), max_sessions=1) as server:
        first = EnvClient(server.url)
        try:
            first.reset()
            first.connection._sock.shutdown(socket.SHUT_RDWR)  # the connection ends without a close frame
            assert wait_until(lambda: SLOW_CLOSES_BEGUN, 5 * UNIT), "the server did not see the connection end"
            with EnvClient(server.url, call_timeout=10 * UNIT) as second:
                assert second.reset().done is False
                assert len(server.sessions) == 1
        finally:
            first.close()


def test_default_capacity_follows_the_concurrency_flag():
    """Environments that do not declare SUPPORTS_CONCURRENT_SESSIONS get one session, as in OpenEnv."""

    class Single(CounterEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = False

    assert EnvServer(Single).max_sessions == 1
    assert EnvServer(CounterEnvironment).max_sessions == 64


def test_idle_session_is_reaped_and_its_env_closed():
    """A session silent for longer than idle_timeout is closed with a reason, and its env's close() runs."""
    CounterEnvironment.closed.clear()
    with running_server(CounterEnvironment, idle_timeout=0.3 * UNIT) as server:
        with ws(server) as websocket:
            call(websocket, {"type": "reset"})
            with pytest.raises(ConnectionClosed) as caught:
                websocket.recv(timeout=10 * UNIT)
            assert caught.value.rcvd is not None and caught.value.rcvd.code == 1001
            assert "idle" in caught.value.rcvd.reason
        assert wait_until(lambda: len(CounterEnvironment.closed) == 1, 5 * UNIT)
        assert wait_until(lambda: not server.sessions, 5 * UNIT)  # the slot frees after the close


def test_busy_session_is_not_reaped():
    """A step that runs longer than the idle timeout is not mistaken for idleness."""
    with running_server(CounterEnvironment, idle_timeout=0.2 * UNIT) as server:
        with ws(server) as websocket:
            call(websocket, {"type": "reset"})
            reply = call(websocket, {"type": "step", "data": {"sleep": 0.6 * UNIT}})
            assert reply["data"]["observation"] == {"count": 1}


@pytest.mark.parametrize("how", ["client vanishes", "server stops"])
def test_env_close_runs_however_the_session_ends(how):
    """The environment's close() runs when the client drops the TCP connection or the server stops."""
    CounterEnvironment.closed.clear()
    with ws_owner() as websocket, running_server(CounterEnvironment) as server:
        websocket.append(ws(server))
        call(websocket[0], {"type": "reset"})
        if how == "client vanishes":
            websocket[0].socket.shutdown(socket.SHUT_RDWR)
            assert wait_until(lambda: len(CounterEnvironment.closed) == 1, 5 * UNIT)
        assert len(CounterEnvironment.closed) <= 1
    # Leaving running_server stopped the server, which closes whatever sessions remained.
    assert len(CounterEnvironment.closed) == 1


def test_factory_error():
    """A factory that raises gets FACTORY_ERROR naming it, and the connection closes."""
    with running_server(BrokenFactoryEnvironment) as server:
        with ws(server) as websocket:
            reply = json.loads(websocket.recv(timeout=5 * UNIT))
            assert reply["data"]["code"] == "FACTORY_ERROR"
            assert "OSError: no such device" in reply["data"]["message"]
            assert reply["data"]["factory_name"] == "BrokenFactoryEnvironment"
            with pytest.raises(ConnectionClosed):
                websocket.recv(timeout=5 * UNIT)


def test_reset_kwargs_are_filtered_to_what_reset_accepts(counter_server):
    """Unknown reset keys are dropped, as OpenEnv does, instead of failing the reset."""
    with ws(counter_server) as websocket:
        reply = call(websocket, {"type": "reset", "data": {"seed": 1, "not_a_parameter": True}})
        assert reply["type"] == "observation"


def test_invalid_server_arguments():
    """Nonsense limits are refused when the server is built."""
    with pytest.raises(ValueError, match=re.escape("max_sessions must be at least 1, got 0")):
        EnvServer(EchoEnvironment, max_sessions=0)
    with pytest.raises(ValueError, match=re.escape("idle_timeout must be positive or None, got -1")):
        EnvServer(EchoEnvironment, idle_timeout=-1)


def test_gymnasium_action_that_overflows_is_a_validation_error():
    """An integer too big for the action dtype is refused with VALIDATION_ERROR; the session goes on."""
    from openenv_gym.server.runner import load_factory

    with running_server(load_factory("CartPole-v1")) as server, ws(server) as websocket:
        call(websocket, {"type": "reset", "data": {"seed": 0}})
        for action in (2**70, 1e300):
            reply = call(websocket, {"type": "step", "data": {"action": action}})
            assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert call(websocket, {"type": "step", "data": {"action": 1}})["type"] == "observation"


class SlowClose(CounterEnvironment):
    """Takes a while to close, and counts the instances alive at once."""

    SUPPORTS_CONCURRENT_SESSIONS = False
    alive = 0
    peak = 0

    def __init__(self) -> None:
        super().__init__()
        SlowClose.alive += 1
        SlowClose.peak = max(SlowClose.peak, SlowClose.alive)

    def close(self) -> None:
        time.sleep(0.3 * UNIT)
        SlowClose.alive -= 1


def test_one_session_env_never_has_two_instances():
    """With one session allowed, the next session waits for the old env's close(); never two alive."""
    SlowClose.alive = SlowClose.peak = 0
    with running_server(SlowClose) as server:
        assert server.max_sessions == 1
        for _ in range(3):
            with ws(server) as websocket:
                call(websocket, {"type": "reset"})
            # Retry while the previous session is still closing (it answers CAPACITY_REACHED).
            assert wait_until(lambda: not server.sessions, 5 * UNIT)
        assert SlowClose.peak == 1


def test_tracebacks_stay_home_beyond_loopback():
    """A server bound beyond loopback sends no tracebacks by default; loopback servers do."""
    assert EnvServer(EchoEnvironment, host="0.0.0.0", insecure=True).send_tracebacks is False
    assert EnvServer(EchoEnvironment, host="0.0.0.0", token="t").send_tracebacks is False
    assert EnvServer(EchoEnvironment).send_tracebacks is True
    with running_server(CounterEnvironment, send_tracebacks=False) as server, ws(server) as websocket:
        call(websocket, {"type": "reset"})
        reply = call(websocket, {"type": "step", "data": {"fail": True}})
        assert reply["data"]["code"] == "EXECUTION_ERROR" and "traceback" not in reply["data"]


def test_schema_probe_is_shared_by_concurrent_requests():
    """Concurrent first /schema requests build one probe instance between them."""
    from concurrent.futures import ThreadPoolExecutor

    CounterEnvironment.created.clear()
    with running_server(CounterEnvironment) as server:
        with ThreadPoolExecutor(6) as pool:
            statuses = [status for status, _ in pool.map(lambda _: get(server, "/schema"), range(6))]
        assert statuses == [200] * 6
        assert len(CounterEnvironment.created) == 1
