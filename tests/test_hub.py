"""Hub manifests: registration and trust, the real hf_hub_download path offline, push."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # registers the catalog; its version is checked below
from openenv_gym.hub import (
    TrustRemoteCodeError,
    push,
    push_plan,
    register_manifest,
    space_dockerfile,
    space_readme,
)
from openenv_gym.manifest import Manifest, ManifestError, load_manifest
from tests.equivalence import checker_warnings, gym_check
from tests.hf_cache import seed_hf_cache
from tests.manifests import CARTPOLE, write
from tests.utils import REPO_ROOT, free_port

MAIN = "1111111111111111111111111111111111111111"
PINNED = "2222222222222222222222222222222222222222"


@pytest.fixture(autouse=True)
def forget_registrations():
    """Ids a test registers leave the catalog and Gymnasium's registry with it."""
    from openenv_gym.registry import catalog

    before_catalog, before_gym = set(catalog), set(gym.registry)
    yield
    for env_id in set(catalog) - before_catalog:
        del catalog[env_id]
    for env_id in set(gym.registry) - before_gym:
        del gym.registry[env_id]


# --- registration, trust, running -----------------------------------------------------------


def test_a_registered_manifest_makes_env_and_vector_env_and_passes_check_env(tmp_path):
    env_id = register_manifest(write(tmp_path, CARTPOLE), source="a test")
    assert env_id == "hubtest/CartPole200-v0" and gym.spec(env_id).max_episode_steps == 200
    env = gym.make(env_id)
    try:
        assert checker_warnings(gym_check, env.unwrapped) <= checker_warnings(
            gym_check, gym.make("CartPole-v1").unwrapped
        )
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0
    finally:
        env.close()
    envs = gym.make_vec(env_id, num_envs=4)
    try:
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (4, 4) and envs.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
    finally:
        envs.close()


def test_code_named_by_a_manifest_needs_trust(tmp_path, monkeypatch):
    code = CARTPOLE.replace("app: CartPole-v1", "app: tests.testing_env:make_pendulum").replace(
        "image: openenv-gym/runtime:0.1.0\n", ""
    )
    path = write(tmp_path, code)
    with pytest.raises(
        TrustRemoteCodeError, match=r"Python code named by a downloaded manifest.*trust_remote_code=True"
    ):
        register_manifest(path, source="org/pendulum")
    with pytest.raises(TrustRemoteCodeError, match=re.escape("imports 'tests.testing_env:make_pendulum'")):
        register_manifest(path, run="process")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    env_id = register_manifest(path, trust_remote_code=True)
    env = gym.make(env_id)
    try:
        assert env.observation_space.shape == (3,)
    finally:
        env.close()


def test_how_it_runs_is_the_users_choice(tmp_path):
    manifest = load_manifest(write(tmp_path, CARTPOLE + "space_url: https://org-cartpole.hf.space\n"))
    for run, kwargs in (
        ("process", {"provider": "process", "provider_kwargs": {}}),
        ("url", {"base_url": "https://org-cartpole.hf.space", "json_schema_fallback": True}),
        (
            "docker",
            {
                "provider": "docker",
                "provider_kwargs": {"image": "openenv-gym/runtime:0.1.0", "memory": "512m", "cpus": 1.0},
            },
        ),
    ):
        env_id = register_manifest(manifest, run=run, env_id=f"hubtest/Run{run}-v0")
        assert {k: v for k, v in gym.spec(env_id).kwargs.items() if k != "server"} == kwargs
    packed = register_manifest(
        Manifest(name="packed", app="CartPole-v1", sessions_per_server=3), env_id="hubtest/Packed-v0"
    )
    envs = gym.make_vec(packed, num_envs=6)
    try:
        assert len(envs.unwrapped._providers) == 2  # 6 sub-envs, 3 per server
    finally:
        envs.close()
    code_only = Manifest(name="x", app="pkg.mod:Env", space_url="https://x.hf.space")
    assert gym.spec(register_manifest(code_only, env_id="hubtest/Auto-v0")).kwargs["base_url"] == "https://x.hf.space"
    with pytest.raises(ManifestError, match="names no image"):
        register_manifest(Manifest(name="x", app="CartPole-v1"), run="docker")
    loosened = Manifest(
        name="x", app="CartPole-v1", image="openenv-gym/runtime:0.1.0", security_opt=["seccomp=unconfined"]
    )
    with pytest.raises(TrustRemoteCodeError, match="loosen its container's confinement"):
        register_manifest(loosened, run="docker")
    assert gym.spec(
        register_manifest(loosened, run="docker", trust_remote_code=True, env_id="hubtest/Loose-v0")
    ).kwargs["provider_kwargs"]["security_opt"] == ["seccomp=unconfined"]


