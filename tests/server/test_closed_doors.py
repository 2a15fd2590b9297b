"""Closed doors: a server beyond loopback needs a token (or an explicit insecure), every route but
/health needs that token, and the token is never logged, echoed in a frame, a close reason, an
HTTP body, a repr or an exception message, even with every logger at DEBUG."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest
import websockets
from websockets.sync.client import connect

from openenv_gym.client import AsyncEnvClient, EnvClient, http_get_json
from openenv_gym.errors import OpenEnvGymError, ServerConnectError
from openenv_gym.redaction import REDACTED, RedactingLogger, redact
from openenv_gym.server import EnvServer
from openenv_gym.server.exposure import exposure_problem
from openenv_gym.startup import READY_PREFIX
from tests.testing_env import CounterEnvironment
from tests.utils import UNIT, run_async, running_server, stop_process

# Unique strings, so finding one anywhere can only mean it leaked.
TOKEN = "tok-" + secrets.token_hex(12)
WRONG = "wrong-" + secrets.token_hex(12)
BATCH = "/ws/batch?envs=2&autoreset_mode=NextStep"
# The test's own raw WebSockets (a stranger's client, not ours) log here, which the checks skip.
RAW = logging.getLogger("tests.closed_doors.raw")


class _Keep(logging.Handler):
    """Keeps the full text of every record: message, traceback and stack."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self._formatter = logging.Formatter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == RAW.name:
            return
        text = f"{record.name}: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self._formatter.formatException(record.exc_info)
        if record.stack_info:
            text += "\n" + record.stack_info
        self.texts.append(text)


