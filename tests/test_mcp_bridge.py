"""`openenv-gym mcp`: one env session as a stdio MCP server, driven by the MCP SDK's own client.

Every test runs the real command (``python -m openenv_gym mcp ...``) as a process: through the
SDK's ``stdio_client`` and ``ClientSession``, or with JSON-RPC lines written by hand where the
test must see the process itself (its exit, its stdout, its reaction to signals).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION

from openenv_gym.client import DEFAULT_CALL_TIMEOUT, http_get_json
from openenv_gym.envs.echo import EchoEnvironment
from openenv_gym.integrations.mcp import DONE_KEY, ERROR_TYPE_KEY, REWARD_KEY, TRUNCATED_KEY
from openenv_gym.providers.process import DEFAULT_STARTUP_TIMEOUT
from tests.utils import (
    REPO_ROOT,
    UNIT,
    all_server_pids,
    parent_pid,
    pid_alive,
    run_async,
    running_server,
    stop_process,
    wait_until,
)

BRIDGE = [sys.executable, "-m", "openenv_gym", "mcp"]
ECHO_TARGET = "openenv_gym.envs.echo:EchoEnvironment"
TOOLBOX = "tests.tool_envs:ToolboxEnvironment"
# A bridge imports the SDK (about 2 s here) and starts its env's server before it answers.
SESSION_TIMEOUT = 90 * UNIT


def bridge_pids() -> set[int]:
    """The `openenv_gym mcp` processes this test process started."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"openenv_gym" in argv and b"mcp" in argv and parent_pid(int(entry.name)) == os.getpid():
            found.add(int(entry.name))
    return found


def servers_of(pid: int) -> set[int]:
    """The `openenv_gym serve` processes whose parent is ``pid`` (the servers a bridge started)."""
    return {server for server in all_server_pids() if parent_pid(server) == pid}


