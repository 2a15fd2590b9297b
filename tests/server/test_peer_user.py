"""One rule for what a server without a token shows one session's peer of another: processes of
its own user only. Watch mode, its list of sessions and a shared-memory offer all follow it; a
process of another uid on the same host (the suite runs as root, the other user is ``nobody``)
is refused all three, while the server's own user is served over TCP (IPv4, IPv6, IPv4 mapped
into IPv6) and a Unix socket alike."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest
from websockets.sync.client import connect, unix_connect

from openenv_gym.client import EnvClient, VectorClient, http_get_json
from openenv_gym.client.shm_link import ShmLink
from openenv_gym.protocol.batch import AutoresetMode
from openenv_gym.protocol.shm import ShmOffer
from openenv_gym.server.peer_user import peer_uid, same_user
from openenv_gym.server.runner import load_factory
from tests.utils import UNIT, running_server

NOBODY = 65534

#: A client of another user: it lists the sessions, asks to watch one and takes a shared-memory
#: offer. Its modules are loaded before it switches: the interpreter's own files may lie where
#: the other user cannot read them (under /root).
OTHER_USER = textwrap.dedent(
    """
    import encodings.idna, json, os, socket, sys
    port, session, shm_socket, ticket, token = sys.argv[1:6]
    credentials = f"Authorization: Bearer {token}\\r\\n" if token else ""
    os.setgroups([]); os.setgid(NOBODY); os.setuid(NOBODY)

    def status(request):
        with socket.create_connection(("127.0.0.1", int(port)), timeout=60) as http:
            http.sendall(request.encode())
            reply = b""
            while b"\\r\\n\\r\\n" not in reply:
                chunk = http.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return int(reply.split(b" ", 2)[1])

    found = {"uid": os.getuid()}
    found["sessions"] = status(f"GET /web/sessions HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n{credentials}\\r\\n")
    found["watch"] = status(
        f"GET /web/watch?session={session} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n{credentials}"
        "Upgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n"
        "Sec-WebSocket-Version: 13\\r\\n\\r\\n"
    )
    taker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    taker.settimeout(60)
    taker.connect("\\0" + shm_socket[1:])
    try:
        taker.sendall(ticket.encode())
        found["shm"] = "handed" if socket.recv_fds(taker, 1, 1)[1] else "refused"
    except (BrokenPipeError, ConnectionResetError):  # closed before the ticket was read
        found["shm"] = "refused"
    print(json.dumps(found))
    """
).replace("NOBODY", str(NOBODY))


def _as_another_user(*arguments: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", OTHER_USER, *arguments], capture_output=True, text=True, timeout=120 * UNIT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _watched_and_offered(server, token: str = "") -> dict:
    """Have another user list, watch and take a shared-memory offer of a session of ``server``."""
    with EnvClient(server.url, transport="ws", token=token or None) as watched:
        watched.reset(seed=0)
        (entry,) = http_get_json(server.url, "/web/sessions", token=token or None)["sessions"]  # its own user
        watch = f"ws://127.0.0.1:{server.port}/web/watch?session={entry['id']}"
        headers = {"Authorization": f"Bearer {token}"} if token else None
        with connect(watch, open_timeout=10 * UNIT, additional_headers=headers) as page:
            assert json.loads(page.recv(timeout=10 * UNIT))["type"] == "watch_hello"
        with VectorClient(
            server.url, 2, AutoresetMode.NEXT_STEP, "gymnasium", transport="ws", token=token or None
        ) as owner:
            offer = owner._round_trip(lambda: owner.begin("shm_open", owner.kind.shm_open), ShmOffer)
            found = _as_another_user(str(server.port), entry["id"], offer.socket, offer.ticket, token)
            ShmLink.open(offer, 2, timeout=10 * UNIT).close()  # the offer was still its owner's to take
    return found


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another uid needs root (the suite runs as root)")
def test_without_a_token_another_user_is_refused_watch_mode_the_session_list_and_shared_memory():
    with running_server(load_factory("CartPole-v1")) as server:
        found = _watched_and_offered(server)
        assert found == {"uid": NOBODY, "sessions": 403, "watch": 403, "shm": "refused"}
    with running_server(load_factory("CartPole-v1"), token="s3cret") as server:  # with one, the token decides
        found = _watched_and_offered(server, token="s3cret")
        assert found == {"uid": NOBODY, "sessions": 200, "watch": 101, "shm": "refused"}


def test_the_server_s_own_user_is_found_over_tcp_and_unix_sockets(tmp_path):
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"), (socket.AF_INET6, "::")):
        with socket.socket(family, socket.SOCK_STREAM) as listener:
            if family == socket.AF_INET6 and host == "::":
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # dual stack: IPv4 peers mapped
            listener.bind((host, 0))
            listener.listen(1)
            target = "127.0.0.1" if host == "::" else host
            with socket.create_connection((target, listener.getsockname()[1]), timeout=10) as client:
                accepted, _ = listener.accept()
                with accepted:
                    assert peer_uid(accepted) == os.getuid() and same_user(accepted), (host, target)
                    client.close()
                    accepted.recv(1)
    path = str(tmp_path / "s")
    with running_server(load_factory("CartPole-v1"), unix_socket=path) as server:
        with EnvClient(server.url, transport="ws") as watched:
            watched.reset(seed=0)
            with unix_connect(path, f"ws://localhost/web/watch?session={_only_session(server)}") as page:
                assert json.loads(page.recv(timeout=10 * UNIT))["type"] == "watch_hello"


def _only_session(server) -> str:
    (session,) = server.sessions
    return session.id