@pytest.fixture
def every_record() -> Iterator[list[str]]:
    """Every logger of the process at DEBUG for the test; yields the text of every record logged."""
    keep = _Keep()
    manager = logging.Logger.manager
    loggers = [logging.getLogger()] + [
        logger for logger in manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    # websockets' own loggers are made on first use: make them now so they are set to DEBUG too.
    loggers += [logging.getLogger("websockets.server"), logging.getLogger("websockets.client")]
    levels = {logger: logger.level for logger in loggers}
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        if logger is logging.getLogger() or not logger.propagate:
            logger.addHandler(keep)
    try:
        yield keep.texts
    finally:
        for logger, level in levels.items():
            logger.setLevel(level)
            logger.removeHandler(keep)


def _get(port: int, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * UNIT)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _refusal(url: str, **headers: str) -> str:
    """What a refused WebSocket handshake tells: the status and the body."""
    with pytest.raises(websockets.InvalidStatus) as refused:
        with connect(url, additional_headers=headers, open_timeout=10 * UNIT, logger=RAW):
            pass
    response = refused.value.response
    return f"{response.status_code} {response.body.decode(errors='replace')}"


def _assert_kept_secret(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text and WRONG not in text, text


def test_the_token_is_in_no_log_record_frame_close_reason_body_or_repr(every_record):
    """Bad token, good token, the web login with the token in its query, refused handshakes and a
    server-side exception, all at DEBUG: the token (and a wrong one presented) shows nowhere."""
    seen: list[str] = []  # every frame, close reason, body, exception message and repr a client meets
    bearer, wrong = {"Authorization": f"Bearer {TOKEN}"}, {"Authorization": f"Bearer {WRONG}"}
    with running_server(CounterEnvironment, token=TOKEN, web=True) as server:
        port, base = server.port, f"ws://127.0.0.1:{server.port}"
        # Bad tokens: HTTP, then handshakes of each client.
        for token in (None, WRONG):
            with pytest.raises(ServerConnectError) as refused:
                http_get_json(server.url, "/schema", token=token)
            seen.append(str(refused.value))
            client = EnvClient(server.url, token=token)
            with pytest.raises(ServerConnectError) as refused:
                client.connect()
            seen += [str(refused.value), repr(client)]
            client.close()

            async def connect_async(token: str | None = token) -> None:
                async with AsyncEnvClient(server.url, token=token):
                    pass

            with pytest.raises(ServerConnectError) as refused:
                run_async(connect_async())
            seen.append(str(refused.value))
        seen.append(_refusal(f"{base}/ws", **wrong))
        seen.append(_refusal(f"{base}{BATCH}", **wrong))
        seen.append(_refusal(f"{base}/web/watch?session=x", **wrong))
        # The good token: HTTP, a session, and an exception raised in the env.
        seen.append(json.dumps(http_get_json(server.url, "/schema", token=TOKEN)))
        with EnvClient(server.url, token=TOKEN) as client:
            client.reset()
            client.step({"amount": 1})
            with pytest.raises(OpenEnvGymError) as failed:
                client.step({"fail": True})
            seen += [
                str(failed.value),
                repr(failed.value),
                json.dumps(getattr(failed.value, "details", None)),
                repr(client),
            ]
        with connect(f"{base}/ws", additional_headers=bearer, open_timeout=10 * UNIT, logger=RAW) as raw:
            for frame in ('{"type":"reset","data":{}}', "not json", '{"type":"step","data":{"fail":true}}'):
                raw.send(frame)
                seen.append(str(raw.recv(timeout=10 * UNIT)))
        # Handshakes the server refuses after the token: a bad batch query, an unknown watch.
        for path in ("/ws/batch?envs=0&autoreset_mode=NextStep", "/web/watch?session=nobody"):
            with connect(f"{base}{path}", additional_headers=bearer, open_timeout=10 * UNIT, logger=RAW) as raw:
                seen.append(str(raw.recv(timeout=10 * UNIT)))
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    raw.recv(timeout=10 * UNIT)
                seen.append(str(closed.value))
        # The web login: the token in the query, answered with the cookie (its one place) and a redirect.
        status, headers, body = _get(port, f"/web?token={TOKEN}")
        assert status == 303 and headers["Location"] == "/web" and body == b""
        cookie = headers.pop("Set-Cookie").split(";")[0]
        assert cookie.endswith(f"={TOKEN}")
        seen.append(json.dumps(headers))
        for path, presented in [
            (f"/web?token={WRONG}", {}),
            ("/web", {"Cookie": cookie}),
            ("/web/sessions", {"Cookie": cookie}),
            ("/no/such/route", bearer),
            ("/schema", wrong),
            ("/metadata", bearer),
        ]:
            status, headers, body = _get(port, path, **presented)
            seen += [json.dumps(headers), body.decode(errors="replace")]
        seen += [repr(server), str(server.url)]
    _assert_kept_secret(*seen, *every_record)
    # The lines were logged, the secrets elided: by the server and by the clients.
    assert any(f"< GET /web?token={REDACTED} HTTP/1.1" in text for text in every_record)
    assert any(f"< Authorization: {REDACTED}" in text for text in every_record)
    assert any(f"> Authorization: {REDACTED}" in text for text in every_record)
    assert any(f"> Set-Cookie: {REDACTED}" in text for text in every_record)
    assert any(f"< Cookie: {REDACTED}" in text for text in every_record)
    assert any("asked to fail" in text and "Traceback" in text for text in seen)  # the env's exception, in full


def test_serve_at_debug_prints_no_token():
    """`openenv-gym serve --log-level DEBUG` with the web page: its stdout and stderr hold no token
    after a login, a session, refusals and a failure in the env."""
    env = {**os.environ, "DOORS_TOKEN": TOKEN}
    command = [sys.executable, "-m", "openenv_gym", "serve", "tests.testing_env:CounterEnvironment", "--port", "0"]
    command += ["--token-env", "DOORS_TOKEN", "--web", "--log-level", "DEBUG"]
    with tempfile.TemporaryFile() as errors:
        server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            line = server.stdout.readline()
            assert line.startswith(READY_PREFIX), line
            url = line[len(READY_PREFIX) :].split()[0]
            port = int(url.rsplit(":", 1)[1])
            status, headers, _ = _get(port, f"/web?token={TOKEN}")
            assert status == 303
            assert _get(port, "/web/sessions", Cookie=headers["Set-Cookie"].split(";")[0])[0] == 200
            assert _get(port, f"/web?token={WRONG}")[0] == 401
            with pytest.raises(ServerConnectError, match="401"):
                EnvClient(url, token=WRONG).connect()
            with EnvClient(url, token=TOKEN) as client:
                client.reset()
                with pytest.raises(OpenEnvGymError, match="asked to fail"):
                    client.step({"fail": True})
            server.send_signal(signal.SIGTERM)
            assert server.wait(10 * UNIT) == 0
            output = line + server.stdout.read()
        finally:
            stop_process(server)
            server.stdout.close()
        errors.seek(0)
        logged = errors.read().decode(errors="replace")
    _assert_kept_secret(output, logged)
    assert f"< GET /web?token={REDACTED} HTTP/1.1" in logged and f"< Authorization: {REDACTED}" in logged


def test_redaction_of_log_arguments():
    """Credential headers lose their values; token= query values and the secrets themselves go anywhere."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    inner = logging.getLogger("tests.closed_doors.redaction")
    inner.setLevel(logging.DEBUG)
    inner.addHandler(Keep())
    inner.propagate = False
    # websockets wraps the logger it is given in an adapter of its own, which adds `websocket`.
    outer = logging.LoggerAdapter(RedactingLogger(inner, [TOKEN]), {"websocket": "connection"})
    outer.debug("< %s: %s", "authorization", "Basic dXNlcjpwYXNz")
    outer.debug("> %s: %s", "Set-Cookie", f"openenv_gym_token_80={TOKEN}; HttpOnly")
    outer.debug("< %s: %s", "Host", "127.0.0.1:8000")
    outer.debug("< GET %s HTTP/1.1", f"/web?x=1&TOKEN={WRONG}")
    outer.info("closed: %s (%d)", ValueError(f"no {TOKEN} here"), 1008)
    outer.debug(f"inline {TOKEN}")
    messages = [record.getMessage() for record in records]
    assert messages == [
        f"< authorization: {REDACTED}",
        f"> Set-Cookie: {REDACTED}",
        "< Host: 127.0.0.1:8000",
        f"< GET /web?x=1&TOKEN={REDACTED} HTTP/1.1",
        f"closed: no {REDACTED} here (1008)",
        f"inline {REDACTED}",
    ]
    assert all(record.websocket == "connection" for record in records)  # the outer adapter's extra stays
    assert records[0].funcName == "test_redaction_of_log_arguments"  # the caller, not the adapter
    assert TOKEN not in repr(outer.logger)
    assert redact("a?token=&b") == f"a?token={REDACTED}&b"


# --- who may listen where ----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "127.0.0.2", "my-host.example"])
def test_a_server_beyond_loopback_without_a_token_refuses_to_start(host):
    """Made, not started: nothing binds. The error names both ways out."""
    with pytest.raises(ValueError, match=r"beyond loopback.*token=\.\.\..*insecure=True") as refused:
        EnvServer(CounterEnvironment, host=host)
    assert host in str(refused.value)
    assert EnvServer(CounterEnvironment, host=host, token=TOKEN).requires_token
    assert EnvServer(CounterEnvironment, host=host, insecure=True).insecure
    with pytest.raises(ValueError, match="contradict"):
        EnvServer(CounterEnvironment, host=host, token=TOKEN, insecure=True)


def test_loopback_and_unix_sockets_need_no_token(tmp_path):
    for host in ("127.0.0.1", "::1", "localhost"):
        assert not EnvServer(CounterEnvironment, host=host).insecure
    assert not EnvServer(CounterEnvironment, host="0.0.0.0", unix_socket=str(tmp_path / "s.sock")).insecure
    assert exposure_problem(None, token=False, insecure=False) is None
    assert "--token-env VAR" in exposure_problem("0.0.0.0", token=False, insecure=False, cli=True)
    assert "--insecure" in exposure_problem("0.0.0.0", token=False, insecure=False, cli=True)


def test_an_insecure_server_beyond_loopback_serves_and_warns(caplog):
    """127.0.0.2 is on this machine's loopback interface but not a loopback name of ours: it stands
    for an address beyond loopback without leaving the machine."""
    with caplog.at_level(logging.WARNING, logger="openenv_gym"):
        with running_server(CounterEnvironment, host="127.0.0.2", insecure=True) as server:
            assert http_get_json(server.url, "/schema")["action"]
            with EnvClient(server.url) as client:
                assert client.reset().done is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "without a token" in r.getMessage()]
    assert len(warnings) == 1 and "127.0.0.2" in warnings[0].getMessage() and "insecure" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="openenv_gym"):
        with running_server(CounterEnvironment, host="127.0.0.2", token=TOKEN):
            pass
        with running_server(CounterEnvironment, insecure=True):  # on loopback the flag changes nothing
            pass
    assert not [r for r in caplog.records if "without a token" in r.getMessage()]


# --- every route but /health needs the token ---------------------------------------------------


@contextlib.contextmanager
def _guarded(web: bool) -> Iterator[EnvServer]:
    with running_server(CounterEnvironment, token=TOKEN, web=web) as server:
        yield server


HTTP_PATHS = [
    "/schema",
    "/metadata",
    "/schema?vector_backend=x",
    "/web",
    "/web/",
    "/web/app.js",
    "/web/index.html",
    "/web/sessions",
    "/web/nothing.js",
    "/web/watch?session=x",
    "/ws",
    BATCH,
    BATCH + "&factories=pickled",
    "/no/such/route",
    "/",
    "/health/",
    "/healthz",
]


@pytest.mark.parametrize("web", [True, False])
def test_every_route_but_health_needs_the_token(web):
    """Without the token every path but /health is 401, and its body tells nothing of the routes
    (an unknown path gets the same answer as a known one: one text for a missing token, one for a
    wrong one); with the web page off, /web is 401 too."""
    with _guarded(web) as server:
        assert _get(server.port, "/health")[0] == 200
        answers: dict[str, set[bytes]] = {"missing": set(), "wrong": set(), "cookie": set()}
        for path in HTTP_PATHS:
            for kind, headers in (
                ("missing", {}),
                ("wrong", {"Authorization": f"Bearer {WRONG}"}),
                ("cookie", {"Cookie": f"openenv_gym_token_{server.port}=x"}),  # a wrong token where /web reads one
            ):
                status, _, body = _get(server.port, path, **headers)
                assert status == 401, (path, headers, status, body)
                answers[kind].add(body)
        assert len(answers["missing"]) == len(answers["wrong"]) == 1 and answers["missing"] != answers["wrong"]
        assert answers["cookie"] <= answers["missing"] | answers["wrong"]
        assert not any(b"/ws" in body or TOKEN.encode() in body for bodies in answers.values() for body in bodies)
        # The 404 that lists the routes is for holders of the token.
        status, _, body = _get(server.port, "/no/such/route", Authorization=f"Bearer {TOKEN}")
        assert status == 404 and b"/ws" in body


@pytest.mark.parametrize("path", ["/ws", BATCH, "/web/watch?session=x", "/ws?render_mode=ansi"])
def test_every_websocket_handshake_needs_the_token(path):
    with _guarded(web=True) as server:
        base = f"ws://127.0.0.1:{server.port}"
        for headers in ({}, {"Authorization": f"Bearer {WRONG}"}, {"Authorization": TOKEN}):
            assert _refusal(base + path, **headers).startswith("401 ")
        with connect(
            base + path, additional_headers={"Authorization": f"Bearer {TOKEN}"}, open_timeout=10 * UNIT, logger=RAW
        ):
            pass  # with it, the handshake is accepted (what follows is the route's business)


def test_gym_make_s_spec_keeps_the_token_out_of_its_repr():
    """gym.make and gym.make_vec keep their arguments in the env's spec, which trainers print: the
    token there shows as [redacted], and the spec still makes a working env."""
    import gymnasium as gym

    import openenv_gym  # noqa: F401 - registers the ids
    from openenv_gym.envs.echo import EchoEnvironment

    with running_server(EchoEnvironment, token=TOKEN) as server:
        env = gym.make("openenv/Echo-v0", base_url=server.url, token=TOKEN)
        envs = gym.make_vec("openenv/Echo-v0", num_envs=2, base_urls=[server.url], token=TOKEN)
        try:
            for spec in (env.spec, env.unwrapped.spec, envs.spec):
                assert spec.kwargs["token"] == TOKEN
                printed = spec.pprint(disable_print=True, print_all=True)
                _assert_kept_secret(repr(spec), str(spec), printed, repr(env), repr(envs))
                assert REDACTED in repr(spec)
            again = gym.make(env.spec)  # the spec still presents the token
            try:
                again.reset()
            finally:
                again.close()
        finally:
            env.close()
            envs.close()