@contextlib.asynccontextmanager
async def bridge(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with ``openenv-gym mcp ARGS``, through the SDK's stdio client
    (``env``: variables beyond the few it passes on)."""
    params = StdioServerParameters(command=sys.executable, args=[*BRIDGE[1:], *args], env=env, cwd=str(REPO_ROOT))
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            with anyio.fail_after(SESSION_TIMEOUT):
                await session.initialize()
            yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
    with anyio.fail_after(30 * UNIT):
        return await session.call_tool(name, arguments)


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    part = result.content[0]
    assert isinstance(part, types.TextContent), part
    return part.text


@pytest.mark.slow
def test_the_envs_tools_and_reset_are_listed_and_called_and_nothing_is_left():
    """list_tools gives the env's tools with their schemas, and reset, which takes no arguments
    (the model picks no task: tests/reward_hacking/test_task_choice.py); calls reach the session;
    once the client exits, the bridge and the server it started are gone."""
    before = bridge_pids()

    async def session() -> tuple[dict[str, types.Tool], list[types.CallToolResult], set[int]]:
        async with bridge("openenv/Echo-v0") as client:
            with anyio.fail_after(30 * UNIT):
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            results = [
                await call(client, "echo_with_length", {"message": "hi"}),
                await call(client, "echo_message", {"message": "hello"}),
                await call(client, "reset", {"seed": 1, "options": {}}),
                await call(client, "reset"),
            ]
            (bridge_pid,) = bridge_pids() - before
            servers = servers_of(bridge_pid)
            assert len(servers) == 1 and all(pid_alive(pid) for pid in servers)
            return listed, results, {bridge_pid, *servers}

    listed, (with_length, echoed, seeded, reset), pids = run_async(session(), timeout=2 * SESSION_TIMEOUT)
    assert sorted(listed) == ["echo_message", "echo_with_length", "reset"]
    for name in ("echo_message", "echo_with_length"):
        assert listed[name].input_schema == EchoEnvironment.tools[name].input_schema
        assert listed[name].input_schema["required"] == ["message"]
    assert listed["echo_with_length"].description == "Echo back the message with its length."
    assert listed["reset"].input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert seeded.is_error and text(seeded).startswith("reset takes no arguments, got ['seed']: ")
    assert not reset.is_error

    assert not with_length.is_error
    assert with_length.structured_content == {"message": "hi", "length": 2}
    assert json.loads(text(with_length)) == {"message": "hi", "length": 2}
    assert with_length.meta == {REWARD_KEY: None, DONE_KEY: False, TRUNCATED_KEY: False}
    assert not echoed.is_error and text(echoed) == "hello"

    # The server runs in a session of its own, out of reach of the SDK's kill of the bridge's
    # process group: it is gone because the bridge stopped it (or, had the bridge died, because
    # its stdin pipe closed).
    assert wait_until(lambda: not any(pid_alive(pid) for pid in pids), 20 * UNIT), [p for p in pids if pid_alive(p)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "tool", "arguments", "expected"),
    [
        ("openenv/CodingTools-v0", "run_python", {"code": "print(6 * 7)"}, {"stdout": "42\n", "exit_code": 0}),
        (
            "openenv/Git-v0",
            "run",
            {"command": "git rev-parse --is-inside-work-tree"},
            {"stdout": "true\n", "exit_code": 0},
        ),
    ],
)
def test_the_sdk_plays_a_task_env_its_reset_gives_the_task(env_id, tool, arguments, expected):
    """CodingTools and Git through the SDK's client: reset shows the task's prompt, a tool runs in
    the sandbox, and an empty submission is scored 0 (Git's ends the episode; CodingTools lets the
    agent try again)."""

    async def session() -> tuple[set[str], str, types.CallToolResult, types.CallToolResult]:
        async with bridge(env_id) as client:
            with anyio.fail_after(30 * UNIT):
                listed = {tool.name for tool in (await client.list_tools()).tools}
            reset = await call(client, "reset")
            ran = await call(client, tool, arguments)
            submit_arguments = {"code": ""} if env_id == "openenv/CodingTools-v0" else {}
            submitted = await call(client, "submit", submit_arguments)
            return listed, text(reset), ran, submitted

    listed, prompt, ran, submitted = run_async(session(), timeout=2 * SESSION_TIMEOUT)
    assert {"reset", tool, "submit"} <= listed
    assert "submit" in prompt and len(prompt) > 100
    assert not ran.is_error
    assert {key: ran.structured_content[key] for key in expected} == expected
    assert submitted.meta[REWARD_KEY] == 0.0
    assert submitted.meta[DONE_KEY] is (env_id == "openenv/Git-v0")


@pytest.mark.slow
def test_calls_that_fail_are_error_results_and_the_session_goes_on():
    """An unknown tool, arguments that miss the schema and bad reset arguments (reset takes them
    with --allow-task-choice) give isError results with the reason as text, not protocol errors;
    the next call works."""

    async def session() -> list[types.CallToolResult]:
        async with bridge("openenv/Echo-v0", "--allow-task-choice") as client:
            return [
                await call(client, "no_such_tool", {}),
                await call(client, "echo_message", {"text": "hi"}),
                await call(client, "reset", {"seed": "zero"}),
                await call(client, "reset", {"episode": 1}),
                await call(client, "echo_message", {"message": "still here"}),
            ]

    unknown, invalid, bad_seed, bad_key, after = run_async(session(), timeout=2 * SESSION_TIMEOUT)
    assert unknown.is_error and "no_such_tool" in text(unknown)
    assert unknown.meta is not None and unknown.meta[ERROR_TYPE_KEY] == "tool_not_found"
    assert invalid.is_error and "message: Field required" in text(invalid)
    assert invalid.meta is not None and invalid.meta[ERROR_TYPE_KEY] == "invalid_args"
    assert bad_seed.is_error and text(bad_seed) == "seed must be an integer, got 'zero'"
    assert bad_key.is_error and text(bad_key) == "reset takes only seed and options, got ['episode']"
    assert not after.is_error and text(after) == "still here"


@pytest.mark.slow
def test_reset_rewards_done_and_a_lost_session_of_a_module_attr_target():
    """reset (with a seed and options: --allow-task-choice) returns the task's prompt; a scoring
    tool's reward and done arrive in _meta; a call after done is refused (an error result, never
    sent) until reset; a tool that raises is an error result; a call past --call-timeout says to
    reset, and reset recovers."""

    async def session() -> dict[str, types.CallToolResult]:
        async with bridge(TOOLBOX, "--call-timeout", str(2 * UNIT), "--allow-task-choice") as client:
            return {
                "reset": await call(client, "reset", {"seed": 7, "options": {"level": 1}}),
                "add": await call(client, "add", {"a": 2, "b": 3}),
                "submit": await call(client, "submit", {"answer": 5}),
                "resubmit": await call(client, "submit", {"answer": 5}),
                "ended": await call(client, "add", {"a": 1}),
                "next": await call(client, "reset"),
                "fail": await call(client, "fail", {"why": "boom"}),
                "late": await call(client, "later", {"seconds": 4 * UNIT}),
                "lost": await call(client, "add", {"a": 1}),
                "again": await call(client, "reset"),
                "after": await call(client, "add", {"a": 1}),
            }

    results = run_async(session(), timeout=2 * SESSION_TIMEOUT)
    reset = results["reset"]
    assert not reset.is_error and text(reset) == "Add 2 and 3, then submit the sum."
    assert reset.structured_content is not None and reset.structured_content["prompt"] == text(reset)
    assert text(results["add"]) == "5" and results["add"].structured_content == {"result": 5}
    submit = results["submit"]
    assert text(submit) == "correct"
    assert submit.meta is not None and submit.meta[REWARD_KEY] == 1.0 and submit.meta[DONE_KEY] is True
    for name in ("resubmit", "ended"):  # the episode pays once: nothing reaches the env until reset
        assert results[name].is_error and "episode ended" in text(results[name]), name
        assert not results[name].meta or results[name].meta.get(REWARD_KEY) is None, name
    assert not results["next"].is_error
    fail = results["fail"]
    assert fail.is_error and "boom" in text(fail)
    assert fail.meta is not None and fail.meta[ERROR_TYPE_KEY] == "execution_error"
    for name in ("late", "lost"):
        assert results[name].is_error and text(results[name]).endswith("call reset to start a new session"), name
    assert "no answer within" in text(results["late"])
    assert not results["again"].is_error
    assert not results["after"].is_error and text(results["after"]) == "1"


@pytest.mark.slow
def test_url_attaches_to_a_running_server_and_leaves_it_running():
    """--url (with --token-env for a server that wants a token) serves a session of a server
    started elsewhere, which the bridge leaves running; a TARGET beside it must be what it serves."""
    token = "bridge-test-token"
    with running_server(EchoEnvironment, target=ECHO_TARGET, token=token) as server:

        async def session() -> types.CallToolResult:
            args = ("openenv/Echo-v0", "--url", server.url, "--token-env", "BRIDGE_TEST_TOKEN")
            async with bridge(*args, env={"BRIDGE_TEST_TOKEN": token}) as client:
                return await call(client, "echo_with_length", {"message": "remote"})

        result = run_async(session(), timeout=2 * SESSION_TIMEOUT)
        assert result.structured_content == {"message": "remote", "length": 6}
        assert http_get_json(server.url, "/health", timeout=5 * UNIT) == {"status": "healthy"}

        with_token = {**os.environ, "BRIDGE_TEST_TOKEN": token}
        mismatch = run_bridge("CartPole-v1", "--url", server.url, "--token-env", "BRIDGE_TEST_TOKEN", env=with_token)
        without_token = run_bridge("--url", server.url)
    assert mismatch.returncode == 2  # what was asked for cannot be served there, as for a bad TARGET
    assert mismatch.stdout == ""
    assert mismatch.stderr.startswith("openenv-gym mcp: error: the server at ") and "'CartPole-v1'" in mismatch.stderr
    assert len(mismatch.stderr.splitlines()) == 1
    assert without_token.returncode == 1 and without_token.stdout == ""
    assert without_token.stderr.startswith("openenv-gym mcp: error: cannot connect to ws://127.0.0.1:")
    assert without_token.stderr.rstrip().endswith("HTTP 401") and len(without_token.stderr.splitlines()) == 1


# The process itself ----------------------------------------------------------------------------


class BridgeProcess:
    """``openenv-gym mcp ARGS`` with pipes, spoken to in JSON-RPC lines by hand; every read has a timeout."""

    def __init__(self, *args: str) -> None:
        # Unbuffered, so that select() on stdout sees every byte not yet read.
        self.process = subprocess.Popen(
            [*BRIDGE, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO_ROOT,
            bufsize=0,
        )
        self.unread = b""  # read from stdout, not yet returned as a line

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def receive(self, timeout: float = SESSION_TIMEOUT) -> dict[str, Any]:
        """The next message on stdout."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.unread:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError(f"no message from the bridge within {timeout:g} s")
            chunk = os.read(fd, 2**16)
            if not chunk:
                raise EOFError("the bridge closed stdout")
            self.unread += chunk
        line, _, self.unread = self.unread.partition(b"\n")
        return json.loads(line)

    def handshake(self) -> dict[str, Any]:
        """Initialize; the server's answer."""
        client = {"name": "test", "version": "0"}
        params = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": client}
        self.send({"id": 1, "method": "initialize", "params": params})
        answer = self.receive()
        self.send({"method": "notifications/initialized"})
        return answer

    def server(self) -> int:
        """The one server the bridge started."""
        assert wait_until(lambda: len(servers_of(self.process.pid)) == 1, SESSION_TIMEOUT), "no server"
        (server,) = servers_of(self.process.pid)
        return server

    def finish(self, timeout: float = 30 * UNIT) -> tuple[bytes, str]:
        """Close stdin and read stdout and stderr to their end: what was left of them."""
        out, err = self.process.communicate(timeout=timeout)
        return self.unread + out, err.decode()

    def stop(self) -> None:
        stop_process(self.process)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
