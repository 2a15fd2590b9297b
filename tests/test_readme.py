"""Every Python snippet of the README and of the documentation site's pages runs as written, each in
a fresh interpreter, as a new user's would.

What a snippet needs beyond this machine is made real here, never mocked: the Hub repos it names
are seeded in a Hugging Face cache (read offline by the real download code), a Ray cluster is
started for ``ray_address="auto"``, and the Docker snippets use the engine ``make test`` starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hf_cache import seed_hf_cache
from tests.utils import REPO_ROOT, UNIT

README = REPO_ROOT / "README.md"
#: The README and every page of the documentation site.
DOCUMENTS = (README, *sorted((REPO_ROOT / "docs").rglob("*.md")))
# Each distinct snippet once: the site's home page repeats the README's first one.
SNIPPETS = list(
    dict.fromkeys(
        code
        for document in DOCUMENTS
        for code in re.findall(r"^```python\n(.*?)^```$", document.read_text(), flags=re.S | re.M)
    )
)

CARTPOLE_MANIFEST = """\
spec_version: 1
name: cartpole
version: "1.0.0"
description: "CartPole, shared on the Hub"
type: space
runtime: openenv-gym
app: CartPole-v1
port: 8000
max_episode_steps: 500
"""


def snippet_id(code: str) -> str:
    """A readable test id: the first line that is not an import."""
    line = next((line for line in code.splitlines() if line and not line.startswith(("import", "from"))), code)
    return re.sub(r"\W+", "_", line)[:50].strip("_")


def test_the_readme_has_the_snippets_this_module_runs():
    """The snippets are found (a change of fence style would otherwise test nothing)."""
    assert len(SNIPPETS) >= 30
    assert all("openenv_gym" in code for code in SNIPPETS)


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face cache with the repos the snippets name: Space org/cartpole (main and tag v1)
    and dataset ORG/NAME holding a tasks.jsonl of the shipped Coding tasks."""
    home = tmp_path_factory.mktemp("hf-home")
    main, tagged = "a" * 40, "b" * 40
    seed_hf_cache(
        home,
        "space",
        "org/cartpole",
        {main: {"openenv.yaml": CARTPOLE_MANIFEST}, tagged: {"openenv.yaml": CARTPOLE_MANIFEST}},
        main,
    )
    (home / "hub" / "spaces--org--cartpole" / "refs" / "v1").write_text(tagged)
    tasks = (REPO_ROOT / "envs" / "coding" / "tasks.jsonl").read_text().splitlines()[:5]
    seed_hf_cache(home, "dataset", "ORG/NAME", {main: {"tasks.jsonl": "\n".join(tasks) + "\n"}}, main)
    return home


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """A local Ray cluster that ``ray_address="auto"`` finds, with room for sixteen one-CPU servers (Ray
    counts logical CPUs: the machine has two)."""
    ray = Path(sys.executable).parent / "ray"
    started = subprocess.run(
        [str(ray), "start", "--head", "--num-cpus", "16", "--include-dashboard", "false", "--disable-usage-stats"],
        capture_output=True,
        text=True,
        timeout=120 * UNIT,
    )
    if started.returncode != 0:
        pytest.fail(f"ray start failed:\n{started.stdout}\n{started.stderr}")
    try:
        yield
    finally:
        subprocess.run([str(ray), "stop", "--force"], capture_output=True, timeout=120 * UNIT)


@pytest.fixture(scope="module")
def docker_engine() -> None:
    """The Docker Engine the Docker snippets need (skipped without one, except in CI)."""
    from openenv_gym.providers.docker.provider import DockerUnavailableError, docker_client

    try:
        docker_client().close()
    except DockerUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Docker snippets: {exc}")
        pytest.skip(f"no Docker Engine here: {exc}")


@pytest.mark.slow
@pytest.mark.parametrize("code", SNIPPETS, ids=[snippet_id(code) for code in SNIPPETS])
def test_snippet_runs_as_written(code: str, hf_home: Path, request: pytest.FixtureRequest, tmp_path: Path):
    """The snippet runs in a fresh interpreter outside the repository and exits 0, leaking no socket and
    printing no Gymnasium warning."""
    if 'provider="docker"' in code:
        request.getfixturevalue("docker_engine")
    if 'provider="ray"' in code:
        request.getfixturevalue("ray_cluster")
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "always::ResourceWarning"}
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300 * UNIT,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "ResourceWarning" not in done.stderr and "WARN:" not in done.stderr, done.stderr
