"""An MkDocs hook: the package as it installs, for mkdocstrings to read.

``envs/``, ``vector/`` and ``wrappers/`` live at the repository's root but install inside the
package (``openenv_gym.vector``: pyproject.toml's ``package-dir``). mkdocstrings reads source
files, not installed modules, so before the build this hook lays out ``build/api-src/openenv_gym``
with a symbolic link for each entry of ``openenv_gym/`` and one for each of those three folders,
and mkdocs.yml points mkdocstrings there.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "api-src" / "openenv_gym"
MAPPED = {"envs": "envs", "vector": "vector", "wrappers": "wrappers"}  # as pyproject.toml's package-dir


def on_startup(**_: Any) -> None:
    if TREE.exists():
        shutil.rmtree(TREE)
    TREE.mkdir(parents=True)
    for entry in (ROOT / "openenv_gym").iterdir():
        if entry.name != "__pycache__":
            (TREE / entry.name).symlink_to(entry)
    for name, folder in MAPPED.items():
        (TREE / name).symlink_to(ROOT / folder)
