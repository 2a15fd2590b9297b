"""A session's shared-memory segment used against the server: a client that keeps the segment's
descriptor cannot resize it (the server's mapping would take a SIGBUS, and every session with it),
scribbling on it harms its own session's steps only, a client refuses a segment not sealed, and a
channel whose thread dies ends its own session, logged, and no other."""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import socket
import threading
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.client import EnvClient, VectorClient
from openenv_gym.client.shm_link import ShmLink, socket_address
from openenv_gym.errors import ConnectionLostError, ProtocolError
from openenv_gym.protocol.batch import AutoresetMode
from openenv_gym.protocol.shm import ShmLayout, ShmOffer, new_ticket, segment_seals
from openenv_gym.providers import ProcessProvider
from openenv_gym.server.runner import load_factory
from tests.utils import UNIT, pid_alive, running_server, wait_until

NEXT_STEP = AutoresetMode.NEXT_STEP


def _take_offer_keeping_the_fd(client: VectorClient) -> tuple[ShmOffer, socket.socket, int]:
    """What a hostile client does: take its session's offer by hand and keep the descriptor."""
    offer = client._round_trip(lambda: client.begin("shm_open", client.kind.shm_open), ShmOffer)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10 * UNIT)
    sock.connect(socket_address(offer.socket))
    sock.sendall(offer.ticket.encode())
    message, fds, _, _ = socket.recv_fds(sock, 1, 1)
    assert message == b"\1" and len(fds) == 1
    return offer, sock, fds[0]


def _resize_refused(fd: int, size: int) -> bool:
    try:
        os.ftruncate(fd, size)
    except PermissionError:
        return True
    return False


def test_a_client_cannot_resize_its_segment_and_its_scribbles_touch_no_other_session():
    provider = ProcessProvider(target="CartPole-v1", max_episode_steps=500)
    url = provider.start()
    good = VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="shm", call_timeout=30 * UNIT).connect()
    hostile = VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="ws", call_timeout=30 * UNIT).connect()
    try:
        assert good.transport == "shm", good.transport_reason
        good.reset_vector(seed=0)
        hostile.reset_vector(seed=0)
        offer, sock, fd = _take_offer_keeping_the_fd(hostile)
        size = ShmLayout.from_json(offer.layout, 2).size

        def server_serves_the_good_session_on() -> None:
            sock.send(b"\0")  # wakes the hostile session's channel: it looks at its segment at once
            for step in range(20):
                result = good.step_vector(np.full(2, step % 2, dtype=np.int64))
                assert result.observations.shape == (2, 4) and set(result.rewards.tolist()) <= {0.0, 1.0}

        truncated = _resize_refused(fd, 0)  # on an unsealed segment, the server's next look is a SIGBUS
        server_serves_the_good_session_on()
        grown = _resize_refused(fd, 2 * size)
        server_serves_the_good_session_on()
        assert truncated and grown, "the segment could be resized by the client"
        assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & segment_seals() == segment_seals()
        with pytest.raises(PermissionError):  # and the seals cannot be undone or added to
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
        segment = mmap.mmap(fd, size)
        rng = np.random.default_rng(0)
        try:
            for _ in range(20):  # every byte, the header's numbers and flags included
                segment[:] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
                server_serves_the_good_session_on()
        finally:
            segment.close()
            os.close(fd)
            sock.close()
        assert pid_alive(provider.pid)
        with VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="shm") as fresh:  # and it takes new ones
            fresh.reset_vector(seed=1)
            assert fresh.step_vector(np.ones(2, dtype=np.int64)).rewards.tolist() == [1.0, 1.0]
    finally:
        good.close()
        hostile.close()
        provider.stop()


def _offered_segment(layout: ShmLayout, seals: int) -> tuple[ShmOffer, threading.Thread, socket.socket, int]:
    """A server of one offer, handing a segment with ``seals``: the offer, and what to clean up."""
    fd = os.memfd_create("openenv-gym-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, layout.size)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    address = f"\0openenv-gym-test-{os.getpid()}-{seals}"
    listener.bind(address)
    listener.listen(1)
    ticket = new_ticket()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(len(ticket))
            socket.send_fds(connection, [b"\1"], [fd])
            connection.recv(1)  # until the client hangs up

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    return ShmOffer("@" + address[1:], ticket, layout.to_json()), server, listener, fd


def test_a_client_refuses_a_segment_its_server_did_not_seal():
    """The client maps what a server hands it: one that could be shrunk under it is refused."""
    layout = ShmLayout(2, "<i8", (), "<f4", (4,), 4096)
    for seals, refused in ((0, True), (fcntl.F_SEAL_SHRINK, True), (segment_seals(), False)):
        offer, server, listener, fd = _offered_segment(layout, seals)
        try:
            if refused:
                with pytest.raises(ProtocolError, match="not sealed"):
                    ShmLink.open(offer, 2, timeout=10 * UNIT)
            else:
                ShmLink.open(offer, 2, timeout=10 * UNIT).close()
        finally:
            server.join(10 * UNIT)
            listener.close()
            os.close(fd)


class ExitingEnv(gym.Env):
    """Action 2 ends its thread: ``SystemExit``, which a thread's default hook drops without a word."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if int(action) == 2:
            raise SystemExit(3)
        return np.zeros(2, np.float32), 1.0, False, False, {}


def test_a_channel_thread_that_dies_ends_its_own_session_only_and_says_so(caplog):
    caplog.set_level(logging.ERROR, logger="openenv_gym.server.shm_channel")
    with running_server(load_factory("tests.reward_hacking.test_segment:ExitingEnv", inline=False)) as server:
        victim = EnvClient(server.url, transport="shm", call_timeout=60 * UNIT).connect()
        other = EnvClient(server.url, transport="shm", call_timeout=60 * UNIT).connect()
        try:
            assert (victim.transport, other.transport) == ("shm", "shm"), victim.transport_reason
            for client in (victim, other):
                client.reset(seed=0)
                assert client.step_shared(0).rewards[0] == 1.0
            with pytest.raises(ConnectionLostError):  # at once: not after its call timeout
                victim.step_shared(2)
            assert "a session's shared-memory channel failed; that session ends" in caplog.text
            assert "SystemExit" in caplog.text
            assert wait_until(lambda: server.active_sessions == 1, timeout=30 * UNIT)  # its slot came back
            for step in range(10):
                assert other.step_shared(step % 2).rewards[0] == 1.0
            other.reset(seed=1)
        finally:
            victim.close()
            other.close()
