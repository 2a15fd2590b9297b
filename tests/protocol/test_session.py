"""Tests for openenv_gym.protocol.session: the per-session rules of ServerSession and ClientSession (no sockets)."""

from __future__ import annotations

import json
import re

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import (
    ClientSession,
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    ObservationFrame,
    ResetFrame,
    ServerSession,
    SessionState,
    StateFrame,
    StateRequest,
    StepFrame,
)
from tests.protocol.assertions import assert_error_frame

OBSERVATION_REPLY = '{"type":"observation","data":{"observation":{},"reward":null,"done":false}}'
STATE_REPLY = '{"type":"state","data":{"episode_id":"ep1","step_count":0}}'


# ServerSession ---------------------------------------------------------------------------------


def test_server_step_before_reset_is_session_error() -> None:
    """A step before any successful reset is answered with a SESSION_ERROR frame."""
    session = ServerSession()
    reply = session.receive('{"type":"step","data":{"message":"hi"}}')
    assert_error_frame(reply, ErrorCode.SESSION_ERROR, "step before reset: send a reset frame first")
    assert reply.serialize() == (  # type: ignore[union-attr]
        '{"type":"error","data":{"message":"step before reset: send a reset frame first","code":"SESSION_ERROR"}}'
    )
    assert session.state is SessionState.OPEN


def test_server_reset_frame_alone_does_not_allow_steps() -> None:
    """Receiving a reset frame is not enough: steps wait until reset_succeeded() is called."""
    session = ServerSession()
    assert session.receive('{"type":"reset","data":{"seed":1}}') == ResetFrame({"seed": 1})
    assert session.state is SessionState.OPEN
    assert_error_frame(session.receive('{"type":"step","data":{}}'), ErrorCode.SESSION_ERROR)


def test_server_steps_pass_after_reset_succeeded() -> None:
    """After reset_succeeded() the session is READY and step frames come through as requests."""
    session = ServerSession()
    session.receive('{"type":"reset"}')
    session.reset_succeeded()
    assert session.state is SessionState.READY
    assert session.receive('{"type":"step","data":{"message":"a"}}') == StepFrame({"message": "a"})
    assert session.receive('{"type":"step","data":{"message":"b"}}') == StepFrame({"message": "b"})
    assert session.receive('{"type":"reset"}') == ResetFrame({})
    assert session.state is SessionState.READY


def test_server_state_request_allowed_before_reset() -> None:
    """A state request needs no episode, as in OpenEnv."""
    assert ServerSession().receive('{"type":"state"}') == StateRequest()


def test_server_close_frame_closes_the_session() -> None:
    """A close frame is returned, moves the session to CLOSED, and later receives raise."""
    session = ServerSession()
    assert session.receive('{"type":"close"}') == CloseFrame()
    assert session.state is SessionState.CLOSED
    with pytest.raises(ProtocolError, match=re.escape("session is closed")) as exc_info:
        session.receive('{"type":"reset"}')
    assert exc_info.value.code == ErrorCode.SESSION_ERROR.value


def test_server_close_method_closes_and_reset_succeeded_does_not_reopen() -> None:
    """close() marks the session CLOSED for good; a late reset_succeeded() does not reopen it."""
    session = ServerSession()
    session.close()
    session.reset_succeeded()
    assert session.state is SessionState.CLOSED
    with pytest.raises(ProtocolError, match=re.escape("session is closed")):
        session.receive('{"type":"state"}')


@pytest.mark.parametrize(
    "message, code",
    [
        ("not json", ErrorCode.INVALID_JSON),
        ("", ErrorCode.INVALID_JSON),
        (b'{"type":"reset"}', ErrorCode.INVALID_JSON),
        ("[1]", ErrorCode.VALIDATION_ERROR),
        ('{"type":"bogus"}', ErrorCode.UNKNOWN_TYPE),
        ('{"type":"step","data":{},"timeout_s":5}', ErrorCode.VALIDATION_ERROR),
        ('{"type":"step","data":[1]}', ErrorCode.VALIDATION_ERROR),
        ('{"type":"reset","data":"x"}', ErrorCode.VALIDATION_ERROR),
    ],
)
def test_server_bad_input_returns_error_frame_and_session_stays_usable(message: str | bytes, code: ErrorCode) -> None:
    """Bad input never raises from receive(): it becomes an error frame and the session goes on."""
    session = ServerSession()
    session.receive('{"type":"reset"}')
    session.reset_succeeded()
    reply = assert_error_frame(session.receive(message), code)
    assert json.loads(reply.serialize())["data"]["code"] == code.value
    assert session.state is SessionState.READY
    assert session.receive('{"type":"step","data":{"message":"ok"}}') == StepFrame({"message": "ok"})


def test_server_validation_error_frame_carries_pydantic_style_errors() -> None:
    """The error frame for an extra top-level key carries details["errors"] on the wire, like OpenEnv."""
    reply = assert_error_frame(ServerSession().receive('{"type":"reset","timeout_s":5}'), ErrorCode.VALIDATION_ERROR)
    data = json.loads(reply.serialize())["data"]
    assert data["errors"] == [{"type": "extra_forbidden", "loc": ["timeout_s"]}]
    assert data["code"] == "VALIDATION_ERROR"


# ClientSession ---------------------------------------------------------------------------------


