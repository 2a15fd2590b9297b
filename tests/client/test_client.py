"""Both session clients, sync and async, through the same assertions: calls and every failure mode."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import threading
import time
import weakref

import pytest

from openenv_gym._loop_thread import LoopThread
from openenv_gym.client import AsyncEnvClient, http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.errors import (
    CapacityReachedError,
    ConnectionLostError,
    RemoteError,
    RequestTimeoutError,
    ServerConnectError,
)
from openenv_gym.providers import ProcessProvider
from tests.testing_env import CounterEnvironment
from tests.utils import REPO_ROOT, UNIT, free_port, run_async, running_server


class AsyncClientDriver:
    """AsyncEnvClient driven from synchronous test code, so one suite covers both clients."""

    def __init__(self, base_url: str, **kwargs) -> None:
        self.client = AsyncEnvClient(base_url, **kwargs)
        self.url = self.client.url
        self.loop = LoopThread(name="test-async-client")
        weakref.finalize(self, self.loop.stop)  # close() keeps the loop: a reset may reconnect

    def __getattr__(self, name):
        method = getattr(self.client, name)
        return lambda *args, **kwargs: self.loop.run(method(*args, **kwargs), timeout=120)

    def connect(self):
        self.loop.run(self.client.connect(), timeout=120)
        return self

    def close(self) -> None:
        self.loop.run(self.client.close(), timeout=120)

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc_info) -> None:
        self.close()


@pytest.fixture(params=[EnvClient, AsyncClientDriver], ids=["sync", "async"])
def Client(request):
    """The client class under test."""
    return request.param


@pytest.fixture
def counter_process(monkeypatch):
    """CounterEnvironment served by a real child process."""
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    with ProcessProvider("tests.testing_env:CounterEnvironment") as url:
        yield url


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "localhost:8000"])
def test_a_base_url_without_scheme_names_the_expected_form(url):
    """gym.make(base_url='host:port') says which URL form is expected and suggests the fix."""
    import gymnasium as gym

    expected = f"expected a server URL like 'http://127.0.0.1:8000' or 'ws://host:port', got {url!r}; did you mean 'http://{url}'?"
    with pytest.raises(ValueError, match=re.escape(expected)):
        gym.make("openenv/CartPole-v1", base_url=url)


def test_connection_refused(Client):
    """Nobody listening gives ServerConnectError, a ConnectionError naming the URL, quickly."""
    port = free_port()
    client = Client(f"http://127.0.0.1:{port}", open_timeout=5 * UNIT)
    started = time.monotonic()
    with pytest.raises(ServerConnectError, match=re.escape(f"cannot connect to ws://127.0.0.1:{port}/ws")) as caught:
        client.connect()
    assert isinstance(caught.value, ConnectionError)
    assert time.monotonic() - started < 5 * UNIT
    client.close()


def test_handshake_that_never_completes_times_out(Client):
    """A peer that accepts TCP but never answers the handshake fails after open_timeout, not never."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}", open_timeout=0.3 * UNIT)
        with pytest.raises(ServerConnectError, match=re.escape(f"no handshake within {0.3 * UNIT:g} s")):
            client.connect()
        client.close()


def test_remote_error_keeps_code_message_and_traceback(Client):
    """An error frame becomes RemoteError with its fields, and the session stays usable."""
    with running_server(CounterEnvironment) as server, Client(server.url, env_id="Counter") as client:
        client.reset()
        with pytest.raises(RemoteError) as caught:
            client.step({"fail": True})
        error = caught.value
        assert (error.code, error.env_id) == ("EXECUTION_ERROR", "Counter")
        assert "RuntimeError: asked to fail" in error.details["traceback"] == error.remote_traceback
        assert "\n" not in str(error)  # the reason; the server's traceback is apart
        assert client.step({"amount": 3}).observation == {"count": 3}


def test_call_timeout_then_session_is_abandoned(Client):
    """A step slower than call_timeout raises RequestTimeoutError (a TimeoutError); the session is then closed."""
    with running_server(CounterEnvironment) as server:
        client = Client(server.url, call_timeout=0.3 * UNIT)
        client.connect()
        client.reset()
        started = time.monotonic()
        with pytest.raises(
            RequestTimeoutError, match=re.escape(f"step on {client.url} got no answer within")
        ) as caught:
            client.step({"sleep": 3 * UNIT})
        assert isinstance(caught.value, TimeoutError)
        assert time.monotonic() - started < 2 * UNIT
        with pytest.raises(ConnectionLostError, match=re.escape("the session was abandoned after step timed out")):
            client.step({})
        client.close()


def test_capacity_reached_error(Client):
    """A session refused for capacity raises CapacityReachedError with the server's counts."""
    with running_server(CounterEnvironment, max_sessions=1) as server:
        with Client(server.url) as first:
            first.reset()
            second = Client(server.url)
            with pytest.raises(CapacityReachedError) as caught:
                second.connect().reset()
            assert caught.value.details == {"active_sessions": 1, "max_sessions": 1, "requested": 1}
            second.close()
            assert first.step({}).observation == {"count": 1}


