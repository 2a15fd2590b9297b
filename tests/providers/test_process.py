"""ProcessProvider: a server per child process, and no orphan however the owner goes away."""

from __future__ import annotations

import gc
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openenv_gym.client import http_get_json
from openenv_gym.client.sync_client import EnvClient
from openenv_gym.env import RemoteEnv
from openenv_gym.errors import ServerConnectError, ServerStartError
from openenv_gym.providers import ProcessProvider, URLProvider, make_provider
from tests.utils import REPO_ROOT, UNIT, pid_alive, server_pids, wait_until

OWNER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import gymnasium as gym, openenv_gym
    env = gym.make("openenv/CartPole-v1")
    env.reset(seed=0)
    print(env.unwrapped.provider.pid, flush=True)
    if sys.argv[1] == "sleep":
        time.sleep(60)
    # "exit": leave without closing anything
    """
)


def test_start_health_stop():
    """start() returns a loopback URL that answers /health; stop() ends the process; both idempotent."""
    provider = ProcessProvider("CartPole-v1")
    url = provider.start()
    assert provider.start() == url
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
    assert http_get_json(url, "/health") == {"status": "healthy"}
    pid = provider.pid
    provider.stop()
    provider.stop()
    assert not pid_alive(pid)
    assert not provider.is_alive()


def test_garbage_collection_stops_the_server():
    """A provider dropped without stop() takes its server with it when collected."""
    provider = ProcessProvider("CartPole-v1")
    provider.start()
    pid = provider.pid
    del provider
    gc.collect()
    assert wait_until(lambda: not pid_alive(pid), 10 * UNIT)


@pytest.mark.parametrize("how", ["interpreter exit", "SIGKILL"])
def test_no_orphan_when_the_owner_goes_away(how):
    """The server is gone within seconds when its owner exits without closing, or is SIGKILLed."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, "sleep" if how == "SIGKILL" else "exit"],
        stdout=subprocess.PIPE,
        cwd=REPO_ROOT,
        text=True,
    )
    try:
        server_pid = int(owner.stdout.readline())
        assert server_pid in server_pids()
        if how == "SIGKILL":
            owner.send_signal(signal.SIGKILL)
        assert owner.wait(30 * UNIT) in (0, -signal.SIGKILL)
        assert wait_until(lambda: not pid_alive(server_pid), 10 * UNIT), "server outlived its owner"
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()


def test_a_server_that_fails_to_start_reports_its_output():
    """A target that cannot be served gives ServerStartError with the server's own message."""
    provider = ProcessProvider("no_such_module_anywhere:Env")
    with pytest.raises(ServerStartError, match="server exited with code 2 before it was ready") as caught:
        provider.start()
    assert "cannot import 'no_such_module_anywhere'" in caught.value.output
    assert not provider.is_alive()


def test_a_server_that_never_gets_ready_times_out_and_is_killed(tmp_path):
    """A server that never reports ready fails after startup_timeout, and the process is reaped."""
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\necho $$ > " + str(tmp_path / "pid") + "\nexec sleep 60\n")
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IEXEC)
    provider = ProcessProvider("CartPole-v1", python=str(fake_python), startup_timeout=0.5 * UNIT)
    expected = f"server did not report ready within {0.5 * UNIT:g} s (it makes one environment before it listens"
    with pytest.raises(ServerStartError, match=re.escape(expected)):
        provider.start()
    pid = int((tmp_path / "pid").read_text())
    assert wait_until(lambda: not pid_alive(pid), 10 * UNIT)


def test_cwd_serves_a_package_that_is_not_installed(tmp_path):
    """cwd= runs the server in that directory, so a module:attr of a package there is served uninstalled."""
    package = tmp_path / "not_installed_env"
    package.mkdir()
    (package / "__init__.py").write_text("import gymnasium as gym\n\ndef make():\n    return gym.make('CartPole-v1')\n")
    with pytest.raises(ServerStartError, match="server exited with code 2 before it was ready"):
        ProcessProvider("not_installed_env:make").start()
    with ProcessProvider("not_installed_env:make", cwd=tmp_path) as url:
        assert http_get_json(url, "/metadata")["target"] == "not_installed_env:make"


def test_make_provider():
    """Providers are found by name, and a wrong name lists the right ones."""
    assert isinstance(make_provider("url", base_url="http://127.0.0.1:1"), URLProvider)
    with pytest.raises(
        ValueError,
        match=re.escape("unknown provider 'dockr'; expected one of ['docker', 'process', 'ray', 'swarm', 'url']"),
    ):
        make_provider("dockr")
    with pytest.raises(TypeError, match=r"^provider='process': .*unexpected keyword argument 'ray_address'"):
        make_provider("process", target="CartPole-v1", ray_address="auto")


