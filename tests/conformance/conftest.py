"""The conformance tier's wiring: every test that takes a path runs on every path, and carries the
path's name into its reports, which :mod:`tests.conformance.report` counts at the end."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from .paths import (
    ANY_SPACE_SINGLE_PATHS,
    ANY_SPACE_VECTOR_PATHS,
    ARRAYS_ONLY_SINGLE_PATHS,
    ARRAYS_ONLY_VECTOR_PATHS,
    SB3_PATHS,
    SINGLE_PATHS,
    VECTOR_PATHS,
    Servers,
)
from .report import PATH_PROPERTY

_PATHS = {"vector_path": VECTOR_PATHS, "sb3_path": SB3_PATHS, "single_path": SINGLE_PATHS}
# Spaces other than arrays of numbers: carried by some single paths, refused (saying so) by the others.
_PATHS |= {"any_space_single_path": ANY_SPACE_SINGLE_PATHS, "arrays_only_single_path": ARRAYS_ONLY_SINGLE_PATHS}
_PATHS |= {"any_space_vector_path": ANY_SPACE_VECTOR_PATHS, "arrays_only_vector_path": ARRAYS_ONLY_VECTOR_PATHS}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes ``vector_path``, ``sb3_path`` or ``single_path`` (or one of its subsets)
    runs once per such path."""
    for argument, paths in _PATHS.items():
        if argument in metafunc.fixturenames:
            metafunc.parametrize(argument, paths, ids=[path.name for path in paths])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each path's test carries the path's name into its reports (xdist hands them to the controller)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for argument in _PATHS:
            if argument in params:
                item.user_properties.append((PATH_PROPERTY, params[argument].name))


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """The module's servers, one per env id it uses, shared by its tests."""
    started = Servers()
    yield started
    started.close()


@pytest.fixture
def closing() -> Iterator[Any]:
    """``closing(env)`` returns ``env`` and closes it when the test ends (a second close is harmless)."""
    opened: list[Any] = []

    def keep(env: Any) -> Any:
        opened.append(env)
        return env

    yield keep
    errors = Counter[str]()
    for env in reversed(opened):
        try:
            env.close()
        except Exception as exc:  # every env is closed; the first failure is reported after
            errors[f"{type(exc).__name__}: {exc}"] += 1
    assert not errors, f"closing the test's envs failed: {dict(errors)}"
