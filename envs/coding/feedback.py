"""What the agent is told about a submission's tests, without giving a hidden test away.

A failing *visible* test (one whose call the prompt writes out, :attr:`Task.visible_tests`) is
reported with its call, its expected outcome, what came instead and, if it raised, the traceback.
The hidden tests are reported as counts: how many failed by a wrong value, by an exception, or
did not run; never which ones (an agent told which passed answers call k of the next run from
that), their arguments, expected values, the values, the exceptions' types, messages or
tracebacks (a program can put its arguments in any of them). They run in a process of their own
whose output the agent never sees, in an order drawn afresh for every run (:func:`~.harness.grade`).
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
        item = results[index] if index < len(results) else None
        trace = item.get("traceback") if item is not None else None
        if trace:
            lines.append(trace.rstrip("\n"))
    else:
        lines.append(_hidden_failures(task, results, passed))
    return "\n".join(lines)


def _hidden_failures(task: Task, results: Sequence[dict[str, Any] | None], passed: list[bool]) -> str:
    """How many hidden tests failed, and how many of them by a wrong value, an exception, or not running.

    Example:
        >>> task = Task(task_id="t", difficulty="easy", prompt="Count.", signature="def f(x):", entry_point="f",
        ...             tests=[{"args": [1], "expected": 1}, {"args": [2], "expected": 2}, {"args": [3], "expected": 3}])
        >>> _hidden_failures(task, [{"value": 0}, {"exception": []}, None], [False, False, False])
        '3 hidden tests failed: 1 returned a wrong value, 1 raised an exception, 1 did not run.'
    """
    failed = [index for index, ok in enumerate(passed) if not ok and index not in task.visible_tests]
    outcomes = [results[index] if index < len(results) else None for index in failed]
    counts = {
        "returned a wrong value": sum(item is not None and "value" in item for item in outcomes),
        "raised an exception": sum(item is not None and "value" not in item for item in outcomes),
        "did not run": sum(item is None for item in outcomes),
    }
    if len(failed) == 1:
        return f"A hidden test failed: it {next(how for how, count in counts.items() if count)}."
    return f"{len(failed)} hidden tests failed: " + ", ".join(f"{n} {how}" for how, n in counts.items() if n) + "."


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


def _outcome(results: Sequence[dict[str, Any] | None], index: int) -> str:
    item = results[index] if index < len(results) else None
    if item is None:
        return "it did not run"
    if "value" in item:
        return f"got {_short(item['value'])}"
    return f"it raised {item.get('error', 'an exception')}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."
