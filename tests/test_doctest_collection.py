"""The root folders' doctests are collected once, from the installed ``openenv_gym.*`` modules."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.utils import REPO_ROOT

# Collects the doctests of envs/, vector/ and wrappers/ as pytest does, then prints, as JSON, each
# doctest's id and the __name__ and __file__ its examples run with, and every loaded module whose
# top-level name is one of the folders'.
_COLLECT = """
import json, sys
import pytest

class Report:
    def pytest_collection_finish(self, session):
        tests = [
            {"id": item.nodeid, "name": item.dtest.globs["__name__"], "file": item.dtest.globs["__file__"]}
            for item in session.items
        ]
        strays = sorted(m for m in sys.modules if m.split(".")[0] in {"envs", "vector", "wrappers"})
        print("REPORT" + json.dumps({"tests": tests, "strays": strays}))

pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "envs", "vector", "wrappers"], plugins=[Report()])
"""


def collected() -> dict:
    """What collecting the root folders' doctests gives, in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", _COLLECT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    (line,) = (line for line in result.stdout.splitlines() if line.startswith("REPORT"))
    return json.loads(line.removeprefix("REPORT"))


def test_root_folder_doctests_run_against_the_installed_modules():
    """Each doctest of envs/, vector/ and wrappers/ runs in its ``openenv_gym.*`` module, from its file in
    this tree, and collecting them imports no top-level ``envs``, ``vector`` or ``wrappers`` copy."""
    report = collected()
    names = {test["name"] for test in report["tests"]}
    assert {
        "openenv_gym.vector.remote_vector_env",
        "openenv_gym.wrappers.sb3",
        "openenv_gym.envs.coding.tasks",
    } <= names
    for test in report["tests"]:
        folder = test["id"].split("/")[0]
        assert test["name"].startswith(f"openenv_gym.{folder}."), test
        assert test["file"] == str(REPO_ROOT / test["id"].split("::")[0]), test
        assert f"::{test['name']}." in test["id"], test
    assert report["strays"] == []