def test_client_send_produces_exact_compact_frames() -> None:
    """send_* return compact JSON text, with non-ASCII kept as is."""
    session = ClientSession()
    assert session.send_reset({"seed": 42}) == '{"type":"reset","data":{"seed":42}}'
    session.receive(OBSERVATION_REPLY)
    assert session.send_step({"message": "hi"}) == '{"type":"step","data":{"message":"hi"}}'
    session.receive(OBSERVATION_REPLY)
    assert session.send_step({"message": "héllo"}) == '{"type":"step","data":{"message":"héllo"}}'
    session.receive(OBSERVATION_REPLY)
    assert session.send_state() == '{"type":"state"}'
    session.receive(STATE_REPLY)
    assert session.send_close() == '{"type":"close"}'


def test_client_send_reset_without_kwargs_sends_empty_object() -> None:
    """send_reset() with no kwargs sends ``"data":{}``."""
    assert ClientSession().send_reset() == '{"type":"reset","data":{}}'


def test_client_allows_one_call_in_flight() -> None:
    """A second send while a call waits raises ProtocolError naming both calls."""
    session = ClientSession()
    session.send_reset()
    with pytest.raises(
        ProtocolError,
        match=re.escape("step while reset is still waiting for its reply: one call at a time per session"),
    ) as exc_info:
        session.send_step({"message": "hi"})
    assert exc_info.value.code == ErrorCode.SESSION_ERROR.value
    assert session.pending is not None and session.pending.value == "reset"


def test_client_receive_without_pending_call_raises() -> None:
    """A frame that arrives when no call is waiting raises ProtocolError."""
    with pytest.raises(ProtocolError, match=re.escape("unexpected frame: no call is waiting")):
        ClientSession().receive(OBSERVATION_REPLY)


def test_client_receive_matches_reply_to_call() -> None:
    """A reset/step gets an ObservationFrame, a state request gets a StateFrame, and reset makes it READY."""
    session = ClientSession()
    session.send_reset()
    assert session.receive(OBSERVATION_REPLY) == ObservationFrame(observation={})
    assert session.state is SessionState.READY
    session.send_state()
    assert session.receive(STATE_REPLY) == StateFrame({"episode_id": "ep1", "step_count": 0})
    assert session.pending is None


def test_client_wrong_reply_type_for_step_raises() -> None:
    """A state frame answering a step raises ProtocolError."""
    session = ClientSession()
    session.send_step({"message": "hi"})
    with pytest.raises(ProtocolError, match=re.escape("step expects a ObservationFrame, the server sent StateFrame")):
        session.receive(STATE_REPLY)
    assert session.pending is None


def test_client_wrong_reply_type_for_state_raises() -> None:
    """An observation frame answering a state request raises ProtocolError."""
    session = ClientSession()
    session.send_state()
    with pytest.raises(ProtocolError, match=re.escape("state expects a StateFrame, the server sent ObservationFrame")):
        session.receive(OBSERVATION_REPLY)


def test_client_error_reply_is_returned_and_session_stays_usable() -> None:
    """An error frame is returned as an ErrorFrame (not raised) and the next call may be sent."""
    session = ClientSession()
    session.send_step({"message": "hi"})
    reply = session.receive('{"type":"error","data":{"message":"boom","code":"EXECUTION_ERROR","traceback":"tb"}}')
    assert reply == ErrorFrame("EXECUTION_ERROR", "boom", {"traceback": "tb"})
    assert session.state is SessionState.OPEN
    assert session.send_state() == '{"type":"state"}'


def test_client_malformed_reply_raises_and_frees_the_call() -> None:
    """A reply that is not JSON raises INVALID_JSON and does not leave the call pending."""
    session = ClientSession()
    session.send_state()
    with pytest.raises(ProtocolError) as exc_info:
        session.receive("{")
    assert exc_info.value.code == ErrorCode.INVALID_JSON.value
    assert session.pending is None


@pytest.mark.parametrize(
    "send", [lambda s: s.send_reset(), lambda s: s.send_step({"message": "hi"}), lambda s: s.send_state()]
)
def test_client_sends_after_close_raise(send) -> None:  # type: ignore[no-untyped-def]
    """After send_close() every further call raises ProtocolError."""
    session = ClientSession()
    session.send_close()
    assert session.state is SessionState.CLOSED
    with pytest.raises(ProtocolError, match=re.escape("after the session closed")) as exc_info:
        send(session)
    assert exc_info.value.code == ErrorCode.SESSION_ERROR.value


def test_client_send_close_while_call_pending_is_allowed() -> None:
    """send_close() may be sent while a call is waiting and drops that call."""
    session = ClientSession()
    session.send_step({"message": "hi"})
    assert session.send_close() == '{"type":"close"}'
    assert session.pending is None
    with pytest.raises(ProtocolError, match=re.escape("step after the session closed")):
        session.send_step({"message": "again"})


def test_a_lone_surrogate_is_refused_before_anything_is_in_flight():
    """A str that is not valid Unicode cannot travel as UTF-8: ValueError, and the session can still send."""
    from openenv_gym.protocol import ClientSession

    session = ClientSession()
    with pytest.raises(ValueError, match="lone surrogate"):
        session.send_step({"code": "print('\udcff')"})
    assert session.pending is None
    assert "caf\u00e9" in session.send_step({"code": "caf\u00e9"})
