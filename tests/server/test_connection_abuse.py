"""Abuse of connections against a real EnvServer on loopback: half-open TCP connections, silent
handshakes, clients that never read their replies, floods past the session and connection limits.
Every slot comes back within the configured timeouts, and a well-behaved client is served
meanwhile. Figures (how long, how much memory, how much slower) are benchmarks/connection_abuse.py's.

The server and the misbehaving clients share one event loop (thousands of connections from
threads would crawl on a loaded machine); the clients are raw sockets all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from openenv_gym.cli import build_parser
from openenv_gym.server import EnvServer
from openenv_gym.server.connections import ConnectionLimit, default_max_connections
from openenv_gym.server.env_server import WRITE_LIMIT
from tests.abuse_clients import RawSession, closing_all, half_open, is_closed, raise_open_file_limit, wait_for_state
from tests.testing_env import BlobEnvironment, CounterEnvironment
from tests.utils import UNIT, run_async

FLOOD = 1000
BIG_STEP = {"type": "step", "data": {"size": 60000}}


@contextlib.asynccontextmanager
async def serving(factory: Callable[[], Any], **kwargs: Any) -> AsyncIterator[EnvServer]:
    """A server on this loop; the sockets put in the list are closed before it stops."""
    async with EnvServer(factory, port=0, **kwargs) as server:
        yield server


@pytest.fixture
def counter():
    CounterEnvironment.created.clear()
    CounterEnvironment.closed.clear()
    yield CounterEnvironment
    CounterEnvironment.created.clear()
    CounterEnvironment.closed.clear()


@pytest.fixture(scope="module")
def open_files():
    """Enough file descriptors for the floods: client and server ends live in this process."""
    if raise_open_file_limit(5 * FLOOD) < 5 * FLOOD:
        pytest.skip(f"the open-file limit (ulimit -n) is below {5 * FLOOD}")


async def well_behaved(server: EnvServer, steps: int = 20, action: dict[str, Any] | None = None) -> int:
    """Reset and step a session to the end; the steps answered."""
    async with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=10 * UNIT) as websocket:
        await websocket.send(json.dumps({"type": "reset"}))
        reply = json.loads(await asyncio.wait_for(websocket.recv(), 10 * UNIT))
        assert reply["type"] == "observation", reply
        for _ in range(steps):
            await websocket.send(json.dumps({"type": "step", "data": action or {"amount": 0}}))
            reply = json.loads(await asyncio.wait_for(websocket.recv(), 10 * UNIT))
            assert reply["type"] == "observation", reply
        return steps


def buffered_replies(server: EnvServer) -> list[int]:
    """Bytes each session's transport holds, not yet taken by its client."""
    return [session.connection.transport.get_write_buffer_size() for session in server.sessions]


# Half-open TCP ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_half_open_connections_are_closed_by_the_handshake_timeout(counter, open_files):
    """1,000 connections that send nothing or half a request hold no session, do not stop a good
    client meanwhile, and are all closed once the handshake timeout passes."""

    async def body() -> None:
        async with serving(counter, max_sessions=2, handshake_timeout=3.0 * UNIT) as server:
            with closing_all() as socks:
                for index in range(FLOOD):
                    socks.append(await half_open(server.port, partial=index % 2 == 1))
                assert await well_behaved(server) == 20
                assert await wait_for_state(lambda: server.active_sessions == 0, 5 * UNIT)
                assert len(counter.created) == 1  # the good client's: none for the half-open ones
                closed = await asyncio.gather(*(is_closed(sock, 10 * UNIT) for sock in socks))
                assert all(closed)
                assert await wait_for_state(lambda: server.connections.open == 0, 5 * UNIT)

    run_async(body(), 120 * UNIT)


# Silent handshakes ----------------------------------------------------------------------------