def test_stdin_eof_ends_the_bridge_cleanly_and_stdout_holds_only_mcp():
    """Closing stdin is the end: the bridge stops its server and exits 0; every line it wrote on
    stdout is a JSON-RPC message, its logs went to stderr and the env server's to its own log."""
    bridge_process = BridgeProcess(TOOLBOX, "--log-level", "INFO")
    try:
        assert bridge_process.handshake()["result"]["serverInfo"]["name"] == "openenv-gym"
        server = bridge_process.server()
        add = {"name": "add", "arguments": {"a": 40, "b": 2}}
        bridge_process.send({"id": 2, "method": "tools/call", "params": add})
        answer = bridge_process.receive()
        out, err = bridge_process.finish()  # EOF
        assert bridge_process.process.returncode == 0, err
        assert not pid_alive(server)
    finally:
        bridge_process.stop()
    assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "42"
    assert answer["result"]["_meta"] == {REWARD_KEY: None, DONE_KEY: False, TRUNCATED_KEY: False}
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in out.decode().splitlines())
    assert f"serving {TOOLBOX}" in err and "stdin closed: the session is closed and its server stopped" in err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_then_the_bridge(signum):
    """SIGTERM or SIGINT with stdin still open: the server is stopped, then the bridge ends by
    that signal (its reader of stdin never gets a line to end on)."""
    bridge_process = BridgeProcess("openenv/Echo-v0", "--log-level", "INFO")
    try:
        bridge_process.handshake()
        server = bridge_process.server()
        bridge_process.process.send_signal(signum)
        # Waited for before stdin is closed: EOF would end the bridge too.
        assert bridge_process.process.wait(30 * UNIT) == -signum
        assert not pid_alive(server)
        _, err = bridge_process.finish()
    finally:
        bridge_process.stop()
    # Logged after the cleanup, so the bridge did it (the signal's default action would not have).
    assert f"stopped by {signum.name}: the session is closed and its server stopped" in err


