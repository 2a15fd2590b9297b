"""The shape of the code, held by the suite: no module past 600 lines, no more ``type: ignore`` in the
package than the recorded count, which only goes down, and no more than ten places where a class of
the client side extends another of ours (variation is composed, not subclassed).

What a layer may import is the other half of the shape: ``tests/test_layers.py`` holds it (its
allow-list of the modules ``import openenv_gym.env`` loads is the import budget).
"""

from __future__ import annotations

import ast
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
#: The client side: every folder but the server's, the providers', the pure layers' and the tools'.
CLIENT_SIDE = ("openenv_gym", "vector", "wrappers")
NOT_CLIENT_SIDE = ("cli", "protocol", "providers", "sandbox", "scaffold", "server", "spaces", "validation")
#: The most client-side classes that may extend another class of ours (errors, which extend one
#: another as Python's own exceptions do, aside). Today's nine: the three spaces faces of
#: ``face.SpacesFace``, PettingZoo's two faces of ``RemoteAgentsFace``, the vector blocks, and
#: ``from_env_fns``'s vector env.
MAX_CLIENT_INHERITANCE = 10


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


def _classes(path: Path) -> list[ast.ClassDef]:
    return [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef)]


def _is_error(name: str) -> bool:
    return name.endswith(("Error", "Exception", "Warning"))


def client_inheritance() -> list[str]:
    """Each client-side class that extends a class the project defines, as ``path: Class(Base)``."""
    ours = {node.name for path in modules(*CLIENT_SIDE, "envs") for node in _classes(path)}
    edges = []
    for path in modules(*CLIENT_SIDE):
        parts = path.relative_to(REPO_ROOT).parts
        if parts[0] == "openenv_gym" and len(parts) > 2 and parts[1] in NOT_CLIENT_SIDE:
            continue
        for node in _classes(path):
            for base in node.bases:
                name = ast.unparse(base).split("[")[0].rsplit(".", 1)[-1]
                if name in ours and not _is_error(name) and not _is_error(node.name):
                    edges.append(f"{path.relative_to(REPO_ROOT)}: {node.name}({name})")
    return edges


def test_client_side_classes_extend_ours_in_at_most_ten_places():
    edges = client_inheritance()
    assert any("SpacesFace" in edge for edge in edges)  # the walk sees a known edge
    assert len(edges) <= MAX_CLIENT_INHERITANCE, (
        f"{len(edges)} client-side classes extend one of ours, past {MAX_CLIENT_INHERITANCE}: hand the variation "
        "in as an object (a kind, a transport, an opening) instead. " + "; ".join(edges)
    )
