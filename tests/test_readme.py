"""Every Python snippet of the README and of the documentation site's pages runs as written, each in
a fresh interpreter, as a new user's would.

What a snippet needs beyond this machine is made real here, never mocked: the Hub repos it names
are seeded in a Hugging Face cache (read offline by the real download code), a Ray cluster is
started for ``ray_address="auto"``, and the Docker snippets use the engine ``make test`` starts.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hf_cache import seed_hf_cache
from tests.utils import REPO_ROOT, UNIT, kept_venv

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

# Snippets of a library that cannot share the test environment run in a virtual environment of their
# own (the own_venv fixture), found by the import that names the library.
OWN_VENVS = {"import gem\n": "gem-llm==0.1.0"}

# What a snippet takes as the reader's own, made here and run before it. TRL's: a model name, a
# GRPOConfig and dataset rows. The model is a 2-layer Qwen2 and a tokenizer made on the spot (no
# download: docs/training-llm-agents.md's CPU recipe), saved where GRPOTrainer loads a model by
# name (the snippet's working directory); one step of training each.
READERS_OWN = {
    "GRPOTrainer(model, args": """\
from datasets import Dataset
from trl import GRPOConfig
from openenv_gym.envs.coding import task_ids as _task_ids
from openenv_gym.integrations.trl.tiny_model import tiny_model, tiny_tokenizer

_tokenizer = tiny_tokenizer(["def f(x):\\n    return x\\n", '<tool_call>{"name": "submit"}</tool_call>'])
model = "tiny-model"  # a folder in the snippet's working directory
tiny_model(_tokenizer).save_pretrained(model)
_tokenizer.save_pretrained(model)
args = GRPOConfig(
    output_dir="grpo-output", report_to="none", use_cpu=True, max_steps=1, per_device_train_batch_size=2,
    num_generations=2, max_completion_length=16, save_strategy="no", disable_tqdm=True,
    activation_checkpointing=False, max_tool_calling_iterations=1,
)
rows = Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], "task_id": t} for t in _task_ids()[:2]])
""",
    # docs/writing-an-env.md's: the env `openenv-gym init my-env` wrote, as the page's commands make it.
    '"my-env/openenv.yaml"': """\
import subprocess as _subprocess
import sys as _sys

_subprocess.run([_sys.executable, "-m", "openenv_gym", "init", "my-env"], check=True, capture_output=True)
""",
}

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
def own_venv() -> Callable[[str], Path]:
    """The Python of a virtual environment under ``build/`` holding a library that cannot share the
    test environment (it pins older releases of packages the test extra holds) and openenv-gym with
    its core dependencies; made once, and kept while the library and pyproject.toml are the same."""

    def python_with(requirement: str) -> Path:
        venv = REPO_ROOT / "build" / "snippet-venvs" / re.sub(r"\W+", "-", requirement)
        pyproject = hashlib.sha256((REPO_ROOT / "pyproject.toml").read_bytes()).hexdigest()
        return kept_venv(venv, [requirement, "-e", str(REPO_ROOT)], stamp=f"{requirement}\n{pyproject}")

    return python_with


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


# A snippet for inside a Kubernetes cluster looks its servers up by a headless Service's name: it runs
# where that name resolves to local "pods" (tests/headless_service.py, in namespaces of its own).
SERVICE_NAME = '"cartpole-env"'


def headless_service() -> list[str]:
    """The command prefix that gives tests/headless_service.py new mount and network namespaces (it
    needs root: it mounts its own /etc/hosts); skips without root, except in CI, where it fails."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        reason = "the headless Service's snippet needs root and unshare (new mount and network namespaces)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run it: {reason}")
        pytest.skip(reason)
    return ["unshare", "--mount", "--net"]


def snippet_param(code: str) -> object:
    """A snippet as a test parameter; one on Ray runs in the suite's serial part, as Ray's own tests
    do (its cluster is found machine-wide by ``ray_address="auto"``), and so does one on Docker Swarm
    (the engine's swarm mode is machine-wide)."""
    marks = [pytest.mark.serial] if 'provider="ray"' in code or 'provider="swarm"' in code else []
    return pytest.param(code, id=snippet_id(code), marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize("code", [snippet_param(code) for code in SNIPPETS])
def test_snippet_runs_as_written(
    code: str, hf_home: Path, own_venv: Callable[[str], Path], request: pytest.FixtureRequest, tmp_path: Path
):
    """The snippet runs in a fresh interpreter outside the repository and exits 0, leaking no socket and
    printing no Gymnasium warning."""
    if 'provider="docker"' in code:
        request.getfixturevalue("docker_engine")
    if 'provider="ray"' in code:
        request.getfixturevalue("ray_cluster")
    if 'provider="swarm"' in code:
        request.getfixturevalue("swarm")
    requirement = next((own for imported, own in OWN_VENVS.items() if imported in code), None)
    python = own_venv(requirement) if requirement else Path(sys.executable)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "always::ResourceWarning"}
    env.pop("HF_TOKEN", None)
    preamble = "".join(own for used, own in READERS_OWN.items() if used in code)
    (tmp_path / "snippet.py").write_text(preamble + code)
    command = [str(python), "snippet.py"]
    if SERVICE_NAME in code:  # the wrapper runs the snippet, with the same Python, once the "pods" serve
        command = [*headless_service(), str(python), str(REPO_ROOT / "tests" / "headless_service.py"), "snippet.py"]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300 * UNIT,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "ResourceWarning" not in done.stderr and "WARN:" not in done.stderr, done.stderr
