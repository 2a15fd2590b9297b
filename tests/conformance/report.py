"""The conformance tier's count per path, at the end of the session: ``conformance: PATH passed N of M``.

A hook of the session, not of a test folder: under pytest-xdist only the controller writes the
summary, and it loads no conftest below ``tests/``, so ``tests/conftest.py`` imports this one.
The counts are the run's own: each test of a path (``conftest.py`` tags its reports) counts once,
as passed only if its setup, call and teardown all passed.
"""

from __future__ import annotations

from typing import Any

import pytest

PATH_PROPERTY = "conformance_path"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Per path, how many of its tests passed of how many ran."""
    tests: dict[str, set[str]] = {}
    passed: set[str] = set()
    failed: set[str] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport):  # deselected items, warnings
                continue
            path = dict(report.user_properties).get(PATH_PROPERTY)
            if path is None:
                continue
            tests.setdefault(path, set()).add(report.nodeid)
            if report.failed or report.skipped:
                failed.add(report.nodeid)
            elif report.when == "call":
                passed.add(report.nodeid)
    if not tests:
        return
    terminalreporter.section("conformance")
    for path in sorted(tests):
        count = len(tests[path] & passed - failed)
        terminalreporter.write_line(f"conformance: {path} passed {count} of {len(tests[path])}")