@pytest.mark.slow
def test_a_killed_bridge_leaves_no_server():
    """SIGKILL gives the bridge no chance to clean up; its server stops by itself (its stdin pipe closes)."""
    bridge_process = BridgeProcess("openenv/Echo-v0")
    try:
        bridge_process.handshake()
        server = bridge_process.server()
        bridge_process.process.kill()
        bridge_process.process.wait(10 * UNIT)
        assert wait_until(lambda: not pid_alive(server), 20 * UNIT)
    finally:
        bridge_process.stop()


# Refusals ------------------------------------------------------------------------------------


def run_bridge(
    *args: str, code: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``openenv-gym mcp ARGS`` (through ``python -c CODE`` if given) with no client: stdin is empty."""
    command = [sys.executable, "-c", code, "mcp", *args] if code else [*BRIDGE, *args]
    return subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT,
        cwd=REPO_ROOT,
        env=env,
    )


def test_a_bad_target_is_one_line_on_stderr():
    """A target the server cannot serve exits 1 with the server's reason in one line; stdout stays empty."""
    result = run_bridge("NoSuchEnv-v9")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("openenv-gym mcp: error: server exited with code 2 before it was ready: ")
    assert "'NoSuchEnv-v9' is neither 'module:attr' nor a registered Gymnasium id" in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a TARGET (an env id or module:attr) or --url"),
        (("openenv/Remote-v0",), "'openenv/Remote-v0' attaches to a running server: pass --url"),
        (("--url", "127.0.0.1:1"), "127.0.0.1:1"),
        (("--url", "http://127.0.0.1:1", "--env-kwargs", '{"a": 1}'), "--env-kwargs cannot reach a running server"),
    ],
    ids=["nothing", "remote-without-url", "url-without-scheme", "env-kwargs-with-url"],
)
def test_what_cannot_be_served_exits_2(args, message):
    result = run_bridge(*args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def test_an_unreachable_url_is_one_line():
    """Nothing listening at --url: exit 1, the connection error in one line."""
    with contextlib.closing(__import__("socket").socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        result = run_bridge("--url", f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr.startswith(f"openenv-gym mcp: error: cannot connect to http://127.0.0.1:{port}")
    assert len(result.stderr.splitlines()) == 1


def test_without_the_sdk_the_error_says_what_to_install():
    """With the SDK unimportable the command stops before it starts anything, saying which extra to install."""
    code = "import sys; sys.modules['mcp'] = None; from openenv_gym.cli import main; main(sys.argv[1:])"
    result = run_bridge("openenv/Echo-v0", code=code)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "openenv-gym mcp: error: the MCP bridge needs the MCP Python SDK (mcp>=2,<3): pip install 'openenv-gym[mcp]'"
    )


def test_help_names_the_options_and_their_defaults():
    result = run_bridge("--help")
    assert result.returncode == 0
    options = ("--url", "--env-kwargs", "--token-env", "--call-timeout", "--startup-timeout", "--allow-task-choice")
    for option in (*options, "--log-level"):
        assert option in result.stdout
    help_text = " ".join(result.stdout.split())
    assert f"(default: {DEFAULT_CALL_TIMEOUT:g})" in help_text
    assert f"(default: {DEFAULT_STARTUP_TIMEOUT:g})" in help_text