# --- the real download path, offline, in fresh interpreters -----------------------------------

_SCRIPT = """
import json, sys
import gymnasium as gym, numpy as np
import openenv_gym.hub as hub
from openenv_gym.errors import OpenEnvGymError
from openenv_gym.manifest import ManifestError
repo, revision, mode = sys.argv[1], sys.argv[2] or None, sys.argv[3]
try:
    if mode == "pull":
        print(json.dumps({"name": hub.pull(repo, revision).name}))
    elif mode == "make":
        env_id = hub.register(repo, revision)
        from gymnasium.utils.env_checker import check_env
        checked = gym.make(env_id); check_env(checked.unwrapped, skip_render_check=True); checked.close()
        env = gym.make(env_id); env.reset(seed=0); reward = env.step(1)[1]; env.close()
        envs = gym.make_vec(env_id, num_envs=3); envs.reset(seed=0)
        rewards = envs.step(np.ones(3, dtype=np.int64))[1].tolist(); envs.close()
        hub_env = gym.make("openenv/Hub-v0", repo_id=repo); hub_env.reset(seed=0)
        steps = 0
        while not any(hub_env.step(0)[2:4]):
            steps += 1
        hub_env.close()
        hub_envs = gym.make_vec("openenv/Hub-v0", num_envs=2, repo_id=repo); hub_envs.reset(seed=0)
        rewards += hub_envs.step(np.zeros(2, dtype=np.int64))[1].tolist(); hub_envs.close()
        print(json.dumps({"id": env_id, "reward": reward, "rewards": rewards, "hub_v0_steps": steps + 1}))
except (OpenEnvGymError, ManifestError) as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


@pytest.fixture
def hf_home(tmp_path):
    other = CARTPOLE.replace('version: "1.0.0"', 'version: "0.9.0"').replace("name: cartpole-hub", "name: pinned")
    seed_hf_cache(
        tmp_path, "space", "org/cartpole", {MAIN: {"openenv.yaml": CARTPOLE}, PINNED: {"openenv.yaml": other}}, MAIN
    )
    seed_hf_cache(tmp_path, "space", "org/broken", {MAIN: {"openenv.yaml": "name: broken\nport: x\n"}}, MAIN)
    seed_hf_cache(tmp_path, "space", "org/empty", {MAIN: {"README.md": "# nothing\n"}}, MAIN)
    return tmp_path


def offline(hf_home: Path, repo: str, mode: str, revision: str = "") -> dict:
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, repo, revision, mode], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pull_register_make_and_make_vec_from_the_cache_offline(hf_home):
    """The real hf_hub_download path: pulled, registered, check_env'd, made, made as a vector env, stepped."""
    result = offline(hf_home, "org/cartpole", "make")
    assert result.pop("hub_v0_steps") < 200  # always pushing left ends the episode early
    assert result == {"id": "hubtest/CartPole200-v0", "reward": 1.0, "rewards": [1.0] * 5}


def test_a_pinned_revision_gets_that_revisions_manifest(hf_home):
    assert offline(hf_home, "org/cartpole", "pull", revision=PINNED) == {"name": "pinned"}
    assert offline(hf_home, "org/cartpole", "pull") == {"name": "cartpole-hub"}


