"""A vector session's steps through shared memory: chosen on one host, private, checked by the server, cleaned up."""

from __future__ import annotations

import os
import signal
import socket
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym.client import VectorClient, step_transport
from openenv_gym.client.shm_link import ShmLink, socket_address
from openenv_gym.client.step_transport import shm_unreachable
from openenv_gym.errors import ConnectionLostError, RemoteError, RequestTimeoutError
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.protocol.shm import ShmLayout, ShmOffer
from openenv_gym.providers import ProcessProvider
from openenv_gym.server.shm_channel import layout_for
from tests.utils import kill_stepping_client, segments_mapped, stop, wait_until

NEXT_STEP = WireAutoresetMode.NEXT_STEP


@pytest.fixture
def cartpole_server():
    provider = ProcessProvider(target="CartPole-v1", max_episode_steps=500)
    url = provider.start()
    try:
        yield provider, url
    finally:
        provider.stop()


def test_make_vec_takes_shared_memory_on_this_host_and_says_so():
    before = segments_mapped(os.getpid())
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=1)
    forced_ws = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=1, transport="ws")
    try:
        assert envs.metadata["transport"] == "shm"
        assert "on this host" in envs.metadata["transport_reason"]
        assert forced_ws.metadata["transport"] == "ws"
        assert forced_ws.metadata["transport_reason"] == "transport='ws' asked for"
        assert segments_mapped(os.getpid()) == before + 1  # the ws one maps none
        for env in (envs, forced_ws):
            env.reset(seed=0)
        for action in np.random.default_rng(0).integers(0, 2, (100, 4)):
            a, b = envs.step(action), forced_ws.step(action)
            for got, want in zip(a[:4], b[:4]):
                np.testing.assert_array_equal(got, want)
    finally:
        envs.close()
        forced_ws.close()
    assert segments_mapped(os.getpid()) == before


def test_shm_is_refused_where_it_cannot_serve_with_the_reason():
    with pytest.raises(ValueError, match="transport='shm' serves server-side vector envs"):
        gym.make_vec("openenv/CartPole-v1", num_envs=2, vector_backend="per_env", transport="shm")
    with pytest.raises(ValueError, match="transport must be one of"):
        gym.make_vec("openenv/CartPole-v1", num_envs=2, transport="tcp")
    reason = layout_for(gym.spaces.Discrete(2), gym.spaces.Dict({"x": gym.spaces.Discrete(3)}), 4)
    assert isinstance(reason, str) and "does not batch into one array" in reason
    per_env = gym.make_vec("openenv/CartPole-v1", num_envs=2, vector_backend="per_env")
    try:
        assert per_env.metadata["transport"] == "ws"  # auto: the WebSocket, and why
        assert "one env per sub-env" in per_env.metadata["transport_reason"]
    finally:
        per_env.close()


def test_a_client_elsewhere_falls_back_to_the_websocket_or_fails_clearly(cartpole_server, monkeypatch):
    _, url = cartpole_server
    client = VectorClient(url, 2, NEXT_STEP, "gymnasium")
    assert shm_unreachable(client.url) is None  # a loopback server may share memory
    assert "not on a loopback address" in shm_unreachable(client.url.replace("127.0.0.1", "10.1.2.3"))
    # A server whose socket this process cannot reach (as from a container): auto falls back.
    layout = ShmLayout(2, "<i8", (), "<f4", (4,), 4096).to_json()
    unreachable = ShmOffer("@openenv-gym-shm-nobody-listens-here", "0" * 64, layout)
    with pytest.raises(ConnectionRefusedError):
        ShmLink.open(unreachable, 2, timeout=1.0)
    strict = VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="shm")
    elsewhere = "the server is at 10.1.2.3, not on a loopback address of this host"
    monkeypatch.setattr(step_transport, "shm_unreachable", lambda url: elsewhere)
    with pytest.raises(ConnectionLostError, match=r"transport='shm' cannot be served: the server is at 10\.1\.2\.3"):
        strict.connect()
    lenient = VectorClient(url, 2, NEXT_STEP, "gymnasium")
    with lenient:
        assert lenient.transport == "ws" and "10.1.2.3" in lenient.transport_reason
        assert lenient.reset_vector(seed=0).observations.shape == (2, 4)


