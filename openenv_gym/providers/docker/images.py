"""Docker images for env servers, built without a registry.

Three layers:

- a **base** image with Python 3: any local image that has ``python3`` (``python:3.11-slim``
  where a registry is reachable), or one made here with ``debootstrap`` (a minimal Debian of the
  host's release plus python3, ``docker import``-ed as :data:`LOCAL_BASE_IMAGE`);
- the **runtime** image (:data:`RUNTIME_IMAGE`): the base plus openenv-gym and its dependencies,
  installed by pip with ``--no-index`` from a wheelhouse made on the host (``pip download`` of the
  dependencies for the base's Python version and platform, and a wheel of the installed
  openenv-gym, packed from its files: see :mod:`.distribution`), as an unprivileged user; every
  Gymnasium env is served from it;
- one thin image per env in ``envs/`` (its ``Dockerfile``: ``FROM`` the runtime, its command); an
  env whose server needs more packages (Harness-v0's agents) lists them in a
  :data:`ENV_REQUIREMENTS` file beside it, and their wheels, downloaded on the host, are in the
  build context's ``wheels/`` for its Dockerfile to install with ``--no-index``.

Nothing is ever pulled: builds run with ``pull=False`` and a missing base is built or reported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ... import __version__ as VERSION  # the images carry the package's version
from ...errors import ImageBuildError
from .distribution import installed_distribution, pack_wheel, source_digest

__all__ = [
    "LOCAL_BASE_IMAGE",
    "RUNTIME_IMAGE",
    "ImageBuildError",
    "build_env_image",
    "build_local_base",
    "build_runtime_image",
    "ensure_image",
    "env_image",
    "source_digest",
]

LOCAL_BASE_IMAGE = "openenv-gym/base:python3"
RUNTIME_IMAGE = f"openenv-gym/runtime:{VERSION}"
SERVER_UID = 10001  # the unprivileged user env servers run as in their containers
SOURCE_LABEL = "openenv-gym.source"  # digest of the code an image was built from (source_digest)
_ensure_lock = threading.Lock()
#: The file beside an env's Dockerfile that lists the packages its image adds (pip's requirements).
ENV_REQUIREMENTS = "requirements.txt"
WHEELHOUSE_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "openenv-gym" / "wheelhouse"


def env_image(name: str) -> str:
    """The image of env ``name`` in ``envs/`` (``openenv-gym/<name>:<version>``)."""
    return f"openenv-gym/{name}:{VERSION}"


def build_local_base(client: Any, *, progress: bool = True, tag: str = LOCAL_BASE_IMAGE) -> str:
    """Make a base image with ``debootstrap``: the host's Debian release, minimal, plus python3.

    Needs root, ``debootstrap`` and ``tar``; reads the Debian mirror from the host's apt sources.
    About 40 s; the image stays in Docker's cache.
    """
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "building a base image offline needs debootstrap (`apt-get install debootstrap`); or pass a "
            "local image with python3 as the base (e.g. `--base python:3.11-slim` after `docker pull`)"
        )
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap needs root; run `openenv-gym build --base-only` as root")
    release, mirror = debian_release_and_mirror()
    with tempfile.TemporaryDirectory(prefix="openenv-gym-rootfs-") as root:
        command = [
            "debootstrap", "--variant=minbase", "--include=python3-minimal,python3", release, root, mirror,
        ]  # fmt: skip
        _run_with_progress(command, f"debootstrap {release}", progress)
        with subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE) as tar:
            client.api.import_image_from_stream(tar.stdout, repository=tag.split(":")[0], tag=tag.split(":")[1])
            if tar.wait() != 0:
                raise ImageBuildError("tar of the debootstrap root failed")
    return tag


def build_runtime_image(
    client: Any, *, base: str | None = None, progress: bool = True, tag: str = RUNTIME_IMAGE
) -> str:
    """Build the runtime image on ``base`` (default: :data:`LOCAL_BASE_IMAGE`, made if missing)."""
    if base is None:
        base = LOCAL_BASE_IMAGE
        if not image_exists(client, base):
            build_local_base(client, progress=progress)
    elif not image_exists(client, base):
        raise ImageBuildError(f"base image {base!r} is not in the local Docker cache (images are never pulled)")
    python_version, machine = _image_python(client, base)
    with tempfile.TemporaryDirectory(prefix="openenv-gym-build-") as context:
        wheels = Path(context) / "wheels"
        make_wheelhouse(wheels, python_version=python_version, machine=machine, progress=progress)
        (Path(context) / "Dockerfile").write_text(_RUNTIME_DOCKERFILE.format(uid=SERVER_UID))
        build(client, context, tag, buildargs={"BASE": base}, labels={SOURCE_LABEL: source_digest()}, progress=progress)
    return tag


def build_env_image(client: Any, name: str, *, base: str | None = None, progress: bool = True) -> str:
    """Build env ``name``'s image from ``envs/<name>/Dockerfile`` (and the runtime image, if missing)."""
    envs_dir = envs_directory()
    dockerfile = envs_dir / name / "Dockerfile"
    if not dockerfile.is_file():
        known = sorted(path.parent.name for path in envs_dir.glob("*/Dockerfile"))
        raise ImageBuildError(f"no env {name!r} with a Dockerfile in {envs_dir}; known: {known}")
    if not image_current(client, RUNTIME_IMAGE):
        build_runtime_image(client, base=base, progress=progress)
    tag = env_image(name)
    labels = {SOURCE_LABEL: source_digest()}
    requirements = dockerfile.parent / ENV_REQUIREMENTS
    with tempfile.TemporaryDirectory(prefix="openenv-gym-build-") as context:
        if requirements.is_file():  # the env's folder and the wheels of what it adds
            shutil.copytree(
                dockerfile.parent, context, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
            )
            python_version, machine = _image_python(client, RUNTIME_IMAGE)
            wanted = [line.strip() for line in requirements.read_text().splitlines()]
            wanted = [line for line in wanted if line and not line.startswith("#")]
            wheels = Path(context) / "wheels"  # pip's own too: the runtime image has none installed
            download_wheels(wheels, ["pip", *wanted], python_version=python_version, machine=machine, progress=progress)
        else:
            context = str(dockerfile.parent)
        build(client, context, tag, buildargs={"RUNTIME": RUNTIME_IMAGE}, labels=labels, progress=progress)
    return tag