@pytest.mark.parametrize(
    ("repo", "error", "message"),
    [
        ("org/absent", "HubError", "not in the local cache and the Hub cannot be reached"),
        ("org/empty", "HubError", "not in the local cache"),
        ("org/broken", "ManifestError", "app: Field required; port: Input should be a valid integer"),
        ("not a repo id", "HubError", "expected a repo id like 'org/name'"),
    ],
)
def test_pull_errors_are_clear(hf_home, repo, error, message):
    result = offline(hf_home, repo, "pull")
    assert result["error"] == error and message in result["message"], result


def test_cli_pull_shows_how_an_env_runs(hf_home):
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "pull", "org/cartpole"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hubtest/CartPole200-v0: CartPole from the Hub, 200 steps (version 1.0.0)")
    assert "runs with: process, docker; image openenv-gym/runtime:0.1.0" in done.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "pull", "org/broken"], env=env, capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 1 and "openenv-gym pull: error: openenv.yaml: app: Field required" in failed.stderr


# --- push ------------------------------------------------------------------------------------


class RecordingApi:
    """Stands in for huggingface_hub.HfApi: records the calls push makes instead of uploading."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def create_repo(self, *args, **kwargs):
        self.calls.append(("create_repo", args, kwargs))

    def create_commit(self, *args, **kwargs):
        self.calls.append(("create_commit", args, kwargs))


def test_push_publishes_an_env_dir_as_a_docker_space_up_to_the_upload_call():
    api = RecordingApi()
    url = push(REPO_ROOT / "envs" / "echo", "org/echo", api=api)
    assert url == "https://huggingface.co/spaces/org/echo"
    (create_name, create_args, create_kwargs), (commit_name, commit_args, commit_kwargs) = api.calls
    assert (create_name, create_args) == ("create_repo", ("org/echo",))
    assert create_kwargs == {"repo_type": "space", "space_sdk": "docker", "private": False, "exist_ok": True}
    assert commit_name == "create_commit" and commit_args[0] == "org/echo" and commit_kwargs["repo_type"] == "space"
    files = {op.path_in_repo: op for op in commit_args[1]}
    assert {"openenv.yaml", "environment.py", "__init__.py", "Dockerfile", "README.md"} <= set(files)
    readme = files["README.md"].path_or_fileobj.decode()
    assert readme.startswith("---\ntitle: echo_env\nsdk: docker\napp_port: 8000\ntags:\n  - openenv\n")
    dockerfile = files["Dockerfile"].path_or_fileobj.decode()
    assert "FROM python:3.11-slim" in dockerfile and '"openenv_gym.envs.echo:EchoEnvironment"' in dockerfile


def test_push_replaces_the_top_level_readme_and_dockerfile_and_keeps_nested_ones(tmp_path):
    (tmp_path / "openenv.yaml").write_text("name: mine\napp: CartPole-v1\n")
    (tmp_path / "README.md").write_text("# Mine\n")
    (tmp_path / "Dockerfile").write_text("FROM mine\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# Docs\n")
    api = RecordingApi()
    push(tmp_path, "org/mine", api=api)
    operations = api.calls[1][1][1]
    paths = [op.path_in_repo for op in operations]
    assert sorted(paths) == ["Dockerfile", "README.md", "docs/README.md", "openenv.yaml"]
    files = {op.path_in_repo: op.path_or_fileobj for op in operations}
    assert files["README.md"].decode().endswith("# Mine\n") and b"sdk: docker" in files["README.md"]
    assert b"FROM mine" not in files["Dockerfile"]


def test_space_files_keep_the_envs_own_readme(tmp_path):
    (tmp_path / "README.md").write_text("---\ntitle: old\n---\n\n# Mine\n")
    manifest = Manifest(name="mine", app="CartPole-v1", package="my-envs")
    assert space_readme(manifest, tmp_path).endswith("---\n\n# Mine\n")
    assert "pip install --no-cache-dir openenv-gym==" in space_dockerfile(manifest)
    assert "my-envs" in space_dockerfile(manifest)
    with pytest.raises(ManifestError, match="cannot read"):
        push(tmp_path, "org/mine", api=RecordingApi())


def test_push_plan_of_a_package_installs_it_and_leaves_caches_out(tmp_path):
    """A directory with a pyproject.toml is copied and pip-installed in the Space; caches are not uploaded."""
    (tmp_path / "openenv.yaml").write_text("name: mine\napp: mine.environment:MineEnvironment\nport: 8000\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    for cached in ("mine/__pycache__/x.pyc", ".pytest_cache/v/cache", "mine.egg-info/PKG-INFO", "mine/__init__.py"):
        (tmp_path / cached).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / cached).write_text("")
    plan = push_plan(tmp_path, "org/mine")
    assert plan.paths() == ["Dockerfile", "README.md", "mine/__init__.py", "openenv.yaml", "pyproject.toml"]
    assert plan.front_matter() == (
        "---\ntitle: mine\nsdk: docker\napp_port: 8000\ntags:\n  - openenv\n  - openenv-gym\n---\n"
    )
    assert plan.generated["Dockerfile"].splitlines()[:3] == [
        "FROM python:3.11-slim",
        "WORKDIR /app",
        "COPY . /app",
    ]
    assert (
        f"RUN pip install --no-cache-dir openenv-gym=={openenv_gym.__version__} /app\n" in plan.generated["Dockerfile"]
    )
    api = RecordingApi()
    push(tmp_path, "org/mine", api=api)
    assert sorted(op.path_in_repo for op in api.calls[1][1][1]) == plan.paths()


def test_cli_push_dry_run_prints_the_plan_without_the_network(tmp_path):
    """push --dry-run lists the files and prints the front matter and the Dockerfile, with the Hub unreachable."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = cli("push", "envs/echo", "--repo-id", "org/echo", "--dry-run", endpoint=endpoint, hf_home=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "would push envs/echo to the public Space org/echo (dry run: nothing was sent)"
    assert lines[1:7] == [
        "files (5):",
        "  Dockerfile  (generated)",
        "  README.md  (generated)",
        "  __init__.py",
        "  environment.py",
        "  openenv.yaml",
    ]
    assert "README.md front matter:\n  ---\n  title: echo_env\n  sdk: docker\n  app_port: 8000\n" in done.stdout
    assert '  CMD ["python", "-m", "openenv_gym", "serve", "openenv_gym.envs.echo:EchoEnvironment"' in done.stdout
    # A Space is reachable from anywhere: its server requires the token of the Space's secret.
    assert '"--host", "0.0.0.0", "--port", "8000", "--token-env", "OPENENV_GYM_TOKEN"]' in done.stdout


