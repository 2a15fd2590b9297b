"""Doctests of ``envs/``, ``vector/`` and ``wrappers/`` collected under their installed names (``openenv_gym.*``).

These folders sit at the repository root but install inside the package (pyproject's
``[tool.setuptools.package-dir]``). ``--doctest-modules`` would import them by their folder path,
as top-level ``vector``, ``wrappers`` and ``envs`` packages: a second copy of the code, whose
classes are not the ones the rest of the package (and every test) uses. Here each such doctest
module imports the installed module instead, so every doctest runs once, against
``openenv_gym.vector``, ``openenv_gym.wrappers`` and ``openenv_gym.envs``.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Generator
from pathlib import Path
from types import ModuleType

import pytest
from _pytest.doctest import DoctestModule

ROOT = Path(__file__).resolve().parent


def installed_folders() -> dict[Path, str]:
    """Each repository folder that installs under another package name, mapped to that name."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = settings["tool"]["setuptools"]["package-dir"]
    return {(ROOT / folder).resolve(): package for package, folder in package_dir.items()}


FOLDERS = installed_folders()


def installed_name(path: Path) -> str | None:
    """The module name ``path`` installs as, or None for a file outside the remapped folders."""
    path = path.resolve()
    for folder, package in FOLDERS.items():
        if path.is_relative_to(folder):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((package, *parts))
    return None


class InstalledDoctestModule(DoctestModule):
    """A doctest module imported by its installed name rather than by its path."""

    def _getobj(self) -> ModuleType:
        name = installed_name(self.path)
        assert name is not None  # made only for files in the remapped folders
        module = importlib.import_module(name)
        if Path(module.__file__ or "").resolve() != self.path.resolve():
            raise self.CollectError(
                f"{name} imports from {module.__file__}, not {self.path}: install this tree "
                "editable (pip install -e .) to run its doctests"
            )
        return module


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Generator[None, list, list]:
    """Swap the doctest plugin's collector of a remapped folder's file for one that imports it by name."""
    collected = yield
    if installed_name(file_path) is None:
        return collected
    return [
        InstalledDoctestModule.from_parent(parent, path=file_path) if type(node) is DoctestModule else node
        for node in collected
    ]