def build_directory_image(client: Any, directory: Path, *, base: str | None = None, progress: bool = True) -> str:
    """Build the image of an env package outside ``envs/`` (``openenv-gym init``'s scaffold, say):
    its ``Dockerfile`` on the runtime image, tagged as its ``openenv.yaml`` names it (``image:``,
    else ``<name>:<version>``); the runtime image is built first if missing or stale.

    Raises:
        ImageBuildError: the directory has no Dockerfile or no manifest.
        ManifestError: the manifest is not valid.
    """
    from ...manifest import load_manifest

    if not (directory / "Dockerfile").is_file() or not (directory / "openenv.yaml").is_file():
        raise ImageBuildError(f"{directory} holds no Dockerfile and openenv.yaml to build an env image from")
    manifest = load_manifest(directory / "openenv.yaml")
    if not image_current(client, RUNTIME_IMAGE):
        build_runtime_image(client, base=base, progress=progress)
    tag = manifest.image or f"{manifest.name}:{manifest.version}"
    labels = {SOURCE_LABEL: source_digest()}
    build(client, str(directory), tag, buildargs={"RUNTIME": RUNTIME_IMAGE}, labels=labels, progress=progress)
    return tag


def envs_directory() -> Path:
    """Where the shipped envs live (``envs/`` of the source tree, installed as ``openenv_gym.envs``)."""
    return package_directory("openenv_gym.envs")


def package_directory(name: str) -> Path:
    """The folder a package of openenv-gym installs from, found without importing it (a provider
    imports no env, and no Gymnasium face)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None  # regular packages of this distribution
    return Path(spec.origin).resolve().parent


def image_exists(client: Any, image: str) -> bool:
    """Whether ``image`` is in the local Docker cache."""
    return _image_labels(client, image) is not None


def image_current(client: Any, image: str) -> bool:
    """Whether ``image`` exists and was built from this openenv-gym's code (its source label matches)."""
    labels = _image_labels(client, image)
    return labels is not None and labels.get(SOURCE_LABEL) == source_digest()


def _image_labels(client: Any, image: str) -> dict[str, str] | None:
    import docker.errors

    try:
        return client.images.get(image).labels or {}
    except docker.errors.ImageNotFound:
        return None


def build(
    client: Any, context: str, tag: str, *, buildargs: dict[str, str], labels: dict[str, str], progress: bool
) -> None:
    """``docker build`` (the classic builder, never pulling) with a progress bar over its steps."""
    from tqdm import tqdm

    bar = tqdm(desc=f"build {tag}", unit="step", disable=not progress, leave=False)
    try:
        for chunk in client.api.build(
            path=context, tag=tag, buildargs=buildargs, labels=labels, pull=False, rm=True, forcerm=True, decode=True
        ):
            if "error" in chunk:
                raise ImageBuildError(f"building {tag} failed: {chunk['error'].strip()}")
            line = chunk.get("stream", "")
            step = re.match(r"Step (\d+)/(\d+)", line)
            if step:
                bar.total = int(step.group(2))
                bar.update(int(step.group(1)) - bar.n)
    finally:
        bar.close()


def make_wheelhouse(dest: Path, *, python_version: str, machine: str, progress: bool = True) -> None:
    """Wheels of openenv-gym, its dependencies and pip, for ``python_version`` on Linux ``machine``:
    openenv-gym's is packed from its installed files (a clone's or a wheel install's alike), never
    asked of the package index."""
    requirements = [req for req in installed_distribution().requires or [] if "extra ==" not in req]
    download_wheels(dest, ["pip", *requirements], python_version=python_version, machine=machine, progress=progress)
    pack_wheel(dest)