def test_the_server_checks_every_request_it_reads_from_the_segment(cartpole_server):
    """Fuzz: garbage in the actions and in every header field the client can write; each request
    is answered (a step or a VALIDATION_ERROR), and the session goes on."""
    _, url = cartpole_server
    rng = np.random.default_rng(7)
    with VectorClient(url, 8, NEXT_STEP, "gymnasium", codec="binary", transport="shm", call_timeout=30) as client:
        link = client.link
        assert link is not None
        with pytest.raises(RemoteError) as before_reset:
            client.step_vector(np.zeros(8, dtype=np.int64))
        assert before_reset.value.code == "SESSION_ERROR"
        client.reset_vector(seed=0)
        answered = {"ok": 0, "refused": 0}
        for _ in range(400):
            raw = link.views.actions.view(np.uint8)
            raw[:] = rng.integers(0, 256, raw.shape, dtype=np.uint8)
            if rng.random() < 0.3:  # or actions that happen to be valid
                link.views.actions[:] = rng.integers(0, 2, 8)
            for field in ("status", "infos_bytes", "reward_dtype", "server_sleeping"):
                link.views.header[field][0] = rng.integers(0, 2**32, dtype=np.uint64)  # the server's fields
            link._seq = int(rng.integers(0, 2**62))  # any new number is a request
            connection = client.connection
            with connection.lock:
                connection._call, connection._deadline = "vector_step", time.monotonic() + 30
                connection._in_flight = connection._link_in_flight = True
                link.ask()
            try:
                result = client.complete()
            except RemoteError as exc:
                assert exc.code == "VALIDATION_ERROR" and "invalid actions" in exc.message
                answered["refused"] += 1
            else:
                assert result.observations.shape == (8, 4)
                answered["ok"] += 1
        assert answered["ok"] > 50 and answered["refused"] > 200
        assert client.step_vector(np.ones(8, dtype=np.int64)).rewards.tolist() == [1.0] * 8
        for bad in (np.array([0, 1, 5, 0, 0, 0, 0, 0]), np.zeros(3, dtype=np.int64), np.zeros((8, 2), np.float32)):
            with pytest.raises(RemoteError) as refused:
                client.step_vector(bad)
            assert refused.value.code == "VALIDATION_ERROR"
        with pytest.raises(RemoteError, match="cannot hold"):
            client.step_vector(np.full(8, 2**63 + 1, dtype=np.uint64))
        assert client.step_vector(np.zeros(8, dtype=np.int64)).rewards.shape == (8,)


def test_an_offer_is_for_its_client_only(cartpole_server):
    """The ticket decides; an offer not taken before the next request is withdrawn; one taken is gone."""
    _, url = cartpole_server
    with VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="ws") as client:
        offer = client._round_trip(lambda: client.begin("shm_open", client.kind.shm_open), ShmOffer)
        intruder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        intruder.settimeout(10)
        intruder.connect(socket_address(offer.socket))
        intruder.sendall(b"f" * 64)  # a wrong ticket: the server hangs up, handing nothing
        assert intruder.recv(16) == b""
        intruder.close()
        client.reset_vector(seed=0)  # the next request withdraws the offer
        with pytest.raises(OSError):
            ShmLink.open(offer, 2, timeout=5.0)
        taken = client._round_trip(lambda: client.begin("shm_open", client.kind.shm_open), ShmOffer)
        link = ShmLink.open(taken, 2, timeout=5.0)
        try:
            with pytest.raises(OSError):  # taken: nobody else may take it
                ShmLink.open(taken, 2, timeout=5.0)
            assert ShmLayout.from_json(taken.layout, 2).size == link.layout.size
        finally:
            link.close()