def test_server_killed_mid_call(Client, counter_process):
    """Killing the server during a step raises ConnectionLostError at once, not after the call timeout."""
    client = Client(counter_process, call_timeout=60)
    client.connect()
    client.reset()
    server_pid = _pid_listening_on(counter_process)
    threading.Timer(0.5 * UNIT, os.kill, (server_pid, signal.SIGKILL)).start()
    started = time.monotonic()
    with pytest.raises(ConnectionLostError, match=re.escape("lost during step, closed without a close frame")):
        client.step({"sleep": 30})
    assert time.monotonic() - started < 10 * UNIT
    client.close()


def test_server_killed_between_calls(Client, counter_process):
    """After the server died, the next call raises ConnectionLostError, a ConnectionError."""
    client = Client(counter_process)
    client.connect()
    client.reset()
    os.kill(_pid_listening_on(counter_process), signal.SIGKILL)
    time.sleep(0.2 * UNIT)
    with pytest.raises(ConnectionLostError) as caught:
        client.step({})
    assert isinstance(caught.value, ConnectionError)
    client.close()


def _pid_listening_on(url: str) -> int:
    """The pid of the process listening on url's port (read from /proc, no extra tools)."""
    port = int(url.rsplit(":", 1)[1])
    inodes = set()
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    raise LookupError(f"nobody listens on {url}")


def test_async_client():
    """The async client runs reset/step/state/close and is an async context manager."""

    async def session(url: str) -> tuple:
        async with AsyncEnvClient(url) as client:
            first = await client.reset()
            result = await client.step({"message": "abc"})
            state = await client.state()
        return first, result, state

    with running_server(EchoEnvironment) as server:
        first, result, state = run_async(session(server.url))
    assert first.observation == {"echoed_message": "", "message_length": 0}
    assert result.observation == {"echoed_message": "abc", "message_length": 3}
    assert result.reward == pytest.approx(0.3)
    assert state["step_count"] == 1


def test_sync_client_works_inside_a_running_event_loop():
    """The sync client needs no event loop of its own, so it works from code already inside asyncio."""

    async def inside(url: str) -> dict:
        with EnvClient(url) as client:
            client.reset()
            return client.step({"message": "x"}).observation

    with running_server(EchoEnvironment) as server:
        assert run_async(inside(server.url)) == {"echoed_message": "x", "message_length": 1}


def test_unserializable_arguments_leave_the_session_usable(Client):
    """A reset argument JSON cannot carry raises TypeError before anything is sent; calls go on."""
    import numpy as np

    with running_server(CounterEnvironment) as server, Client(server.url) as client:
        with pytest.raises(TypeError, match="not JSON serializable"):
            client.reset(options={"x": np.float32(1)})
        assert client.reset().observation == {"count": 0}
        assert client.step({"amount": 2}).observation == {"count": 2}


def test_close_then_reset_reconnects(Client):
    """After close(), a reset opens a new session; other calls say the client was closed."""
    with running_server(CounterEnvironment) as server:
        client = Client(server.url)
        client.connect()
        client.reset()
        client.step({"amount": 3})
        client.close()
        with pytest.raises(ConnectionLostError, match=re.escape("the client was closed")):
            client.step({})
        assert client.reset().observation == {"count": 0}
        assert client.step({}).observation == {"count": 1}
        client.close()


def test_cancelled_async_call_abandons_the_session():
    """A cancelled step cannot leave its late reply for the next call: the session is dropped."""

    async def scenario(url: str) -> tuple:
        client = AsyncEnvClient(url)
        await client.reset()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.step({"sleep": 1.0 * UNIT}), 0.1 * UNIT)
        with pytest.raises(ConnectionLostError, match=re.escape("the session was abandoned when step was cancelled")):
            await client.step({})
        first = await client.reset()  # a fresh session on a new connection
        result = await client.step({"amount": 6})
        await client.close()
        return first.observation, result.observation

    with running_server(CounterEnvironment) as server:
        assert run_async(scenario(server.url)) == ({"count": 0}, {"count": 6})


def test_sync_client_shared_between_threads():
    """Calls from many threads on one EnvClient are serialized: every step lands, none collide."""
    from concurrent.futures import ThreadPoolExecutor

    with running_server(CounterEnvironment) as server, EnvClient(server.url) as client:
        client.reset()
        with ThreadPoolExecutor(8) as pool:
            counts = list(pool.map(lambda _: client.step({"amount": 0}).observation["count"], range(200)))
        assert counts == [0] * 200
        assert client.state()["step_count"] == 200


def test_a_server_that_is_not_http_gives_a_connect_error():
    """GET against a port that answers garbage raises ServerConnectError, not http.client's own errors."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def answer_garbage():
            connection, _ = listener.accept()
            with connection:
                connection.recv(1024)
                connection.sendall(b"HELLO THERE\r\n\r\n")

        thread = threading.Thread(target=answer_garbage)
        thread.start()
        with pytest.raises(ServerConnectError, match="BadStatusLine"):
            http_get_json(f"http://127.0.0.1:{port}", "/health", timeout=5 * UNIT)
        thread.join(5 * UNIT)


def test_complete_without_a_request_is_refused():
    """complete() with nothing in flight is a ProtocolError, and the session is untouched."""
    from openenv_gym.errors import ProtocolError

    with running_server(CounterEnvironment) as server, EnvClient(server.url) as client:
        client.reset()
        with pytest.raises(ProtocolError, match="no request in flight"):
            client.complete()
        assert client.step({"amount": 2}).observation == {"count": 2}
