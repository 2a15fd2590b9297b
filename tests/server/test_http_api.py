"""OpenEnv's HTTP API on our server: POST /reset and /step, GET /state, answered as a stock
openenv-core server answers them; 404 and 405 with a body; /openapi.json a valid OpenAPI 3
document; /docs with nothing from a CDN; request bodies read whole (websockets alone reads none)."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
import urllib.parse

import pytest
from openapi_spec_validator import validate  # a test dependency: openenv-gym[test]

from openenv_gym.providers import ProcessProvider
from tests.testing_env import CounterEnvironment
from tests.utils import UNIT, openenv_core_servers, running_server, wait_until


def request(url: str, method: str, path: str, body: bytes | str | None = None, headers: dict | None = None):
    """One HTTP request: its status, headers (lower-case names) and body (JSON when it is)."""
    where = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30 * UNIT)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
        found = {name.lower(): value for name, value in response.getheaders()}
    finally:
        connection.close()
    try:
        return response.status, found, json.loads(raw)
    except ValueError:
        return response.status, found, raw.decode(errors="replace")


@pytest.fixture(scope="module")
def servers():
    """Ours and openenv-core's, of Echo and of CartPole."""
    with (
        ProcessProvider("openenv_gym.envs.echo:EchoEnvironment") as echo,
        ProcessProvider("CartPole-v1") as cartpole,
        openenv_core_servers(("echo", "cartpole")) as theirs,
    ):
        yield {"ours": {"echo": echo, "cartpole": cartpole}, "theirs": theirs}


EXCHANGES = [
    # (env, method, path, body)
    ("echo", "POST", "/step", {"action": {"message": "hello"}}),
    ("echo", "POST", "/step", {"action": {"message": "hey"}, "timeout_s": 5, "request_id": "r1"}),
    ("echo", "POST", "/step", {"action": {"msg": "hello"}}),
    ("echo", "POST", "/step", {"action": {"message": 5}}),
    ("echo", "POST", "/step", {}),
    ("echo", "POST", "/step", {"action": 5}),
    ("echo", "POST", "/step", {"action": {"message": "x"}, "timeout_s": 0}),
    ("echo", "POST", "/reset", {"seed": -1}),
    ("echo", "GET", "/state", None),
    ("cartpole", "POST", "/reset", {"seed": 1}),
    ("cartpole", "POST", "/reset", {"seed": 1, "episode_id": "e1"}),
    ("cartpole", "POST", "/reset", {"seed": "7"}),
    ("cartpole", "GET", "/state", None),
]


@pytest.mark.parametrize(("env", "method", "path", "body"), EXCHANGES)
def test_a_request_gets_what_openenv_cores_server_answers(servers, env, method, path, body):
    """The same status and the same JSON (FastAPI's ``detail`` for errors; ours adds a ``message``)."""
    data = None if body is None else json.dumps(body)
    headers = {"Content-Type": "application/json"}
    ours = request(servers["ours"][env], method, path, data, headers)
    theirs = request(servers["theirs"][env], method, path, data, headers)
    assert ours[0] == theirs[0], (ours, theirs)
    assert ours[1]["content-type"] == theirs[1]["content-type"] == "application/json"
    assert {key: value for key, value in ours[2].items() if key != "message"} == theirs[2]


def test_echos_reset_differs_only_by_its_own_reward(servers):
    """Echo's reset is ours: its reward is 0.0 where the stock env's is null; the answer is the same otherwise."""
    ours = request(servers["ours"]["echo"], "POST", "/reset")
    theirs = request(servers["theirs"]["echo"], "POST", "/reset")
    assert (ours[0], ours[2]["reward"], theirs[2]["reward"]) == (200, 0.0, None)
    assert {**ours[2], "reward": None} == theirs[2]