def test_a_stopped_server_times_out_and_a_killed_one_is_reported(cartpole_server):
    provider, url = cartpole_server
    before = segments_mapped(os.getpid())
    client = VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="shm", call_timeout=1.0)
    client.connect()
    client.reset_vector(seed=0)
    client.step_vector(np.zeros(2, dtype=np.int64))
    stop(provider.pid)
    try:
        with pytest.raises(RequestTimeoutError):
            client.step_vector(np.zeros(2, dtype=np.int64))
    finally:
        os.kill(provider.pid, signal.SIGCONT)
    assert client.link is None  # abandoned, its segment let go
    assert wait_until(lambda: segments_mapped(os.getpid()) == before, timeout=10)
    client.connection.terms.call_timeout = 30.0  # the rest must not hinge on a busy machine answering within a second
    client.connect()
    client.reset_vector(seed=0)
    stop(provider.pid)  # so that the step cannot be answered before the kill
    client.begin_vector_step(np.zeros(2, dtype=np.int64))
    os.kill(provider.pid, signal.SIGKILL)
    with pytest.raises(ConnectionLostError):
        client.complete()
    client.close()
    assert wait_until(lambda: segments_mapped(os.getpid()) == before, timeout=10)


@pytest.mark.parametrize("transport", ["shm", "ws"])
def test_a_killed_server_mid_run_truncates_its_block_and_lets_go_of_its_segment(transport):
    before = segments_mapped(os.getpid())
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, servers=2, transport=transport)
    try:
        assert envs.metadata["transport"] == transport
        envs.reset(seed=0)
        envs.step(np.zeros(4, dtype=np.int64))
        os.kill(envs.unwrapped._providers[1].pid, signal.SIGKILL)
        _, _, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations.tolist() == [False, False, True, True]
        assert "ConnectionLostError" in infos["remote_failure"][2]
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist()[2:] == [0.0, 0.0]  # NextStep: the reset
        assert envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
        # The lost server's segment was let go; the new server's is in use.
        in_use = before + (2 if transport == "shm" else 0)
        assert wait_until(lambda: segments_mapped(os.getpid()) == in_use, timeout=10)
    finally:
        envs.close()
    assert segments_mapped(os.getpid()) == before


CLIENT = textwrap.dedent(
    """
    import sys, numpy as np
    from openenv_gym.client import VectorClient
    from openenv_gym.protocol.batch import AutoresetMode
    client = VectorClient(sys.argv[1], 4, AutoresetMode.NEXT_STEP, "gymnasium", transport="shm").connect()
    assert client.transport == "shm", client.transport_reason
    client.reset_vector(seed=0)
    print("stepping", flush=True)
    while True:
        client.step_vector(np.zeros(4, dtype=np.int64))
    """
)


def test_a_killed_client_lets_the_server_release_the_session_and_its_segment(cartpole_server):
    provider, url = cartpole_server
    kill_stepping_client(CLIENT, url, provider.pid)
    with VectorClient(url, 4, NEXT_STEP, "gymnasium", transport="shm") as client:  # the server serves on
        client.reset_vector(seed=1)
        assert client.step_vector(np.ones(4, dtype=np.int64)).rewards.tolist() == [1.0] * 4


def test_steps_through_shared_memory_keep_the_session_from_being_reaped():
    provider = ProcessProvider(target="CartPole-v1", max_episode_steps=500, idle_timeout=1.0)
    url = provider.start()
    try:
        with VectorClient(url, 2, NEXT_STEP, "gymnasium", transport="shm") as client:
            client.reset_vector(seed=0)
            end = time.monotonic() + 3.0
            while time.monotonic() < end:  # only shared-memory steps: the WebSocket is idle
                client.step_vector(np.zeros(2, dtype=np.int64))
                time.sleep(0.05)
            client.reset_vector(seed=0)  # the WebSocket is still open
    finally:
        provider.stop()


def test_a_hung_up_channel_with_a_request_pending_sleeps_until_stopped():
    """After hang_up (the session closing), a request left in the segment is not answered, and the
    thread waits for its stop without burning a core; calls still run there."""
    from openenv_gym.protocol import ErrorFrame
    from openenv_gym.server.shm_channel import ShmChannel

    layout = ShmLayout(2, "<i8", (), "<f4", (4,), 4096)
    answered = []
    channel = ShmChannel(layout, lambda actions: answered.append(actions) or (), lambda exc: ErrorFrame("E", str(exc)))
    ours, theirs = socket.socketpair()
    try:
        channel.start(theirs)
        channel.hang_up()
        channel.views.header["request_seq"][0] = 5  # a request nobody will answer now
        tid = channel._thread.native_id

        def cpu_ticks() -> int:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime

        time.sleep(0.2)
        before = cpu_ticks()
        time.sleep(1.0)
        assert cpu_ticks() - before < 10  # clock ticks (1/100 s): a spinning thread takes ~100
        assert answered == [] and channel.views.header["reply_seq"][0] == 0
        import asyncio

        assert asyncio.run(channel.run(lambda: "ran")) == "ran"
    finally:
        channel.stop()
        ours.close()
    assert not channel.serving


