"""The console script: `openenv-gym serve` and `python -m openenv_gym serve`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from openenv_gym.server.runner import READY_PREFIX
from tests.utils import REPO_ROOT, UNIT, stop_process

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))


@pytest.mark.parametrize("command", [[CONSOLE_SCRIPT], [sys.executable, "-m", "openenv_gym"]], ids=["script", "module"])
def test_serve_until_sigterm(command):
    """serve prints its URL, answers /health and /metadata, and exits 0 on SIGTERM."""
    server = subprocess.Popen(
        [*command, "serve", "CartPole-v1", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT
    )
    try:
        line = server.stdout.readline()
        match = re.match(
            re.escape(READY_PREFIX) + r"(http://127\.0\.0\.1:\d+) \(WebSocket ws://127\.0\.0\.1:\d+/ws\)", line
        )
        assert match, line
        with urllib.request.urlopen(match.group(1) + "/metadata", timeout=5 * UNIT) as response:
            assert json.loads(response.read())["name"] == "CartPole-v1"
        server.send_signal(signal.SIGTERM)
        assert server.wait(10 * UNIT) == 0
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def test_serve_rejects_an_unknown_target():
    """A target that is neither module:attr nor a Gymnasium id exits 2 with a message saying so."""
    result = subprocess.run(
        [CONSOLE_SCRIPT, "serve", "NoSuchEnv-v9", "--port", "0"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "'NoSuchEnv-v9' is neither 'module:attr' nor a registered Gymnasium id" in result.stderr


def test_serve_reports_a_busy_port():
    """A port already taken gives exit code 1 and a one-line reason, not a traceback."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [CONSOLE_SCRIPT, "serve", "CartPole-v1", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_beyond_loopback_without_a_token_exits_with_the_fix():
    """--host 0.0.0.0 with neither --token-env nor --insecure exits 2 before anything is made or
    bound: the target here does not exist, and the message is still about the token."""
    for target in ("CartPole-v1", "NoSuchEnv-v9"):
        result = subprocess.run(
            [CONSOLE_SCRIPT, "serve", "--host", "0.0.0.0", target, "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("openenv-gym serve: 0.0.0.0 is beyond loopback"), result.stderr
        assert "--token-env VAR" in result.stderr and "--insecure" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    both = subprocess.run(
        [CONSOLE_SCRIPT, "serve", "CartPole-v1", "--host", "0.0.0.0", "--insecure", "--token-env", "T"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "T": "a-token"},
    )
    assert both.returncode == 2 and "contradict" in both.stderr


def test_serve_insecure_beyond_loopback_starts_and_warns(tmp_path):
    """With --insecure it binds 0.0.0.0 (briefly; reached through 127.0.0.1 only), warns on stderr,
    and serves without a token."""
    errors = (tmp_path / "stderr").open("w+")
    server = subprocess.Popen(
        [CONSOLE_SCRIPT, "serve", "CartPole-v1", "--host", "0.0.0.0", "--port", "0", "--insecure"],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        line = server.stdout.readline()
        match = re.match(re.escape(READY_PREFIX) + r"http://0\.0\.0\.0:(\d+) ", line)
        assert match, line
        with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/schema", timeout=5 * UNIT) as response:
            assert "action" in json.loads(response.read())
        server.send_signal(signal.SIGTERM)
        assert server.wait(10 * UNIT) == 0
    finally:
        stop_process(server)
        server.stdout.close()
        errors.seek(0)
        logged = errors.read()
        errors.close()
    (warning,) = [line for line in logged.splitlines() if "WARNING" in line]
    assert "serving on 0.0.0.0 without a token (insecure)" in warning and "--token-env" in warning


def test_serve_help_lists_the_options():
    """--help documents the options a user needs."""
    result = subprocess.run([CONSOLE_SCRIPT, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for option in ("--host", "--port", "--max-sessions", "--idle-timeout", "--max-episode-steps", "--env-kwargs"):
        assert option in result.stdout
    assert "--ready-fd" not in result.stdout  # internal to the process provider


def test_env_kwargs_reach_the_environment():
    """--env-kwargs passes keyword arguments through gym.make on the server (Pendulum's gravity here)."""
    import gymnasium as gym
    import numpy as np

    from openenv_gym.client.sync_client import EnvClient

    server = subprocess.Popen(
        [CONSOLE_SCRIPT, "serve", "Pendulum-v1", "--port", "0", "--env-kwargs", '{"g": 1.5}'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline()[len(READY_PREFIX) :].split()[0]
        with EnvClient(url) as client:
            client.reset(seed=0)
            remote = client.step({"action": [0.0]}).observation["observation"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(10 * UNIT)
        server.stdout.close()
    low_gravity, default_gravity = gym.make("Pendulum-v1", g=1.5), gym.make("Pendulum-v1")
    low_gravity.reset(seed=0)
    default_gravity.reset(seed=0)
    expected = low_gravity.step(np.array([0.0], dtype=np.float32))[0]
    np.testing.assert_array_equal(np.asarray(remote, dtype=np.float32), expected)
    assert not np.array_equal(expected, default_gravity.step(np.array([0.0], dtype=np.float32))[0])


@pytest.mark.parametrize(("option", "value"), [("--max-episode-steps", "0"), ("--idle-timeout", "-5")])
def test_nonsense_limits_are_refused(option, value):
    """A zero time limit or a negative idle timeout is an argument error, not a silent default."""
    result = subprocess.run(
        [CONSOLE_SCRIPT, "serve", "CartPole-v1", option, value], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "expected a positive number" in result.stderr


def test_version_prints_the_package_version():
    """--version prints `openenv-gym <version>` and exits 0."""
    import openenv_gym

    result = subprocess.run([CONSOLE_SCRIPT, "--version"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"openenv-gym {openenv_gym.__version__}\n", "")


@pytest.mark.parametrize(
    ("command", "description"),
    [
        ("ps", "List the env servers of openenv-gym: first the `openenv-gym serve` processes of this user"),
        ("clean", "Remove the containers of openenv-gym whose owner process is gone"),
    ],
)
def test_ps_and_clean_have_help(command, description):
    """ps and clean are summarized in --help and described in their own --help."""
    overview = subprocess.run([CONSOLE_SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
    assert re.search(rf"^    {command} +\S", overview.stdout, re.MULTILINE), overview.stdout
    result = subprocess.run([CONSOLE_SCRIPT, command, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert description in " ".join(result.stdout.split())


def ps_without_docker(tmp_path: Path) -> subprocess.CompletedProcess:
    """``openenv-gym ps`` with DOCKER_HOST at a socket that does not exist (no engine)."""
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    return subprocess.run([CONSOLE_SCRIPT, "ps"], capture_output=True, text=True, timeout=60, env=env)


def ps_row(stdout: str, pid: int) -> str:
    """The row of ``pid`` in ps's process table, with its columns' padding squeezed to one space."""
    rows = [" ".join(line.split()) for line in stdout.splitlines() if line.split()[:1] == [str(pid)]]
    assert len(rows) == 1, stdout
    return rows[0]


def test_ps_lists_a_server_started_by_hand_and_says_docker_is_unavailable(tmp_path):
    """ps shows an `openenv-gym serve` process (pid, target, address, parent) and, with no engine, says so and exits 0."""
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym", "serve", "CartPole-v1", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline()[len(READY_PREFIX) :].split()[0]
        result = ps_without_docker(tmp_path)
    finally:
        stop_process(server)
        server.stdout.close()
    owner = Path("/proc/self/comm").read_text().strip()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["PID", "TARGET", "ADDRESS", "OWNER"]
    assert (
        ps_row(result.stdout, server.pid)
        == f"{server.pid} CartPole-v1 {url.removeprefix('http://')} {os.getpid()} {owner}"
    )
    assert result.stderr == (
        f"openenv-gym ps: containers not listed: no Docker Engine answers (no socket at unix://{tmp_path}/no-engine.sock); "
        "start one (`dockerd`, or scripts/docker-engine.sh in a source checkout) or choose another provider\n"
    )


def test_ps_finds_the_target_after_the_options(tmp_path):
    """A server started with its options first (`serve --port 0 --inline CartPole-v1`) is listed with its target."""
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym", "serve", "--port", "0", "--inline", "CartPole-v1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()
        result = ps_without_docker(tmp_path)
    finally:
        stop_process(server)
        server.stdout.close()
    assert ps_row(result.stdout, server.pid).split()[:2] == [str(server.pid), "CartPole-v1"]


def test_the_serve_flags_without_a_value_are_the_parsers():
    """SERVE_FLAGS, which ps uses to find the target, names exactly the serve options that take no value."""
    from openenv_gym.cli import build_parser
    from openenv_gym.providers.process import SERVE_FLAGS

    commands = next(action for action in build_parser()._actions if action.dest == "command")
    serve = commands.choices["serve"]
    no_value = {option for action in serve._actions if action.nargs == 0 for option in action.option_strings}
    assert no_value == SERVE_FLAGS


def test_ps_lists_a_server_of_the_process_provider_with_its_owner(tmp_path):
    """A server the process provider started is listed with this process as its owner, stopping with it."""
    from openenv_gym.providers import ProcessProvider

    provider = ProcessProvider("Pendulum-v1")
    try:
        url = provider.start()
        result = ps_without_docker(tmp_path)
        pid = provider.pid
    finally:
        provider.stop()
    owner = Path("/proc/self/comm").read_text().strip()
    assert result.returncode == 0, result.stderr
    assert (
        ps_row(result.stdout, pid)
        == f"{pid} Pendulum-v1 {url.removeprefix('http://')} {os.getpid()} {owner} (stops with it)"
    )


class StubContainers:
    """Stands in for a docker client's ``containers``: lists one container of ours whose owner is gone."""

    def list(self, all, filters):
        import socket
        import types

        labels = {
            "openenv-gym.owner-host": socket.gethostname(), "openenv-gym.owner-pid": "999999999",
            "openenv-gym.owner-started": "1", "openenv-gym.target": "CartPole-v1",
        }  # fmt: skip
        ports = {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}
        return [types.SimpleNamespace(short_id="abc123", name="x", status="running", labels=labels, ports=ports)]


def test_ps_lists_processes_then_containers(monkeypatch, capsys):
    """With an engine, ps prints the process table, a blank line, then the containers with their owners
    (no services: the engine is in no swarm)."""
    import socket
    import types

    from openenv_gym import cli
    from openenv_gym.cli import containers
    from openenv_gym.providers import process

    monkeypatch.setattr(process, "server_processes", lambda: [])
    engine = types.SimpleNamespace(containers=StubContainers(), info=lambda: {"Swarm": {"LocalNodeState": "inactive"}})
    monkeypatch.setattr(containers, "docker_client", lambda: engine)
    with pytest.raises(SystemExit) as exited:
        cli.main(["ps"])
    assert exited.value.code == 0
    owner = f"{socket.gethostname()}:999999999 (gone)"
    assert capsys.readouterr().out == (
        "PID  TARGET  ADDRESS  OWNER\n"
        "\n"
        f"CONTAINER  STATUS   TARGET       {'OWNER'.ljust(len(owner))}  PORTS\n"
        f"abc123     running  CartPole-v1  {owner}  127.0.0.1:49153->8000/tcp\n"
    )


def test_tasks_lists_one_task_per_line(tmp_path):
    """`openenv-gym tasks` prints id, difficulty and the prompt's first line per task; --difficulty and --tasks filter."""
    from openenv_gym.envs.coding import task_ids

    everything = subprocess.run([CONSOLE_SCRIPT, "tasks"], capture_output=True, text=True, timeout=60)
    assert everything.returncode == 0, everything.stderr
    lines = everything.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == task_ids()
    assert lines[0].startswith("digit-square-sum\teasy\tWrite a function that returns the sum of the squares")
    hard = subprocess.run([CONSOLE_SCRIPT, "tasks", "--difficulty", "hard"], capture_output=True, text=True, timeout=60)
    assert [line.split("\t")[0] for line in hard.stdout.splitlines()] == task_ids(difficulties=["hard"])
    mine = tmp_path / "mine.jsonl"
    row = {
        "task_id": "t",
        "difficulty": "easy",
        "prompt": "First line.\nSecond.",
        "signature": "def f(x):",
        "entry_point": "f",
        "tests": [{"args": [1], "expected": 2}],
    }
    mine.write_text(json.dumps(row) + "\n")
    listed = subprocess.run([CONSOLE_SCRIPT, "tasks", "--tasks", str(mine)], capture_output=True, text=True, timeout=60)
    assert listed.stdout == "t\teasy\tFirst line.\n"
    bad = subprocess.run([CONSOLE_SCRIPT, "tasks", "--difficulty", "hrad"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'hrad'" in bad.stderr


def test_tasks_lists_the_git_envs_tasks_with_env_git():
    """`openenv-gym tasks --env git` lists openenv/Git-v0's tasks, in file order; --difficulty filters them too."""
    from openenv_gym.envs.git import load_tasks, task_ids

    listed = subprocess.run([CONSOLE_SCRIPT, "tasks", "--env", "git"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    tasks = load_tasks()
    assert rows == [[task.task_id, task.difficulty, task.prompt.splitlines()[0]] for task in tasks]
    easy = subprocess.run(
        [CONSOLE_SCRIPT, "tasks", "--env", "git", "--difficulty", "easy"], capture_output=True, text=True, timeout=60
    )
    assert [line.split("\t")[0] for line in easy.stdout.splitlines()] == task_ids(difficulties=["easy"])
    unknown = subprocess.run([CONSOLE_SCRIPT, "tasks", "--env", "gti"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "invalid choice: 'gti'" in unknown.stderr


def test_tasks_of_an_env_id_lists_what_its_server_publishes():
    """`openenv-gym tasks ID` starts the env's server and lists its /schema task set with each split."""
    import openenv_gym

    kwargs = '{"generators": ["gcd", "maze"]}'
    listed = subprocess.run(
        [CONSOLE_SCRIPT, "tasks", "openenv/ReasoningGym-v0", "--env-kwargs", kwargs, "--split", "test"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    catalog = openenv_gym.tasks("openenv/ReasoningGym-v0", generators=["gcd", "maze"])
    assert [line.split("\t") for line in listed.stdout.splitlines()] == [
        [entry.task_id, entry.difficulty, "test"] for entry in catalog if entry.split == "test"
    ]
    refused = subprocess.run(
        [CONSOLE_SCRIPT, "tasks", "openenv/CartPole-v1"], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 1 and refused.stderr.startswith("openenv-gym tasks: error:")
    assert "publishes no task set" in refused.stderr