def download_wheels(
    dest: Path, requirements: list[str], *, python_version: str, machine: str, progress: bool = True
) -> None:
    """Wheels of ``requirements`` and their dependencies, for ``python_version`` on Linux ``machine``,
    into ``dest``; kept between builds in :data:`WHEELHOUSE_CACHE`, keyed by what they were for."""
    dest.mkdir(parents=True, exist_ok=True)
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(17, 40)] + [f"manylinux2014_{machine}"]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    key = hashlib.sha256(json.dumps([python_version, machine, requirements]).encode()).hexdigest()[:16]
    cache = WHEELHOUSE_CACHE / key
    if not (cache / ".complete").is_file():
        target = ["--python-version", python_version, "--only-binary=:all:", "-d", str(cache)]
        target += [arg for platform in platforms for arg in ("--platform", platform)]
        _run_with_progress([*pip, "download", *target, *requirements], "wheelhouse: dependencies", progress)
        (cache / ".complete").touch()
    for wheel in cache.glob("*.whl"):
        shutil.copy2(wheel, dest / wheel.name)


def debian_release_and_mirror() -> tuple[str, str]:
    """The host's Debian codename and the first mirror its apt sources use for it."""
    release = ""
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                release = line.split("=", 1)[1].strip().strip('"')
    if not release:
        raise ImageBuildError("debootstrap needs a Debian host (no VERSION_CODENAME in /etc/os-release)")
    for uri, suites in _apt_sources():
        if release in suites:
            return release, uri
    raise ImageBuildError(f"no apt source for {release} in /etc/apt: cannot tell debootstrap where Debian is")


def _apt_sources() -> Iterator[tuple[str, list[str]]]:
    apt = Path("/etc/apt")
    for path in sorted(apt.glob("sources.list.d/*.sources")):
        for stanza in path.read_text().split("\n\n"):
            fields = dict(
                line.split(":", 1) for line in stanza.splitlines() if ":" in line and not line.startswith("#")
            )
            if fields.get("Types", "").strip() == "deb" and "URIs" in fields:
                yield fields["URIs"].split()[0], fields.get("Suites", "").split()
    for path in [apt / "sources.list", *sorted(apt.glob("sources.list.d/*.list"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                words = re.sub(r"\[.*?\]", "", line).split()
                if len(words) >= 3 and words[0] == "deb":
                    yield words[1], [words[2]]


def _image_python(client: Any, image: str) -> tuple[str, str]:
    """The ``major.minor`` Python version and machine of ``image``'s python3."""
    output = client.containers.run(
        image,
        ["-c", "import json, platform, sys; print(json.dumps([sys.version_info[:2], platform.machine()]))"],
        entrypoint="python3",  # whatever the image's own is (the runtime's serves)
        remove=True,
        network_mode="none",
    )
    (major, minor), machine = json.loads(output)
    return f"{major}.{minor}", machine


def _run_with_progress(command: list[str], description: str, progress: bool) -> None:
    """Run ``command``; show its output lines as a progress spinner; raise with its tail on failure."""
    from tqdm import tqdm

    tail: list[str] = []
    with tqdm(desc=description, unit=" lines", disable=not progress, leave=False) as bar:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
            assert process.stdout is not None
            for line in process.stdout:
                tail = [*tail[-19:], line.rstrip()]
                bar.update(1)
        if process.returncode != 0:
            raise ImageBuildError(
                f"{description} failed ({command[0]} exited {process.returncode}):\n" + "\n".join(tail)
            )


_RUNTIME_DOCKERFILE = """\
ARG BASE
FROM ${{BASE}}
COPY wheels /tmp/wheels
# pip runs from its own wheel: a debootstrap base has python3 but no pip.
RUN python3 $(ls /tmp/wheels/pip-*.whl | head -n 1)/pip install --no-index --find-links /tmp/wheels \\
        --break-system-packages --no-cache-dir --disable-pip-version-check openenv-gym \\
    && rm -rf /tmp/wheels
USER {uid}:{uid}
WORKDIR /tmp
EXPOSE 8000
ENTRYPOINT ["python3", "-m", "openenv_gym", "serve"]
"""


def ensure_image(client: Any, image: str, *, build: bool = True) -> None:
    """Make sure ``image`` is in the engine's cache: one of ours, current with this code (built when
    missing or stale, if ``build``), or any other image already there. Nothing is ever pulled.

    Raises:
        ImageBuildError: not there and not ours, or ours and stale with ``build=False``, or the build failed.
    """
    with _ensure_lock:  # a fleet starts its servers in threads: one build, the others then find it current
        _ensure_image(client, image, build)


def _ensure_image(client: Any, image: str, build: bool) -> None:
    ours: dict[str, str | None] = {RUNTIME_IMAGE: None}
    ours.update({env_image(path.parent.name): path.parent.name for path in envs_directory().glob("*/Dockerfile")})
    if image not in ours:
        if image_exists(client, image):
            return
        raise ImageBuildError(f"image {image!r} is not in the local Docker cache, and images are never pulled")
    if image_current(client, image):
        return
    if not build:
        raise ImageBuildError(
            f"image {image!r} is missing or was built from other code; build it with `openenv-gym build`"
        )
    name = ours[image]
    if name is None:
        build_runtime_image(client)
    else:
        build_env_image(client, name)
