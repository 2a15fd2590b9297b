"""What the agent is told about a submission's tests, without giving a hidden test away.

A failing *visible* test (one whose call the prompt writes out, :attr:`Task.visible_tests`) is
reported with its call, its expected outcome, what came instead and, if it raised, the traceback.
A hidden test is reported by what the function did only: that it raised, or that the value was
wrong; never its arguments, its expected value, the value, the exception's type, message or
traceback (a program can put its arguments in any of them), and the hidden tests run in a
process of their own whose output the agent never sees (:func:`~.harness.grade`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openenv_gym.sandbox import RunResult

from .tasks import Task, TestCase

__all__ = ["FEEDBACK_LIMIT", "example_reports", "feedback"]

FEEDBACK_LIMIT = 8192  # characters of feedback an observation holds
_REPR_LIMIT = 200


def feedback(
    task: Task, result: RunResult, passed: list[bool], results: Sequence[dict[str, Any] | None] | None = None
) -> str:
    """A few lines on how the submission did on ``task``'s tests, the first failure first.

    ``results`` are per test, in the task's order (``None``: the call did not run); default:
    ``result.results``, the results of a run that called them all in order.

    Example:
        >>> from openenv_gym.sandbox import RunResult
        >>> task = Task(task_id="t", difficulty="easy", prompt="For example, inc(1) returns 2.",
        ...             signature="def inc(x):", entry_point="inc",
        ...             tests=[{"args": [5], "expected": 6}, {"args": [1], "expected": 2}])
        >>> print(feedback(task, RunResult(0, "", "", [{"value": 6}, {"value": 1}], False, 0.0), [True, False]))
        1 of 2 tests passed.
        Example inc(1) failed: expected 2, got 1.
    """
    total = len(task.tests)
    results = result.results if results is None else results
    ran = sum(item is not None for item in results)
    if any(item is not None and item.get("missing_entry_point") for item in results):
        return f"The program defines no function `{task.entry_point}`; the tests call `{task.signature.rstrip(': ')}`."
    if not ran:
        if result.timed_out:
            return "No test ran: the run was killed at its time limit (see stderr)."
        if result.exit_code != 0:
            return f"No test ran: the program exited with code {result.exit_code} (see stderr)."
        return "No test ran: the program exited before its function could be called."
    if all(passed):
        return f"All {total} tests passed."
    lines = [f"{sum(passed)} of {total} tests passed."]
    if ran < total:
        reason = "the run was killed at its time limit" if result.timed_out else "the program stopped"
        lines.append(f"Only {ran} of them ran: {reason} (see stderr).")
    visible = [index for index in task.visible_tests if not passed[index]]
    if visible:
        index = visible[0]
        test = task.tests[index]
        lines.append(f"Example {_call(task, test)} failed: {_expected(test)}, {_outcome(results, index)}.")
    else:
        index = passed.index(False)
        lines.append(f"A hidden test failed: {_outcome(results, index, hidden=True)}.")
    item = results[index] if index < len(results) else None
    trace = item.get("traceback") if item is not None and index in task.visible_tests else None
    if trace:
        lines.append(trace.rstrip("\n"))
    return "\n".join(lines)


def example_reports(task: Task, results: Sequence[dict[str, Any] | None], passed: list[bool]) -> list[dict[str, Any]]:
    """How each test the prompt shows went: ``{"call", "expected", "got", "passed"}``.

    Only the visible tests are reported (their calls and outcomes are in the prompt already);
    ``results`` are the sandbox's per-test results, ``passed`` the scores of all the task's tests.
    A raise is named with its message; :func:`feedback` has the first failure's traceback.

    Example:
        >>> task = Task(task_id="t", difficulty="easy", prompt="For example, inc(1) returns 2.",
        ...             signature="def inc(x):", entry_point="inc",
        ...             tests=[{"args": [5], "expected": 6}, {"args": [1], "expected": 2}])
        >>> example_reports(task, [{"value": 6}, {"value": 1}], [True, False])
        [{'call': 'inc(1)', 'expected': '2', 'got': '1', 'passed': False}]
    """
    reports = []
    for index in task.visible_tests:
        test = task.tests[index]
        item = results[index] if index < len(results) else None
        if item is None:
            got = "did not run"
        elif "value" in item:
            got = _short(item["value"])
        else:
            got = f"raised {item.get('error', 'an exception')}"
        expected = f"raises {test.raises}" if test.raises is not None else _short(test.expected)
        reports.append({"call": _call(task, test), "expected": expected, "got": got, "passed": passed[index]})
    return reports


def _call(task: Task, test: TestCase) -> str:
    return f"{task.entry_point}({', '.join(_short(arg) for arg in test.args)})"


def _expected(test: TestCase) -> str:
    return f"expected it to raise {test.raises}" if test.raises is not None else f"expected {_short(test.expected)}"


def _outcome(results: Sequence[dict[str, Any] | None], index: int, *, hidden: bool = False) -> str:
    item = results[index] if index < len(results) else None
    if item is None:
        return "it did not run"
    if "value" in item:
        return "it returned a wrong value" if hidden else f"got {_short(item['value'])}"
    if hidden:
        return "it raised an exception"
    return f"it raised {item.get('error', 'an exception')}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."