def channel_and_link(layout: ShmLayout, step):
    """A channel serving ``step`` and the link reading it, in this process (a socket pair between them)."""
    import mmap

    from openenv_gym.protocol import ErrorFrame
    from openenv_gym.server.shm_channel import ShmChannel

    channel = ShmChannel(layout, step, lambda exc: ErrorFrame("EXECUTION_ERROR", str(exc)))
    ours, theirs = socket.socketpair()
    channel.start(theirs)
    _, fds, _, _ = socket.recv_fds(ours, 1, 1)
    segment = mmap.mmap(fds[0], layout.size)
    os.close(fds[0])
    ours.setblocking(False)
    return channel, ShmLink(ours, segment, layout)


def same_step_infos(final_items: list, extra: dict) -> dict:
    final = np.empty(len(final_items), dtype=object)
    for index, item in enumerate(final_items):
        final[index] = item
    mask = np.array([item is not None for item in final_items])
    return {"final_obs": final, "_final_obs": mask, **extra}


@pytest.mark.parametrize(
    ("final_items", "in_rows"),
    [
        ([None, np.full(4, 1.5, np.float32), None], True),  # SameStep's usual: rows of the segment
        ([np.arange(4, dtype=np.float32), None, np.full(4, -2.0, np.float32)], True),
        ([None, np.full(4, 1.5, np.float64), None], False),  # another dtype: packed item by item
        ([None, np.full(3, 1.5, np.float32), None], False),  # another shape
        ([None, "not an observation", None], False),
    ],
)
def test_samestep_final_observations_arrive_as_gymnasium_gave_them(final_items, in_rows):
    """final_obs travels as rows of the segment when it can, packed with the infos otherwise; either
    way the client gets Gymnasium's object array, its mask and the other infos, equal to what was sent."""
    from tests.equivalence import assert_same

    layout = ShmLayout(3, "<i8", (), "<f4", (4,), 4096)
    extra = {"final_info": {}, "_final_info": np.array([item is not None for item in final_items]), "x": np.ones(3)}
    sent = same_step_infos(final_items, extra)
    ended = np.array([item is not None for item in final_items])
    result = (np.zeros((3, 4), np.float32), np.ones(3), ended, np.zeros(3, bool), sent)
    channel, link = channel_and_link(layout, lambda actions: result)
    try:
        link.send(np.zeros(3, dtype=np.int64))
        reply = link.receive(time.monotonic() + 10)
        assert int(link.views.header["final_obs"][0]) == in_rows
        assert_same(reply.infos, sent, "infos")
        assert list(reply.infos) == list(sent)  # Gymnasium's key order kept
        if in_rows:  # copies out of the segment, the caller's own
            assert all(item is None or item.flags.writeable for item in reply.infos["final_obs"])
        result = (*result[:4], {})  # the next step's infos say nothing of the last one's
        link.send(np.zeros(3, dtype=np.int64))
        assert link.receive(time.monotonic() + 10).infos == {}
    finally:
        channel.stop()
        link.close()


def test_a_final_obs_flag_no_server_writes_is_refused():
    """The client reads the final_obs flag as it reads the status: a value other than 0 or 1 is malformed."""
    from openenv_gym.errors import ProtocolError

    layout = ShmLayout(2, "<i8", (), "<f4", (4,), 4096)
    result = (np.zeros((2, 4), np.float32), np.ones(2), np.zeros(2, bool), np.zeros(2, bool), {})
    channel, link = channel_and_link(layout, lambda actions: result)
    try:
        link.send(np.zeros(2, dtype=np.int64))
        assert link.receive(time.monotonic() + 10).infos == {}
        link.views.header["final_obs"][0] = 7
        with pytest.raises(ProtocolError, match="final_obs must be 0 or 1"):
            link.receive(time.monotonic() + 10)  # the same reply, read again
    finally:
        channel.stop()
        link.close()