def test_a_step_a_fresh_env_refuses_is_the_clients_409_with_what_to_do_instead(servers):
    """CartPole cannot step before a reset, and each HTTP request has a fresh env: openenv-core's server
    answers 500, ours 409 (the client's error, not the server's), saying why."""
    body, headers = json.dumps({"action": {"action": 0}}), {"Content-Type": "application/json"}
    status, _, answer = request(servers["ours"]["cartpole"], "POST", "/step", body, headers)
    assert (status, request(servers["theirs"]["cartpole"], "POST", "/step", body, headers)[0]) == (409, 500)
    assert answer["detail"] == "Conflict"
    assert "ResetNeeded" in answer["message"] and "WebSocket session (/ws)" in answer["message"]


def test_an_invalid_gymnasium_action_is_a_422_that_says_why(servers):
    """Their cartpole refuses "left" by its pydantic model, ours by the action space: a 422 either way."""
    body, headers = json.dumps({"action": {"action": "left"}}), {"Content-Type": "application/json"}
    status, _, answer = request(servers["ours"]["cartpole"], "POST", "/step", body, headers)
    assert status == request(servers["theirs"]["cartpole"], "POST", "/step", body, headers)[0] == 422
    assert answer["detail"][0]["msg"] == "expected an integer for Discrete(2), got 'left'"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [("GET", "/reset", "POST"), ("PUT", "/step", "POST"), ("POST", "/health", "GET"), ("DELETE", "/state", "GET")],
)
def test_a_wrong_method_is_a_405_with_allow(servers, method, path, allow):
    ours = request(servers["ours"]["echo"], method, path, "{}" if method != "GET" else None)
    theirs = request(servers["theirs"]["echo"], method, path, "{}" if method != "GET" else None)
    assert (ours[0], ours[1]["allow"]) == (theirs[0], theirs[1]["allow"]) == (405, allow)
    assert ours[2]["detail"] == theirs[2]["detail"] == "Method Not Allowed"


def test_a_reset_without_a_body_is_a_fresh_episode(servers):
    """The body of POST /reset is optional, as openenv-core's: both answer a first observation."""
    for side in ("ours", "theirs"):
        status, _, answer = request(servers[side]["cartpole"], "POST", "/reset")
        assert (status, len(answer["observation"]["observation"]), answer["done"]) == (200, 4, False)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_unknown_path_is_a_404_with_a_body(servers, method):
    """Never a dropped connection: a POST with a body included."""
    ours = request(servers["ours"]["echo"], method, "/nope", '{"x": 1}' if method == "POST" else None)
    assert (ours[0], ours[2]["detail"]) == (404, "Not Found")
    assert "/reset" in ours[2]["message"]


@pytest.mark.parametrize("env", ["echo", "cartpole"])
def test_openapi_json_is_a_valid_openapi_3_document_of_the_routes(servers, env):
    status, headers, document = request(servers["ours"][env], "GET", "/openapi.json")
    assert (status, headers["content-type"]) == (200, "application/json")
    validate(document)  # raises if it is not valid OpenAPI 3.1
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == {"/reset", "/step", "/mcp", "/state", "/metadata", "/schema", "/health"}
    schemas = document["components"]["schemas"]
    assert schemas["StepRequest"]["properties"]["action"]["$ref"] == "#/components/schemas/Action"
    assert schemas["ResetRequest"]["properties"]["seed"]["anyOf"][0] == {"minimum": 0, "type": "integer"}


def test_openapi_json_hoists_an_envs_nested_models():
    """CodingTools' schemas hold ``$defs``: they land in components, every reference resolves."""
    with ProcessProvider("openenv/CodingTools-v0") as url:
        document = request(url, "GET", "/openapi.json")[2]
    validate(document)
    text = json.dumps(document)
    assert "#/$defs/" not in text
    schemas = document["components"]["schemas"]
    for reference in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert reference in schemas, reference


