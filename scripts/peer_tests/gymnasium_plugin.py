"""A pytest plugin: Gymnasium's own vector tests with ``RemoteVectorEnv.from_env_fns`` as AsyncVectorEnv.

Loaded with ``-p gymnasium_plugin`` (this folder on ``PYTHONPATH``) while pytest runs Gymnasium's
``tests/vector`` and ``tests/wrappers/vector`` from a checkout of Gymnasium: the tests are run as
they are, and every ``AsyncVectorEnv(...)`` they make (directly or through
``gym.make_vec(vectorization_mode="async")``) is ``from_env_fns`` over the same arguments. See
``scripts/peer_tests/README.md``.
"""

from __future__ import annotations

from typing import Any

import gymnasium.vector
import gymnasium.vector.async_vector_env

from openenv_gym.vector import RemoteVectorEnv

_ASYNC = gymnasium.vector.AsyncVectorEnv


class _Standin(type):
    """The stand-in's type: an instance check accepts Gymnasium's class and ours."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, (_ASYNC, RemoteVectorEnv))

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, (_ASYNC, RemoteVectorEnv))


class RemoteAsyncVectorEnv(metaclass=_Standin):
    """``AsyncVectorEnv(env_fns, ...)`` is ``RemoteVectorEnv.from_env_fns(env_fns, ...)``."""

    made = 0  # how many the running test made: it counts as a test of ours only if it made one

    def __new__(cls, env_fns: Any, *args: Any, **kwargs: Any) -> Any:
        RemoteAsyncVectorEnv.made += 1
        return RemoteVectorEnv.from_env_fns(env_fns, *args, **kwargs)


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_setup(item: Any) -> None:
    RemoteAsyncVectorEnv.made = 0


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        if RemoteAsyncVectorEnv.made and _OUTCOMES.get(report.nodeid) in (None, "passed"):
            _OUTCOMES[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # A test Gymnasium itself skips for the arguments it made us with (a dynamic space with shared
    # memory) is not run for AsyncVectorEnv either: it is listed, and left out of the count.
    skipped = sorted(node for node, outcome in _OUTCOMES.items() if outcome == "skipped")
    failed = sorted(node for node, outcome in _OUTCOMES.items() if outcome == "failed")
    ran = len(_OUTCOMES) - len(skipped)
    passed = ran - len(failed)
    terminalreporter.section("tests that made an AsyncVectorEnv (from_env_fns)")
    for node in skipped + failed:
        terminalreporter.line(f"{_OUTCOMES[node]}: {node}")
    terminalreporter.line(
        f"from_env_fns: {passed} of {ran} passed ({100 * passed / max(ran, 1):.1f}%), "
        f"{len(skipped)} skipped by the tests themselves"
    )


def pytest_configure(config: Any) -> None:
    gymnasium.vector.AsyncVectorEnv = RemoteAsyncVectorEnv
    gymnasium.vector.async_vector_env.AsyncVectorEnv = RemoteAsyncVectorEnv
