"""protocol/raised.py: the one rule by which an env's exception travels in its error frame and is
rebuilt by the caller (a vector env raises it as its own type: tests/conformance/test_vector_errors.py)."""

from __future__ import annotations

import json

import pytest

from openenv_gym.protocol.raised import exception_details, pickled_exception, rebuilt


class EnvOwnError(Exception):
    """A type the caller cannot rebuild by name."""


def test_a_builtin_exception_is_rebuilt_by_name_with_its_arguments():
    details = json.loads(json.dumps(exception_details(KeyError("missing", 3))))  # as the frame carries them
    assert details == {"exception_type": "KeyError", "exception_args": ["missing", 3]}
    again = rebuilt(details, trusts_pickles=False)
    assert type(again) is KeyError and again.args == ("missing", 3)


def test_arguments_json_cannot_hold_travel_as_the_exceptions_text():
    details = exception_details(ValueError(object, float("nan")))
    assert details["exception_args"] == [str(ValueError(object, float("nan")))]
    assert type(rebuilt(details, trusts_pickles=False)) is ValueError


@pytest.mark.parametrize(
    "named", ["tests.protocol.test_raised.EnvOwnError", "KeyboardInterrupt", "SystemExit", "print", "object", None]
)
def test_only_builtin_exception_types_are_rebuilt_by_name(named):
    """The allow-list: a type of elsewhere, a BaseException that is no Exception, or any other name is not rebuilt."""
    assert rebuilt({"exception_type": named, "exception_args": ["x"]}, trusts_pickles=False) is None


def test_a_pickled_exception_is_read_only_by_a_caller_that_trusts_the_session():
    details = {**exception_details(EnvOwnError("told to fail")), **pickled_exception(EnvOwnError("told to fail"))}
    assert details["exception_type"] == "tests.protocol.test_raised.EnvOwnError"
    assert rebuilt(details, trusts_pickles=False) is None
    own = rebuilt(details, trusts_pickles=True)
    assert type(own) is EnvOwnError and str(own) == "told to fail"


def test_arguments_a_type_does_not_take_leave_it_unbuilt():
    assert rebuilt({"exception_type": "UnicodeDecodeError", "exception_args": ["bad"]}, trusts_pickles=False) is None