def test_server_environment_inherits_no_stdin_terminal():
    """The child's stdin is our pipe, not the terminal, so only its owner can end it."""
    provider = ProcessProvider("CartPole-v1")
    provider.start()
    try:
        target = os.readlink(f"/proc/{provider.pid}/fd/0")
        assert target.startswith("pipe:")
    finally:
        provider.stop()


def test_private_servers_never_reap_idle_sessions():
    """The process provider turns the idle reaper off: its server lives exactly as long as its owner."""
    command = ProcessProvider("CartPole-v1").command(ready_fd=9)
    assert command[command.index("--idle-timeout") + 1] == "none"
    assert ProcessProvider("CartPole-v1", idle_timeout=30).command(9)[-1] == "30"


def test_kill_is_immediate_and_reaps():
    """kill() ends even a server that would take its time to stop, and leaves no zombie."""
    provider = ProcessProvider("CartPole-v1")
    provider.start()
    pid = provider.pid
    provider.kill()
    assert not pid_alive(pid)
    assert not provider.is_alive()


def test_a_server_bound_beyond_loopback_gets_a_token():
    """Bound to another address (127.0.0.2 is not in our loopback set), the server requires a fresh
    token that the provider holds and RemoteEnv presents; it is not on the server's command line."""
    assert ProcessProvider("CartPole-v1").token is None
    provider = ProcessProvider("CartPole-v1", host="127.0.0.2")
    token = provider.token
    assert token and len(token) >= 32 and token != ProcessProvider("CartPole-v1", host="127.0.0.2").token
    try:
        url = provider.start()
        assert url.startswith("http://127.0.0.2:")
        assert token.encode() not in Path(f"/proc/{provider.pid}/cmdline").read_bytes()
        with pytest.raises(ServerConnectError, match="HTTP 401"):
            http_get_json(url, "/schema")
        for wrong in (None, "wrong"):
            client = EnvClient(url, token=wrong)
            with pytest.raises(ServerConnectError, match="HTTP 401"):
                client.connect()
            client.close()
        env = RemoteEnv("CartPole-v1", provider=provider)
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0
        env.close()
    finally:
        provider.stop()


def test_the_token_is_not_inherited_by_what_the_env_starts():
    """serve takes its token out of the environment: neither the env nor a child process it starts
    (agent code run without a sandbox, say) can read it there."""
    provider = ProcessProvider("tests.testing_env:make_environ_reporter", host="127.0.0.2")
    env = RemoteEnv("tests.testing_env:make_environ_reporter", provider=provider)
    try:
        _, info = env.reset(seed=0)
        assert info == {"server_sees": "", "child_sees": ""}
    finally:
        env.close()


def test_http_requests_never_go_through_a_proxy_from_the_environment(monkeypatch):
    """A proxy from the environment (here one that refuses every connection) is not used: it would
    see the token, and could not reach a cluster's addresses anyway."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    provider = ProcessProvider("CartPole-v1", host="127.0.0.2")
    try:
        url = provider.start()
        assert "action" in http_get_json(url, "/schema", token=provider.token)
    finally:
        provider.stop()


@pytest.mark.parametrize("provider", ["process", "docker"])
def test_an_empty_token_is_refused_before_anything_starts(provider):
    from openenv_gym.providers.docker.provider import DockerProvider

    make = {"process": ProcessProvider, "docker": DockerProvider}[provider]
    with pytest.raises(ValueError, match="token must not be empty"):
        make("CartPole-v1", token="")


def test_every_server_a_process_starts_gets_its_snapshot_key_and_a_given_one_wins(monkeypatch):
    """In the server's environment, never its command line: this process's key (so its servers
    restore each other's portable snapshots), OPENENV_GYM_SNAPSHOT_KEY when set, or the one given."""
    from openenv_gym.startup import SNAPSHOT_KEY_ENV_VAR, shared_snapshot_key

    monkeypatch.delenv(SNAPSHOT_KEY_ENV_VAR, raising=False)
    drawn = shared_snapshot_key()
    assert len(drawn) >= 64 and shared_snapshot_key() == drawn
    first, second = ProcessProvider("CartPole-v1"), ProcessProvider("CartPole-v1", token="t" * 32)
    assert (
        first._child_environment()[SNAPSHOT_KEY_ENV_VAR] == second._child_environment()[SNAPSHOT_KEY_ENV_VAR] == drawn
    )
    assert drawn not in " ".join(first.command(3))
    assert ProcessProvider("CartPole-v1", snapshot_key="given")._child_environment()[SNAPSHOT_KEY_ENV_VAR] == "given"
    monkeypatch.setenv(SNAPSHOT_KEY_ENV_VAR, "configured")
    assert first._child_environment()[SNAPSHOT_KEY_ENV_VAR] == "configured"