def test_docs_render_the_api_with_nothing_from_elsewhere(servers):
    """/docs is HTML made on the server: no script, no stylesheet or font from a CDN, and a policy that says so."""
    status, headers, page = request(servers["ours"]["cartpole"], "GET", "/docs")
    assert (status, headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert "<script" not in page and "<link" not in page and "src=" not in page
    assert set(re.findall(r"href=([^ >]+)", page)) - {"openapi.json"} <= {
        f"#{name}" for name in re.findall(r" id=([^ >]+)", page)
    }
    for route in ("/reset", "/step", "/state", "StepRequest", "ObservationResponse"):
        assert route in page


# Bodies, read whole ----------------------------------------------------------------------------


def raw_exchange(port: int, data: bytes, *, pause_after: int | None = None, wait: float = 0.0) -> bytes:
    """Send ``data`` on a socket (pausing ``wait`` seconds after its first ``pause_after`` bytes), then
    read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30 * UNIT) as sock:
        if pause_after is None:
            sock.sendall(data)
        else:
            sock.sendall(data[:pause_after])
            time.sleep(wait)
            try:
                sock.sendall(data[pause_after:])
            except OSError:
                pass  # closed already: what it answered is read below
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def echo_server():
    from openenv_gym.envs.echo import EchoEnvironment

    with running_server(EchoEnvironment, handshake_timeout=2 * UNIT, max_frame_bytes=4096) as server:
        yield server


def test_a_chunked_body_is_read(echo_server):
    body = b'{"action": {"message": "hello"}}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
    reply = raw_exchange(echo_server.port, head + chunked)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["observation"] == {"echoed_message": "hello", "message_length": 5}


def test_a_client_that_expects_100_continue_is_told_to_go_on(echo_server):
    """curl sends ``Expect: 100-continue`` for a body over 1 KiB and waits for the server's word."""
    body = json.dumps({"action": {"message": "x" * 1000}, "note": "y" * 500}).encode()  # extra keys go to step
    head = b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
    with socket.create_connection(("127.0.0.1", echo_server.port), timeout=30 * UNIT) as sock:
        sock.sendall(head)
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and b'"message_length": 1000' in reply


def test_a_body_past_the_frame_limit_is_a_413(echo_server):
    body = json.dumps({"action": {"message": "x" * 5000}}).encode()
    reply = raw_exchange(
        echo_server.port, b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert b"a body is at most 4096 bytes" in reply


def test_a_body_that_does_not_arrive_within_the_handshake_timeout_is_dropped(echo_server):
    """Half a body, then silence past the 2-unit handshake timeout: the connection is closed, unanswered."""
    data = b'POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\n{"action": {"mess'
    started = time.monotonic()
    assert raw_exchange(echo_server.port, data) == b""
    assert time.monotonic() - started >= 1.5 * UNIT


def test_a_route_may_take_longer_than_the_handshake_timeout():
    """The timeout covers the request's arrival, not the route's work: a step that sleeps past it answers."""
    with running_server(CounterEnvironment, handshake_timeout=0.5) as server:
        status, _, answer = request(server.url, "POST", "/step", json.dumps({"action": {"amount": 2, "sleep": 1.5}}))
    assert (status, answer) == (200, {"observation": {"count": 2}, "reward": 2.0, "done": False})


def test_stateless_requests_share_the_session_limit():
    """Each stateless request's env holds a slot while it lives: a full server answers 503 with Retry-After."""
    from openenv_gym.client.sync_client import EnvClient

    with running_server(CounterEnvironment, max_sessions=1) as server:
        with EnvClient(server.url) as client:
            client.reset()
            status, headers, answer = request(server.url, "POST", "/reset")
            assert (status, headers["retry-after"], answer["max_sessions"]) == (503, "1", 1)
        assert wait_until(lambda: server.active_sessions == 0, 10 * UNIT)
        assert request(server.url, "POST", "/reset")[0] == 200
        assert server.active_sessions == 0


def test_a_token_server_refuses_a_stateless_request_without_it():
    with running_server(CounterEnvironment, token="secret-token") as running:
        assert request(running.url, "POST", "/reset", "{}")[0] == 401
        status, _, _ = request(running.url, "POST", "/reset", "{}", {"Authorization": "Bearer secret-token"})
        assert status == 200
