"""Scoring outside the sandbox: compare what the code returned with the hidden expected values.

The sandbox only ever sees a test's arguments and reports what the function returned (as JSON)
or raised; the expected values stay here, so code that tampers with its own process cannot
forge a pass.
"""

from __future__ import annotations

import math
from typing import Any

from .tasks import TestCase

__all__ = ["FLOAT_TOLERANCE", "passed_tests", "same_value", "well_formed"]

FLOAT_TOLERANCE = 1e-6


def same_value(got: Any, expected: Any) -> bool:
    """JSON equality, with floats close within :data:`FLOAT_TOLERANCE` and booleans not numbers."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if isinstance(expected, int) and isinstance(got, int):
            return got == expected
        return math.isclose(got, expected, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    if isinstance(expected, list) and isinstance(got, list):
        return len(got) == len(expected) and all(map(same_value, got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(same_value(got[key], expected[key]) for key in expected)
    return type(got) is type(expected) and got == expected


def well_formed(results: list[Any]) -> list[dict[str, Any]]:
    """The sandbox's per-case results with every field of the wrong type dropped.

    Agent code can write to the results channel itself: a forged result may fail its test, but it
    must never break scoring or feedback (a ``traceback`` that is a number, an ``exception`` that
    is not a list of names).

    Example:
        >>> well_formed([{"value": 3}, {"error": "E", "traceback": 5, "exception": "ValueError"}, 7])
        [{'value': 3}, {'error': 'E'}, {}]
    """
    cleaned = []
    for item in results:
        case: dict[str, Any] = {}
        if isinstance(item, dict):
            if "value" in item:
                case["value"] = item["value"]
            for key in ("error", "traceback"):
                if isinstance(item.get(key), str):
                    case[key] = item[key]
            exception = item.get("exception")
            if isinstance(exception, list) and all(isinstance(name, str) for name in exception):
                case["exception"] = exception
            if item.get("missing_entry_point") is True:
                case["missing_entry_point"] = True
        cleaned.append(case)
    return cleaned


def passed_tests(tests: list[TestCase], results: list[dict[str, Any]]) -> list[bool]:
    """Which tests passed, given the sandbox's per-case results (missing ones failed).

    A program that defines no entry point passes no test, not even one that expects a ``NameError``.
    """
    outcomes = []
    for index, test in enumerate(tests):
        result = results[index] if index < len(results) else {}
        if result.get("missing_entry_point"):
            outcomes.append(False)
        elif test.raises is not None:
            outcomes.append(test.raises in result.get("exception", ()))
        else:
            outcomes.append("value" in result and same_value(result["value"], test.expected))
    return outcomes
