"""Scoring outside the sandbox: compare what the code returned with the hidden expected values.

The sandbox only ever sees a test's arguments and reports what the function returned (as JSON)
or raised; the expected values stay here, so code that tampers with its own process cannot
forge a pass.
"""

from __future__ import annotations

import math
from typing import Any

from .tasks import TestCase

__all__ = ["FLOAT_TOLERANCE", "passed_tests", "same_value"]

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


def passed_tests(tests: list[TestCase], results: list[dict[str, Any]]) -> list[bool]:
    """Which tests passed, given the sandbox's per-case results (missing ones failed)."""
    outcomes = []
    for index, test in enumerate(tests):
        result = results[index] if index < len(results) else {}
        if test.raises is not None:
            outcomes.append(test.raises in result.get("exception", ()))
        else:
            outcomes.append("value" in result and same_value(result["value"], test.expected))
    return outcomes