@pytest.mark.slow
def test_capacity_is_whole_again_after_half_open_and_silent_floods(counter, open_files):
    """1,000 half-open connections and 1,000 handshakes that go silent: sessions past the limit are
    refused (no environment is made for them), the silent sessions are reaped, and within the idle
    timeout of the flood every slot is free and a new client gets a session."""
    idle = 1.0 * UNIT

    async def body() -> None:
        async with serving(counter, max_sessions=4, idle_timeout=idle, handshake_timeout=2.0 * UNIT) as server:
            with closing_all() as socks:
                for index in range(FLOOD):
                    socks.append(await half_open(server.port, partial=index % 2 == 1))
                sessions = []
                firsts = []  # half the silent clients read what they are sent; the others read nothing
                peak = 0
                for index in range(FLOOD):
                    session = await RawSession.open(server.port)
                    socks.append(session)
                    sessions.append(session)
                    if index % 2 == 0:
                        firsts.append(asyncio.ensure_future(session.next_frame(60 * UNIT)))
                    peak = max(peak, server.active_sessions)
                assert all(session.opened for session in sessions)
                assert peak <= 4
                # Within the idle timeout (plus the reaper's quarter and some slack) the slots are back.
                assert await wait_for_state(lambda: server.active_sessions == 0, idle + 5 * UNIT)
                assert len(counter.closed) == len(counter.created)
                assert await well_behaved(server) == 20
                # Each silent handshake was told: refused at capacity, or (a slot it held) closed as idle.
                frames = await asyncio.gather(*firsts)
                refused = [f for f in frames if f is not None and f.opcode.name == "TEXT"]
                reaped = [f for f in frames if f is not None and f.opcode.name == "CLOSE"]
                assert all(json.loads(f.data)["data"]["code"] == "CAPACITY_REACHED" for f in refused)
                assert all(f.data[:2] == (1001).to_bytes(2, "big") for f in reaped)
                assert len(refused) + len(reaped) == len(firsts)
                assert len(refused) >= len(firsts) // 2
                # Nobody refused cost an environment (the last one is the good client's).
                assert len(counter.created) - 1 <= FLOOD - len(refused)

    run_async(body(), 180 * UNIT)


def test_a_silent_session_gets_a_close_frame_saying_why(counter):
    """The idle reaper releases the env at once, then closes the connection with 1001 and a reason."""

    async def body() -> None:
        async with serving(counter, idle_timeout=0.3 * UNIT) as server:
            with closing_all() as socks:
                session = await RawSession.open(server.port)
                socks.append(session)
                frame = await session.next_frame(10 * UNIT)
                assert frame is not None and frame.opcode.name == "CLOSE"
                assert frame.data[:2] == (1001).to_bytes(2, "big") and b"idle" in frame.data
                # The client never answers the close: its slot is free all the same.
                assert await wait_for_state(lambda: server.active_sessions == 0, 5 * UNIT)
                assert len(counter.closed) == 1

    run_async(body(), 30 * UNIT)


def test_a_client_that_resets_its_connection_frees_its_slot_at_once(counter):
    """A client that vanishes with a reset (no close frame) frees its slot without any timeout."""

    async def body() -> None:
        async with serving(counter, max_sessions=1, idle_timeout=None) as server:
            session = await RawSession.open(server.port)
            assert await wait_for_state(lambda: server.active_sessions == 1, 5 * UNIT)
            session.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            session.close()  # SO_LINGER 0: RST, not FIN
            assert await wait_for_state(lambda: server.active_sessions == 0, 5 * UNIT)
            assert await well_behaved(server, steps=1) == 1

    run_async(body(), 30 * UNIT)


# Clients that never read -------------------------------------------------------------------------


def test_unread_replies_drop_the_session_after_the_send_timeout():
    """A client that sends steps and never reads: the server's buffer stays within its write limit,
    the idle reaper's busy rule does not spare the session, and its slot comes back once the send
    timeout passes."""

    async def body() -> None:
        async with serving(BlobEnvironment, max_sessions=1, send_timeout=3.0 * UNIT) as server:
            with closing_all() as socks:
                session = await RawSession.open(server.port, receive_buffer=4096)
                socks.append(session)
                await session.fill_without_reading(BIG_STEP)
                assert await wait_for_state(lambda: any(s.sending_since is not None for s in server.sessions), 5 * UNIT)
                stuck = list(server.sessions)
                assert len(stuck) == 1 and not stuck[0].busy
                assert max(buffered_replies(server)) <= WRITE_LIMIT + 70000  # the limit, plus one reply written whole
                assert await wait_for_state(lambda: server.active_sessions == 0, 10 * UNIT)
                assert await is_closed(session.sock, 10 * UNIT)
                assert await well_behaved(server, steps=1, action={"size": 1}) == 1

    run_async(body(), 60 * UNIT)


