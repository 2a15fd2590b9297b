"""`openenv-gym init`: the package it writes passes its own tests, ruff, `serve`, and is what build and push expect."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.client import http_get_json
from openenv_gym.hub import push_plan
from openenv_gym.manifest import load_manifest
from openenv_gym.scaffold import EnvNames, init_env
from openenv_gym.startup import READY_PREFIX
from tests.utils import REPO_ROOT, UNIT, stop_process

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))
FILES = [
    ".gitignore",
    "Dockerfile",
    "README.md",
    "demo/__init__.py",
    "demo/catalog.py",
    "demo/environment.py",
    "openenv.yaml",
    "pyproject.toml",
    "tests/test_demo.py",
]


def fresh_env() -> dict[str, str]:
    """The environment of a user's shell: nothing of this test run's (no PYTHONPATH to the repository)."""
    return {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHONPATH"))}


def init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``openenv-gym init ARGS`` in ``cwd``."""
    return subprocess.run(
        [CONSOLE_SCRIPT, "init", *args], cwd=cwd, env=fresh_env(), capture_output=True, text=True, timeout=60 * UNIT
    )


@pytest.fixture(scope="module", params=["plain", "tools"])
def scaffold(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh ``openenv-gym init demo`` (``--tools`` for the tool env), written by the console script."""
    parent = tmp_path_factory.mktemp(f"init-{request.param}")
    done = init("demo", *(["--tools"] if request.param == "tools" else []), cwd=parent)
    assert done.returncode == 0, done.stderr
    kind = "a tool env" if request.param == "tools" else "an env"
    assert done.stdout.splitlines() == [
        f"wrote 9 files in demo: {kind} demo/Demo-v0",
        *(f"  {path}" for path in FILES),
        "next: cd demo && python -m pytest && openenv-gym validate .",
    ]
    return parent / "demo"


@pytest.mark.slow
def test_the_scaffolds_own_tests_pass(scaffold: Path):
    """`python -m pytest` in the new directory, in a fresh interpreter, passes every test it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=scaffold,
        env=fresh_env(),
        capture_output=True,
        text=True,
        timeout=300 * UNIT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    expected = 9 if (scaffold / "demo" / "environment.py").read_text().count("@tool") else 6
    assert re.search(rf"^{expected} passed in ", done.stdout, re.MULTILINE), done.stdout


def test_the_scaffold_passes_ruff(scaffold: Path):
    """Its code is clean for ruff's lint rules (imports sorted, modern syntax) and formatted, by its own config."""
    ruff = [sys.executable, "-m", "ruff"]
    lint = subprocess.run(
        [*ruff, "check", "--no-cache", "--select", "E,F,W,I,B,UP,RUF", "."],
        cwd=scaffold,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lint.returncode == 0, lint.stdout
    formatted = subprocess.run(
        [*ruff, "format", "--no-cache", "--check", "."], cwd=scaffold, capture_output=True, text=True, timeout=60
    )
    assert formatted.returncode == 0, formatted.stdout


def test_openenv_gym_serve_serves_its_app(scaffold: Path):
    """`openenv-gym serve APP` from the new directory serves the env it names (no install needed)."""
    manifest = load_manifest(scaffold / "openenv.yaml")
    server = subprocess.Popen(
        [CONSOLE_SCRIPT, "serve", manifest.app, "--port", "0"],
        cwd=scaffold,
        env=fresh_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith(READY_PREFIX), line
        url = line[len(READY_PREFIX) :].split()[0]
        metadata = http_get_json(url, "/metadata", timeout=5 * UNIT)
        assert (metadata["name"], metadata["target"]) == ("demo", manifest.app)
        schema = http_get_json(url, "/schema", timeout=5 * UNIT)
        assert schema["max_episode_steps"] == manifest.max_episode_steps
        server.send_signal(signal.SIGTERM)
        assert server.wait(10 * UNIT) == 0
    finally:
        stop_process(server)
        server.stdout.close()


def test_the_dockerfile_is_on_the_runtime_image_as_the_shipped_envs_are(scaffold: Path):
    """The Dockerfile builds FROM the runtime image `openenv-gym build` passes as RUNTIME, and serves the app on 8000."""
    manifest = load_manifest(scaffold / "openenv.yaml")
    lines = [line for line in (scaffold / "Dockerfile").read_text().splitlines() if line and not line.startswith("#")]
    echo = [
        line for line in (REPO_ROOT / "envs/echo/Dockerfile").read_text().splitlines() if line[:4] in ("ARG ", "FROM")
    ]
    assert lines[:2] == echo  # ARG RUNTIME=openenv-gym/runtime:<version>, FROM ${RUNTIME}
    assert "COPY demo /env/demo" in lines and "ENV PYTHONPATH=/env PYTHONDONTWRITEBYTECODE=1" in lines
    command = json.loads(lines[-1].removeprefix("CMD "))
    # Bound to every interface of the container: the token comes from the variable `docker run -e` sets.
    assert command == [
        manifest.app,
        "--host",
        "0.0.0.0",
        "--port",
        str(manifest.port),
        "--token-env",
        "OPENENV_GYM_TOKEN",
    ]
    assert manifest.image == "demo:0.1.0" and manifest.port == 8000


@pytest.mark.slow
def test_build_makes_the_scaffold_s_image_and_the_docker_provider_serves_it(scaffold: Path, docker):
    """`openenv-gym build ./demo` builds on the runtime image, tagged as the manifest says; a container of it serves."""
    from openenv_gym.providers.docker import DockerProvider

    manifest = load_manifest(scaffold / "openenv.yaml")
    done = subprocess.run(
        [CONSOLE_SCRIPT, "build", "./demo"],
        cwd=scaffold.parent,
        env=fresh_env(),
        capture_output=True,
        text=True,
        timeout=600 * UNIT,
    )
    try:
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == manifest.image
        provider = DockerProvider(manifest.app, image=manifest.image, build=False, docker_client=docker)
        url = provider.start()
        try:
            assert http_get_json(url, "/metadata", timeout=10 * UNIT, token=provider.token)["name"] == "demo"
        finally:
            provider.stop()
    finally:
        docker.images.remove(manifest.image, force=True)


def test_the_manifest_validates_and_push_would_upload_the_package(scaffold: Path):
    """openenv.yaml is valid, and push's dry run lists the package, which the Space's Dockerfile installs."""
    manifest = load_manifest(scaffold / "openenv.yaml")
    assert (manifest.name, manifest.gym_id, manifest.nondeterministic) == ("demo", "demo/Demo-v0", False)
    done = subprocess.run(
        [CONSOLE_SCRIPT, "push", ".", "--repo-id", "org/demo", "--dry-run"],
        cwd=scaffold,
        env={**fresh_env(), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=60 * UNIT,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    listed = done.stdout.split("files (9):\n", 1)[1].split("README.md front matter:", 1)[0]
    generated = {"Dockerfile", "README.md"}
    assert listed.splitlines() == [
        f"  {path}" + ("  (generated)" if path in generated else "") for path in sorted(FILES)
    ]
    assert "  COPY . /app\n" in done.stdout
    plan = push_plan(scaffold, "org/demo")
    assert plan.paths() == sorted(FILES)
    assert plan.files["pyproject.toml"] == scaffold / "pyproject.toml"
    assert "COPY . /app\n" in plan.generated["Dockerfile"] and f'"{manifest.app}"' in plan.generated["Dockerfile"]
    assert plan.generated["README.md"].split("---\n\n", 1)[1] == (scaffold / "README.md").read_text()


def test_the_names_it_derives():
    """A name gives the package ('-' as '_'), the class prefix (without a trailing _env) and the Gymnasium id."""
    assert EnvNames.of("my-env") == EnvNames("my-env", "my_env", "My", "my_env/My-v0")
    assert EnvNames.of("grid_world2") == EnvNames(
        "grid_world2", "grid_world2", "GridWorld2", "grid_world2/GridWorld2-v0"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("MyEnv", "'MyEnv' is not an env name: use lowercase letters, digits, '-' and '_', starting with a letter (e.g. 'myenv')"),
        ("2048", "'2048' is not an env name: use lowercase letters, digits, '-' and '_', starting with a letter"),
        ("my env", "'my env' is not an env name: use lowercase letters, digits, '-' and '_', starting with a letter (e.g. 'my_env')"),
        ("json", "'json' would make a package 'json' that shadows a module of that name; choose another name"),
        ("class", "'class' would make a package 'class' that shadows a module of that name; choose another name"),
        ("openenv-gym", "'openenv-gym' would make a package 'openenv_gym' that shadows a module of that name; choose another name"),
    ],
)  # fmt: skip
def test_a_bad_name_is_refused_saying_why(name: str, message: str, tmp_path: Path):
    """A name that makes no importable package of its own is refused, and nothing is written."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        init_env(name, tmp_path / "new")
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_bad_name_in_one_line(tmp_path: Path):
    """`openenv-gym init` with a bad name exits 2 with its reason on one line."""
    done = init("My-Env", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "openenv-gym init: error: 'My-Env' is not an env name: use lowercase letters, digits, '-' and '_', "
        "starting with a letter (e.g. 'my-env')\n"
    )


def test_an_existing_directory_that_is_not_empty_is_refused(tmp_path: Path):
    """A directory that holds anything is left alone; an empty one (given with --dir) is written into."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "notes.txt").write_text("mine")
    done = init("demo", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "openenv-gym init: error: demo is a directory that is not empty: init writes a new env into a new or "
        "empty directory (--dir PATH)\n"
    )
    assert [path.name for path in (tmp_path / "demo").iterdir()] == ["notes.txt"]
    (tmp_path / "empty").mkdir()
    written = init_env("demo", tmp_path / "empty", tools=True)
    assert [path.relative_to(tmp_path / "empty").as_posix() for path in written] == FILES


def test_a_name_that_would_shadow_an_installed_module_is_refused():
    """A package named like an installed module (pytest, yaml) would shadow it wherever the env is served."""
    for name in ("pytest", "yaml", "websockets"):
        with pytest.raises(ValueError, match="shadows a module of that name"):
            EnvNames.of(name)


def test_without_pytest_the_next_step_installs_the_test_extras_runner(tmp_path: Path):
    """In a virtual environment with openenv-gym and no pytest (as `pip install openenv-gym` leaves
    it), init's next step first installs what the scaffold's test extra holds, then runs the tests."""
    # As the console script runs: the current directory not on sys.path (python -c puts it there).
    code = "import sys; sys.path.remove(''); sys.modules['pytest'] = None; from openenv_gym.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "init", "demo"],
        cwd=tmp_path,
        env=fresh_env(),
        capture_output=True,
        text=True,
        timeout=60 * UNIT,
    )
    assert done.returncode == 0, done.stderr
    extra = re.search(r"^test = \[\"(.+)\"\]$", (tmp_path / "demo" / "pyproject.toml").read_text(), re.MULTILINE)
    assert extra is not None and extra[1].startswith("pytest")
    assert done.stdout.splitlines()[-1] == (
        f"next: cd demo && python -m pip install '{extra[1]}' && python -m pytest && openenv-gym validate ."
    )


def test_init_run_as_a_module_from_the_parent_directory(tmp_path: Path):
    """`python -m openenv_gym init demo` puts the current directory on sys.path, where the new
    package then is: the names are settled before it is written, so it does not shadow itself."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym", "init", "demo"],
        cwd=tmp_path,
        env=fresh_env(),
        capture_output=True,
        text=True,
        timeout=60 * UNIT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "wrote 9 files in demo: an env demo/Demo-v0"
