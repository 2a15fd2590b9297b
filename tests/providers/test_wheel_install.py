"""openenv-gym as users install it: a wheel, in a fresh virtual environment, used outside the clone.

The wheel is built with ``pip wheel --no-deps`` and installed with pip (its dependencies from the
package index) in a new venv; its commands then run from a directory outside the clone. There the
Docker provider and ``openenv-gym build`` take openenv-gym from the installed distribution (the
index does not have it), and the install computes the clone's code digest, so both find the same
images current instead of rebuilding each other's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from openenv_gym.manifest import load_manifest
from openenv_gym.providers.docker import images
from openenv_gym.providers.docker.distribution import clone_files, code_digest, installed_distribution
from openenv_gym.providers.docker.owners import OWNER_PID
from tests.envs.coding_reference import SOLUTIONS
from tests.utils import REPO_ROOT, UNIT, wait_until

pytestmark = pytest.mark.slow

CODING_TASK = "digit-square-sum"

# Each script runs in the wheel's venv and prints one line of JSON.
IMAGES_SCRIPT = """\
import json
import openenv_gym
from openenv_gym.providers.docker import images
print(json.dumps({"package": openenv_gym.__file__, "runtime": images.RUNTIME_IMAGE,
                  "coding": images.env_image("coding"), "digest": images.source_digest()}))
"""
CODING_SCRIPT = """\
import json, sys
import gymnasium as gym
import openenv_gym
env = gym.make("openenv/Coding-v0", provider="docker")
try:
    env.reset(options={"task_id": sys.argv[1]})
    _, reward, terminated, truncated, _ = env.step(sys.argv[2])
    print(json.dumps({"image": env.unwrapped.provider.image, "reward": reward, "terminated": terminated}))
finally:
    env.close()
"""
SCAFFOLD_SCRIPT = """\
import json, sys
import gymnasium as gym
from openenv_gym.hub import register_manifest
env = gym.make(register_manifest(sys.argv[1], run="docker"))
try:
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    print(json.dumps({"image": env.unwrapped.provider.image, "reward": float(reward)}))
finally:
    env.close()