@contextlib.contextmanager
def refusing_hub(status: int):
    """A local stand-in for the Hub that answers every request with ``status``; yields its URL."""
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            body = b'{"error": "Invalid credentials in Authorization header"}'
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = do_PUT = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def hanging_up_hub():
    """A local stand-in for an unreachable Hub: reads each request's first line, then hangs up.

    Yields its URL and the request lines received so far, to count attempts.
    """
    import threading

    requests: list[str] = []
    stop = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)

    def serve():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1.0)
                try:
                    requests.append(connection.recv(4096).decode(errors="replace").split("\r\n")[0])
                except TimeoutError:
                    requests.append("")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", requests
    finally:
        stop.set()
        thread.join()
        listener.close()


def manifest_requests(requests: list[str]) -> list[str]:
    """The requests for a file of a repo (hf_hub_download's), among those a stand-in Hub received."""
    return [line for line in requests if "/resolve/" in line]


def cli(*args: str, endpoint: str, hf_home: Path, **extra_env: str) -> subprocess.CompletedProcess:
    """Run the CLI with the Hub at ``endpoint`` (never the real one), no token, the HF cache in ``hf_home``."""
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(hf_home)}
    for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "OPENENV_GYM_DEBUG"):
        env.pop(name, None)
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "openenv_gym", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )


def test_cli_push_without_network_is_one_line_and_exit_1(tmp_path):
    """push with the Hub unreachable prints what failed, why and what to do in one line, no traceback."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = cli("push", "envs/echo", "--repo-id", "org/echo", endpoint=endpoint, hf_home=tmp_path)
    assert done.returncode == 1
    assert re.fullmatch(
        re.escape(
            f"openenv-gym push: error: cannot push envs/echo to the Space org/echo: the Hub at {endpoint} "
            "cannot be reached ("
        )
        + r"[^\n]*"
        + re.escape("); check the network (or HF_ENDPOINT) and try again\n"),
        done.stderr,
    ), done.stderr
    assert done.stdout == ""


def test_cli_push_not_logged_in_says_to_log_in(tmp_path):
    """push refused with 401 says to log in (hf auth login / HF_TOKEN), in one line."""
    with refusing_hub(401) as endpoint:
        done = cli("push", "envs/echo", "--repo-id", "org/echo", endpoint=endpoint, hf_home=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "openenv-gym push: error: cannot push envs/echo to the Space org/echo: the Hub refused it (HTTP 401: "
        "not logged in, or the token cannot write to org/echo); log in with `hf auth login` or set HF_TOKEN "
        "to a token with write access\n"
    )


def test_cli_debug_env_var_shows_the_traceback(tmp_path):
    """OPENENV_GYM_DEBUG=1 lets a failed command's traceback through."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = cli("push", "envs/echo", "--repo-id", "org/echo", endpoint=endpoint, hf_home=tmp_path, OPENENV_GYM_DEBUG="1")
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert "openenv_gym.errors.HubError: cannot push envs/echo to the Space org/echo" in done.stderr


def unreachable_hub_message(endpoint: str) -> str:
    """A regular expression for pull's one-line error when nothing is cached and ``endpoint`` does not answer."""
    return (
        re.escape(f"openenv-gym pull: error: openenv.yaml of space org/absent is not in the local cache and the Hub "
                  f"at {endpoint} cannot be reached (") + r"[^\n]*"
        + re.escape("): check the network (or HF_ENDPOINT); once pulled while online, HF_HUB_OFFLINE=1 uses the "
                    "cached copy\n")
    )  # fmt: skip


def test_cli_pull_with_nothing_listening_fails_without_retrying(tmp_path):
    """pull with nothing cached and a refused connection fails with a hint, without huggingface_hub's retries."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = cli("pull", "org/absent", endpoint=endpoint, hf_home=tmp_path)
    assert done.returncode == 1
    # One line: none of the "Retrying in 1s [Retry 1/5]" warnings that used to take ~23 s.
    assert re.fullmatch(unreachable_hub_message(endpoint), done.stderr), done.stderr


def test_cli_pull_with_the_hub_hanging_up_fails_after_one_attempt(tmp_path):
    """pull with nothing cached and a Hub that hangs up tries once, then fails with the hint."""
    with hanging_up_hub() as (endpoint, requests):
        done = cli("pull", "org/absent", endpoint=endpoint, hf_home=tmp_path)
    assert done.returncode == 1
    assert re.fullmatch(unreachable_hub_message(endpoint), done.stderr), done.stderr
    assert requests.count("HEAD / HTTP/1.1") == 1 and manifest_requests(requests) == [], requests


def test_cli_pull_with_the_hub_unreachable_uses_the_cache_after_one_attempt(hf_home):
    """Without HF_HUB_OFFLINE, an unreachable Hub still gives the cached manifest, after one quick try."""
    with hanging_up_hub() as (endpoint, requests):
        done = cli("pull", "org/cartpole", endpoint=endpoint, hf_home=hf_home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hubtest/CartPole200-v0: CartPole from the Hub, 200 steps (version 1.0.0)")
    assert requests.count("HEAD / HTTP/1.1") == 1 and manifest_requests(requests) == [], requests
