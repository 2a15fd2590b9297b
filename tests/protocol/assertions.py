"""Assertion helpers for protocol tests: a raised ProtocolError, an ErrorFrame returned."""

from __future__ import annotations

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import ErrorCode, ErrorFrame

__all__ = ["assert_error_frame", "assert_protocol_error"]


def assert_protocol_error(exc_info: pytest.ExceptionInfo[ProtocolError], code: ErrorCode, message: str) -> None:
    """Check the wire code and the exact message of a raised ProtocolError."""
    assert exc_info.value.code == code.value
    assert exc_info.value.message == message


def assert_error_frame(frame: object, code: ErrorCode, message: str | None = None) -> ErrorFrame:
    """Check that ``frame`` is an ErrorFrame with ``code`` (and ``message`` when given)."""
    assert isinstance(frame, ErrorFrame), frame
    assert frame.code == code
    if message is not None:
        assert frame.message == message
    return frame