"""
RUNTIME_SCRIPT = """\
import sys
from openenv_gym.providers.docker.images import build_runtime_image
from openenv_gym.providers.docker.provider import docker_client
print(build_runtime_image(docker_client(), tag=sys.argv[1], progress=False))
"""
# The digest of the openenv-gym an image holds, computed inside it.
DIGEST_INSIDE = "from openenv_gym.providers.docker.images import source_digest; print(source_digest())"


@dataclasses.dataclass(frozen=True)
class WheelInstall:
    venv: Path
    workdir: Path  # outside the clone: where its commands run
    clone: Path  # a copy of the clone's files, which the wheel was built from
    clone_digest: str  # the code digest the clone computes for them

    def run(self, command: list[str], *, timeout: float) -> tuple[str, int]:
        """Run ``command`` (``python`` or ``openenv-gym`` of the venv first) in the workdir, with a
        user's environment; return its last line of output and its pid."""
        command = [str(self.venv / "bin" / command[0]), *command[1:]]
        environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHONPATH"))}
        with subprocess.Popen(
            command, cwd=self.workdir, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                raise
        assert process.returncode == 0, f"{command[0]} exited {process.returncode}:\n{stderr[-4000:]}"
        return stdout.strip().splitlines()[-1], process.pid


def clone_copy(destination: Path) -> Path:
    """The clone's files as a fresh clone has them (tracked and new, not ignored): ``pip wheel`` of the
    clone itself would also pack whatever an earlier build left in its build/lib, and the copy stays
    as it was while others edit the clone."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO_ROOT / name).is_file():  # not one deleted in the work tree
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, destination / name)
    return destination


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> WheelInstall:
    root = tmp_path_factory.mktemp("wheel-install")
    assert REPO_ROOT not in root.parents
    wheelhouse, venv, workdir, clone = root / "wheelhouse", root / "venv", root / "work", clone_copy(root / "clone")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheelhouse)]
    subprocess.run([*pip_wheel, str(clone)], check=True, timeout=300 * UNIT)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120 * UNIT)
    (wheel,) = wheelhouse.glob("openenv_gym-*.whl")
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900 * UNIT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    workdir.mkdir()
    # What the clone's source_digest() is for these files (it reads the clone's files the same way).
    clone_digest = code_digest(installed_distribution().requires or [], clone_files(clone))
    return WheelInstall(venv, workdir, clone, clone_digest)


def assert_no_container_of(docker, pid: int) -> None:
    """The containers the venv's process ``pid`` started are gone (it closed its env)."""

    def gone() -> bool:
        return not docker.containers.list(all=True, filters={"label": f"{OWNER_PID}={pid}"})

    assert wait_until(gone, 10 * UNIT), "a container outlived the venv's process"


PROBE_PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "probe"
version = "0.1.0"

[tool.setuptools]
packages = ["probe", "probe.sub", "probe.mapped", "probe.mapped.inner"]

[tool.setuptools.package-dir]
"probe.mapped" = "mapped"

[tool.setuptools.package-data]
"probe" = ["web/*"]
"probe.mapped" = ["*/data.yaml", "*/*.jsonl"]
"""


def test_a_clone_s_files_are_those_setuptools_puts_in_its_wheel(tmp_path):
    """clone_files reads pyproject.toml as setuptools does: mapped and nested packages, package data,
    py.typed; no byte-compiled, editor, hidden or undeclared files, nor unlisted packages."""
    (tmp_path / "pyproject.toml").write_text(PROBE_PYPROJECT)
    shipped = [
        "probe/__init__.py", "probe/py.typed", "probe/web/index.html", "probe/sub/__init__.py",
        "mapped/__init__.py", "mapped/inner/__init__.py", "mapped/inner/data.yaml", "mapped/inner/tasks.jsonl",
    ]  # fmt: skip
    junk = [
        "probe/__pycache__/__init__.cpython-311.pyc", "probe/module.py~", "probe/.#module.py", "probe/notes.txt",
        "probe/web/.hidden", "probe/unlisted/__init__.py", "mapped/inner/stale.pyc", "mapped/.data.yaml.swp",
    ]  # fmt: skip
    for name in shipped + junk:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    wheelhouse = tmp_path / "wheelhouse"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheelhouse),
            ".",
        ],
        cwd=tmp_path,
        check=True,
        timeout=120 * UNIT,
    )
    (wheel,) = wheelhouse.glob("probe-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {name for name in archive.namelist() if ".dist-info/" not in name}
    files = clone_files(tmp_path)
    assert set(files) == in_wheel and len(in_wheel) == len(shipped)
    assert files["probe/mapped/inner/data.yaml"] == tmp_path / "mapped/inner/data.yaml"


DIGEST_SCRIPT = "from openenv_gym.providers.docker.images import source_digest; print(source_digest())"


def test_the_digest_is_the_installed_distribution_s_wherever_it_runs(tmp_path):
    """An .egg-info a build left in the current directory (found before the installed metadata) changes nothing."""
    elsewhere, with_egg_info = tmp_path / "elsewhere", tmp_path / "with-egg-info"
    stale = with_egg_info / "openenv_gym.egg-info"
    stale.mkdir(parents=True)
    elsewhere.mkdir()
    (stale / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: openenv-gym\nVersion: 0.1.0\n")
    (stale / "requires.txt").write_text("gymnasium>=0.1\n")
    digests = [
        subprocess.run(
            [sys.executable, "-c", DIGEST_SCRIPT],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=60 * UNIT,
        ).stdout
        for cwd in (with_egg_info, elsewhere)
    ]
    assert digests[0] == digests[1]


def test_the_wheel_install_ships_the_clone_s_files_and_has_its_image_tags_and_digest(installed):
    """The wheel holds the files the clone's digest counts, and the install's images and digest are the clone's."""
    line, _ = installed.run(["python", "-c", IMAGES_SCRIPT], timeout=120 * UNIT)
    seen = json.loads(line)
    site_packages = Path(seen.pop("package")).parent.parent
    assert site_packages.is_relative_to(installed.venv)  # the wheel's openenv_gym, not the clone's
    in_wheel = {
        path.relative_to(site_packages).as_posix()
        for path in (site_packages / "openenv_gym").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert in_wheel == set(clone_files(installed.clone))
    clone = {"runtime": images.RUNTIME_IMAGE, "coding": images.env_image("coding"), "digest": installed.clone_digest}
    assert seen == clone


def test_coding_v0_runs_in_a_container_from_the_wheel_install(installed, docker):
    """gym.make("openenv/Coding-v0", provider="docker") from the venv: the clone's image, current for both."""
    line, pid = installed.run(["python", "-c", CODING_SCRIPT, CODING_TASK, SOLUTIONS[CODING_TASK]], timeout=600 * UNIT)
    assert json.loads(line) == {"image": images.env_image("coding"), "reward": 1.0, "terminated": True}
    assert_no_container_of(docker, pid)
    # One image for both: the one the wheel install ran carries the clone's digest.
    assert docker.images.get(images.env_image("coding")).labels[images.SOURCE_LABEL] == installed.clone_digest


def test_an_init_scaffold_is_built_and_stepped_from_the_wheel_install(installed, docker):
    """`openenv-gym init NAME` and `openenv-gym build ./NAME` in the venv; its env steps in a container."""
    name = f"wheel-env-{os.getpid()}"  # an image of its own on a shared engine
    installed.run(["openenv-gym", "init", name], timeout=120 * UNIT)
    manifest = load_manifest(installed.workdir / name / "openenv.yaml")
    try:
        line, _ = installed.run(["openenv-gym", "build", f"./{name}"], timeout=600 * UNIT)
        assert line == manifest.image
        line, pid = installed.run(["python", "-c", SCAFFOLD_SCRIPT, f"{name}/openenv.yaml"], timeout=300 * UNIT)
        stepped = json.loads(line)
        assert stepped["image"] == manifest.image and isinstance(stepped["reward"], float)
        assert_no_container_of(docker, pid)
        # Built on the runtime image of the clone's digest.
        assert docker.images.get(images.RUNTIME_IMAGE).labels[images.SOURCE_LABEL] == installed.clone_digest
    finally:
        if images.image_exists(docker, manifest.image):
            docker.images.remove(manifest.image, force=True)


def test_the_wheel_install_builds_a_runtime_image_of_exactly_its_own_code(installed, docker):
    """A runtime image built from the venv (tagged for this test) installs the wheel packed from the
    venv's files: it carries the clone's digest, and openenv-gym inside it computes that digest too."""
    tag = f"openenv-gym-test/runtime:wheel-{os.getpid()}"
    try:
        line, _ = installed.run(["python", "-c", RUNTIME_SCRIPT, tag], timeout=600 * UNIT)
        assert line == tag
        assert docker.images.get(tag).labels[images.SOURCE_LABEL] == installed.clone_digest
        inside = docker.containers.run(
            tag, entrypoint=["python3", "-c", DIGEST_INSIDE], remove=True, network_mode="none"
        )
        assert inside.decode().strip() == installed.clone_digest
    finally:
        if images.image_exists(docker, tag):
            docker.images.remove(tag, force=True)
