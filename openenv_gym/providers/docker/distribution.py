"""The installed openenv-gym as its wheel holds it: the files it ships, their digest, a wheel of them.

Images are built from the installed distribution, never from the package index (where openenv-gym
is not published) and never from a clone's other files. A wheel install lists its files in its
``RECORD``; a clone (an editable install) ships what its ``pyproject.toml`` declares. Both are read
as the paths the wheel holds (``openenv_gym/envs/coding/server.py``), so one commit has one digest
and tags one set of images however it was installed, and the wheel put in an image's build context
is packed from those same files with ``wheel pack``: one method for both.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import Distribution, distributions
from pathlib import Path

from ...errors import ImageBuildError

__all__ = [
    "DISTRIBUTION",
    "clone_files",
    "code_digest",
    "installed_distribution",
    "pack_wheel",
    "shipped_files",
    "source_digest",
]

DISTRIBUTION = "openenv-gym"
PACKAGE = "openenv_gym"  # the one top-level package the distribution ships
# What an installer writes into a dist-info beside the wheel's own files (PEP 376, 610, 627):
# not part of a wheel, and different for each install of the same code.
_INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
# Package data setuptools adds to every package without being asked (setuptools.command.build_py).
_IMPLICIT_PACKAGE_DATA = ["*.pyi", "py.typed"]
_PACKAGE_DIRECTORY = Path(__file__).resolve().parents[2]  # the openenv_gym that runs: installed or a clone's


def installed_distribution() -> Distribution:
    """openenv-gym's installed distribution: the one an installer wrote from a wheel (its metadata has
    a ``WHEEL`` file; editable installs too), not an ``.egg-info`` that a build left in a clone,
    which is found first when the clone is the current directory.

    Raises:
        ImageBuildError: openenv-gym is not installed (a source tree on ``PYTHONPATH``).
    """
    for distribution in distributions(name=DISTRIBUTION):
        if distribution.read_text("WHEEL") is not None:
            return distribution
    raise ImageBuildError(
        "openenv-gym is not installed (`pip install openenv_gym-*.whl`, or `pip install -e .` in a clone): "
        "its images are built from the installed distribution"
    )


def shipped_files() -> dict[str, Path]:
    """The files of the running openenv-gym as its wheel holds them (``openenv_gym/envs/echo/openenv.yaml``),
    each with the file on disk it is read from: the installed ones its ``RECORD`` lists, or, when the
    code runs from a clone (an editable install, or the clone as the current directory), the clone's
    (:func:`clone_files`). Byte-compiled files are not counted (an installer may add them).

    Raises:
        ImageBuildError: openenv-gym is not installed, or runs from a tree with no ``pyproject.toml``.
    """
    distribution = installed_distribution()
    if Path(str(distribution.locate_file(PACKAGE))).resolve() == _PACKAGE_DIRECTORY:
        return {
            path.as_posix(): Path(str(path.locate()))
            for path in distribution.files or ()
            if path.parts[0] == PACKAGE and "__pycache__" not in path.parts and path.suffix != ".pyc"
        }
    clone = _PACKAGE_DIRECTORY.parent
    if not (clone / "pyproject.toml").is_file():
        raise ImageBuildError(f"openenv-gym runs from {_PACKAGE_DIRECTORY}, neither installed nor in a clone")
    return clone_files(clone)


def clone_files(root: Path) -> dict[str, Path]:
    """The files a wheel built from the clone at ``root`` holds, as its ``pyproject.toml`` declares
    them for setuptools: each listed package's modules (``*.py``) and package data, found as
    setuptools finds them (``glob``, which skips hidden files), so editor and byte-compiled files are
    left out. No MANIFEST.in or SCM plugin adds to them here."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dirs: dict[str, str] = config.get("package-dir", {})
    package_data: dict[str, list[str]] = config.get("package-data", {})
    files: dict[str, Path] = {}
    for package in config["packages"]:
        directory = root / _package_directory(package, package_dirs)
        everywhere = [*package_data.get("", []), *package_data.get("*", [])]  # setuptools' keys for every package
        patterns = ["*.py", *_IMPLICIT_PACKAGE_DATA, *everywhere, *package_data.get(package, [])]
        for pattern in patterns:
            for name in glob.glob(pattern, root_dir=directory, recursive=True):
                if (directory / name).is_file():
                    files[f"{package.replace('.', '/')}/{Path(name).as_posix()}"] = directory / name
    return files


def _package_directory(package: str, package_dirs: dict[str, str]) -> Path:
    """Where ``package``'s files are in the clone, by the longest of its prefixes ``package-dir`` maps."""
    parts = package.split(".")
    for end in range(len(parts), 0, -1):
        mapped = package_dirs.get(".".join(parts[:end]))
        if mapped is not None:
            return Path(mapped, *parts[end:])
    return Path(package_dirs.get("", ""), *parts)


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the installed openenv-gym: its dependencies and the files it ships, by their paths
    in the wheel. Images built from other code are rebuilt; a clone and a wheel install of one
    commit agree."""
    return code_digest(installed_distribution().requires or [], shipped_files())


def code_digest(requirements: list[str], files: dict[str, Path]) -> str:
    """The digest of a distribution with these requirements shipping these files (see :func:`shipped_files`)."""
    digest = hashlib.sha256(json.dumps(requirements).encode())
    for name, path in sorted(files.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def pack_wheel(dest: Path) -> Path:
    """A wheel of exactly the installed openenv-gym, written into ``dest``: the files it ships and its
    dist-info (less what the installer wrote there), packed by ``wheel pack``, which writes the
    ``RECORD``. Returns the wheel's path.

    Raises:
        ImageBuildError: ``wheel pack`` failed.
    """
    distribution = installed_distribution()
    dist_info = {
        path.as_posix(): Path(str(path.locate()))
        for path in distribution.files or ()
        if path.parts[0].endswith(".dist-info") and path.name not in _INSTALLER_FILES
    }
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="openenv-gym-wheel-") as staging:
        unpacked, packed = Path(staging) / "unpacked", Path(staging) / "packed"
        packed.mkdir()
        for name, path in {**shipped_files(), **dist_info}.items():
            (unpacked / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, unpacked / name)
        command = [sys.executable, "-m", "wheel", "pack", str(unpacked), "--dest-dir", str(packed)]
        done = subprocess.run(command, capture_output=True, text=True)
        wheels = list(packed.glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise ImageBuildError(f"wheel pack of the installed openenv-gym failed:\n{done.stdout}{done.stderr}")
        return Path(shutil.move(wheels[0], dest / wheels[0].name))