@pytest.mark.slow
def test_a_good_client_is_served_beside_fifty_non_readers():
    """50 sessions stuck on unread replies slow nobody else to a stop: a good client's step loop
    completes (how fast is the benchmark's), and each stuck session buffers at most its write limit."""

    async def body() -> None:
        async with serving(BlobEnvironment, max_sessions=64, send_timeout=None) as server:
            with closing_all() as socks:
                for _ in range(50):
                    session = await RawSession.open(server.port, receive_buffer=4096)
                    socks.append(session)
                    await session.fill_without_reading(BIG_STEP)
                assert await wait_for_state(
                    lambda: sum(s.sending_since is not None for s in server.sessions) == 50, 10 * UNIT
                )
                assert await well_behaved(server, steps=200, action={"size": 16}) == 200
                assert max(buffered_replies(server)) <= WRITE_LIMIT + 70000

    run_async(body(), 120 * UNIT)


# Floods and the connection limit ----------------------------------------------------------------


def test_connections_past_the_limit_get_503_with_retry_after():
    """Past max_connections a connection is answered 503 with Retry-After before its request is read;
    the slots come back as soon as connections close."""

    async def body() -> None:
        async with serving(CounterEnvironment, max_connections=5) as server:
            with closing_all() as socks:
                for _ in range(5):
                    socks.append(await half_open(server.port))
                assert await wait_for_state(lambda: server.connections.open == 5, 5 * UNIT)
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=10 * UNIT):
                        pass
                response = refused.value.response
                assert response.status_code == 503 and response.headers["Retry-After"] == "1"
                assert json.loads(response.body)["max_connections"] == 5
                assert server.connections.refused == 1
                for sock in socks:
                    sock.close()
                assert await wait_for_state(lambda: server.connections.open == 0, 5 * UNIT)
                assert await well_behaved(server, steps=1) == 1

    run_async(body(), 30 * UNIT)


@pytest.mark.slow
def test_a_flood_of_clients_past_max_sessions_is_refused_and_costs_no_environment(counter):
    """Hundreds of clients at once against two slots: two get sessions, the rest CAPACITY_REACHED,
    only two environments are made, and every connection is gone afterwards."""
    count = 300

    async def body() -> None:
        answered = 0
        all_answered = asyncio.Event()

        async def one(port: int) -> str:
            nonlocal answered
            async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30 * UNIT) as websocket:
                with contextlib.suppress(ConnectionClosed):  # a refusal comes unasked, and closes
                    await websocket.send(json.dumps({"type": "reset"}))
                reply = json.loads(await asyncio.wait_for(websocket.recv(), 30 * UNIT))
                answered += 1
                if answered == count:
                    all_answered.set()
                if reply["type"] == "observation":  # hold the slot until everyone has an answer
                    await asyncio.wait_for(all_answered.wait(), 60 * UNIT)
                    return "session"
                return str(reply["data"]["code"])

        async with serving(counter, max_sessions=2) as server:
            outcomes = await asyncio.gather(*(one(server.port) for _ in range(count)))
            assert (outcomes.count("session"), outcomes.count("CAPACITY_REACHED")) == (2, count - 2)
            assert len(counter.created) == 2
            assert await wait_for_state(lambda: server.connections.open == 0 and not server.sessions, 10 * UNIT)

    run_async(body(), 120 * UNIT)


# Knobs ------------------------------------------------------------------------------------------


def test_limits_are_checked():
    with pytest.raises(ValueError, match="max_connections"):
        EnvServer(CounterEnvironment, max_connections=0)
    with pytest.raises(ValueError, match="handshake_timeout"):
        EnvServer(CounterEnvironment, handshake_timeout=0)
    with pytest.raises(ValueError, match="send_timeout"):
        EnvServer(CounterEnvironment, send_timeout=-1)
    with pytest.raises(ValueError, match="max_frame_bytes"):
        EnvServer(CounterEnvironment, max_frame_bytes=0)
    assert EnvServer(CounterEnvironment).connections.limit == default_max_connections()
    assert repr(ConnectionLimit(3)) == "ConnectionLimit(0/3 open, 0 refused)"


def test_serve_flags_set_the_limits(capsys):
    args = build_parser().parse_args(
        ["serve", "X", "--max-connections", "100", "--handshake-timeout", "2.5", "--send-timeout", "none"]
    )
    assert (args.max_connections, args.handshake_timeout, args.send_timeout) == (100, 2.5, None)
    defaults = build_parser().parse_args(["serve", "X"])
    assert (defaults.max_connections, defaults.handshake_timeout, defaults.send_timeout) == (None, 10.0, 30.0)
    for bad in (["--max-connections", "0"], ["--handshake-timeout", "none"], ["--send-timeout", "nan"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "X", *bad])
    assert "expected" in capsys.readouterr().err
