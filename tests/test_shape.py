"""The shape of the code, held by the suite: no module past 600 lines, and no more ``type: ignore`` in the
package than the recorded count, which only goes down.

What a layer may import is the other half of the shape: ``tests/test_layers.py`` holds it (its
allow-list of the modules ``import openenv_gym.env`` loads is the import budget).
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from tests.utils import REPO_ROOT

#: The most lines a module may have: past it, a module holds more than one concept.
MAX_MODULE_LINES = 600
#: Where the project's Python modules live.
PROJECT_FOLDERS = ("openenv_gym", "vector", "wrappers", "envs", "tests", "benchmarks", "scripts")
#: The package's code, where a ``type: ignore`` is counted.
PACKAGE_FOLDERS = ("openenv_gym", "vector", "wrappers", "envs")
#: The ``type: ignore`` comments in the package's code today. It only goes down: a change that removes
#: some lowers it (the test fails until it does), and one that adds some is refused.
TYPE_IGNORES = 13


def modules(*folders: str) -> list[Path]:
    """The Python modules under ``folders`` of the repository (compiled caches left out)."""
    return sorted(
        path for folder in folders for path in (REPO_ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts
    )


def line_count(path: Path) -> int:
    with path.open("rb") as source:
        return sum(1 for _ in source)


def type_ignores(path: Path) -> int:
    """The ``# type: ignore`` comments of a module (in comments only: a string that names one is no ignore)."""
    source = path.read_text(encoding="utf-8")
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sum(1 for token in tokens if token.type == tokenize.COMMENT and "type: ignore" in token.string)


def test_no_module_passes_600_lines():
    modules_found = modules(*PROJECT_FOLDERS)
    assert len(modules_found) > 100  # the walk found the project
    too_long = {str(path.relative_to(REPO_ROOT)): line_count(path) for path in modules_found}
    too_long = {name: lines for name, lines in too_long.items() if lines > MAX_MODULE_LINES}
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split each by concept): " + ", ".join(
        f"{name} ({lines})" for name, lines in sorted(too_long.items())
    )


def test_type_ignores_stay_at_the_recorded_count():
    counts = {str(path.relative_to(REPO_ROOT)): type_ignores(path) for path in modules(*PACKAGE_FOLDERS)}
    found = sum(counts.values())
    where = ", ".join(f"{name} ({count})" for name, count in sorted(counts.items()) if count)
    assert found <= TYPE_IGNORES, (
        f"{found} `type: ignore` in the package, past the recorded {TYPE_IGNORES}: type the new code instead "
        f"(a protocol, a narrower type; a cast only where the type system cannot know). Where: {where}"
    )
    assert found >= TYPE_IGNORES, (
        f"{found} `type: ignore` in the package, fewer than the recorded {TYPE_IGNORES}: lower TYPE_IGNORES in "
        f"tests/test_shape.py to {found}, so that none comes back"
    )
