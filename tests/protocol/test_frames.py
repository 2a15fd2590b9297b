"""Tests for openenv_gym.protocol.frames: parsing, serialization, checks and str() of the wire frames (no sockets)."""

from __future__ import annotations

import json
import re

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import (
    CloseFrame,
    ErrorCode,
    ErrorFrame,
    ObservationFrame,
    ResetFrame,
    ServerSession,
    StateFrame,
    StateRequest,
    StepFrame,
    parse_client_frame,
    parse_server_frame,
)
from tests.protocol.assertions import assert_protocol_error

# parse_client_frame: valid frames ---------------------------------------------------------------


def test_parse_reset_passes_data_through_as_kwargs() -> None:
    """A reset frame's data (seed, options, ...) becomes the ResetFrame's kwargs unchanged."""
    frame = parse_client_frame('{"type":"reset","data":{"seed":42,"options":{"level":3},"episode_id":"ep1"}}')
    assert frame == ResetFrame({"seed": 42, "options": {"level": 3}, "episode_id": "ep1"})


def test_parse_reset_without_data_has_empty_kwargs() -> None:
    """A reset frame with no data key resets with no kwargs."""
    assert parse_client_frame('{"type":"reset"}') == ResetFrame({})


def test_parse_step_data_is_the_action_dict() -> None:
    """A step frame's data is the action's fields themselves, as in OpenEnv."""
    message = '{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"Hi"}}}'
    frame = parse_client_frame(message)
    assert frame == StepFrame({"type": "call_tool", "tool_name": "echo", "arguments": {"message": "Hi"}})


@pytest.mark.parametrize("kind, expected", [("reset", ResetFrame({})), ("step", StepFrame({}))])
def test_parse_null_data_is_an_empty_object(kind: str, expected: object) -> None:
    """``"data": null`` is treated as ``{}``."""
    assert parse_client_frame(json.dumps({"type": kind, "data": None})) == expected


def test_parse_state_and_close() -> None:
    """State and close frames parse to their request types, with or without data."""
    assert parse_client_frame('{"type":"state"}') == StateRequest()
    assert parse_client_frame('{"type":"close"}') == CloseFrame()
    assert parse_client_frame('{"type":"state","data":{}}') == StateRequest()


@pytest.mark.parametrize(
    "frame",
    [ResetFrame({"seed": 1}), StepFrame({"message": "héllo"}), StateRequest(), CloseFrame()],
)
def test_client_frames_round_trip(frame: object) -> None:
    """Every client frame's serialize() parses back to an equal frame."""
    assert parse_client_frame(frame.serialize()) == frame  # type: ignore[attr-defined]


# parse_client_frame: errors ---------------------------------------------------------------------


def test_parse_invalid_json_is_invalid_json() -> None:
    """Text that is not JSON raises INVALID_JSON with OpenEnv's message."""
    with pytest.raises(
        ProtocolError, match=re.escape("Invalid JSON: Expecting value: line 1 column 1 (char 0)")
    ) as exc_info:
        parse_client_frame("not json")
    assert exc_info.value.code == ErrorCode.INVALID_JSON.value


@pytest.mark.parametrize("message", [b'{"type":"reset"}', bytearray(b'{"type":"reset"}'), memoryview(b"{}")])
def test_parse_binary_frame_is_invalid_json(message: bytes) -> None:
    """A binary frame is refused with INVALID_JSON, even if its bytes are valid JSON."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_client_frame(message)
    assert_protocol_error(
        exc_info, ErrorCode.INVALID_JSON, "binary frames are not accepted on this session: send JSON text frames"
    )


@pytest.mark.parametrize(
    "message, type_name", [("[1, 2]", "list"), ('"reset"', "str"), ("null", "NoneType"), ("3", "int")]
)
def test_parse_non_object_json_is_validation_error(message: str, type_name: str) -> None:
    """JSON that is not an object raises VALIDATION_ERROR naming what was sent."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_client_frame(message)
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, f"a frame must be a JSON object, got {type_name}")


def test_parse_unknown_type_is_unknown_type() -> None:
    """An unknown frame type raises UNKNOWN_TYPE with OpenEnv's message."""
    with pytest.raises(ProtocolError, match=re.escape("Unknown message type: bogus")) as exc_info:
        parse_client_frame('{"type":"bogus","data":{}}')
    assert_protocol_error(exc_info, ErrorCode.UNKNOWN_TYPE, "Unknown message type: bogus")


def test_parse_extra_top_level_key_is_validation_error() -> None:
    """A key besides type/data (e.g. timeout_s) is rejected like OpenEnv's extra="forbid"."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_client_frame('{"type":"step","data":{"message":"hi"},"timeout_s":5}')
    assert_protocol_error(
        exc_info,
        ErrorCode.VALIDATION_ERROR,
        "unexpected top-level keys ['timeout_s']: a frame has only 'type' and 'data'",
    )
    assert exc_info.value.details["errors"] == [{"type": "extra_forbidden", "loc": ["timeout_s"]}]


@pytest.mark.parametrize("kind", ["reset", "step"])
@pytest.mark.parametrize("data, type_name", [([1], "list"), ("hi", "str"), (3, "int")])
def test_parse_non_object_data_is_validation_error(kind: str, data: object, type_name: str) -> None:
    """A reset or step frame whose data is not an object raises VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_client_frame(json.dumps({"type": kind, "data": data}))
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, f"the data of a {kind} frame must be a JSON object, got {type_name}"
    )


def test_protocol_error_str_names_message_and_code() -> None:
    """str(ProtocolError) reads as the message followed by the wire code."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_client_frame('{"type":"bogus"}')
    assert str(exc_info.value) == "Unknown message type: bogus (code: UNKNOWN_TYPE)"


# Server frames: serialization and parsing -------------------------------------------------------


def test_observation_frame_serialize_has_our_fields_without_empty_metadata() -> None:
    """ObservationFrame.serialize writes observation/reward/done/truncated/info and omits empty metadata."""
    frame = ObservationFrame({"x": 1}, reward=0.5, done=True, truncated=False, info={"k": [1, 2]}, metadata={})
    assert frame.serialize() == (
        '{"type":"observation","data":{"observation":{"x":1},"reward":0.5,"done":true,'
        '"truncated":false,"info":{"k":[1,2]}}}'
    )
    assert "metadata" not in json.loads(ObservationFrame({"x": 1}).serialize())["data"]


def test_observation_frame_serialize_includes_non_empty_metadata() -> None:
    """Non-empty metadata is written beside the observation, as OpenEnv 0.10 does."""
    data = json.loads(ObservationFrame({}, metadata={"step": 3}).serialize())["data"]
    assert data["metadata"] == {"step": 3}


@pytest.mark.parametrize(
    "frame",
    [
        ObservationFrame({"obs": [0.1, 0.2]}, reward=1.5, done=False, truncated=True, info={"t": "x"}),
        ObservationFrame({}, reward=None),
        ObservationFrame({"a": 1}, reward=-2, done=True, metadata={"m": 1}),
    ],
)
def test_observation_frame_round_trips(frame: ObservationFrame) -> None:
    """parse_server_frame(frame.serialize()) gives back an equal ObservationFrame."""
    assert parse_server_frame(frame.serialize()) == frame


def test_parse_openenv_010_observation_with_metadata() -> None:
    """An OpenEnv 0.10 frame with observation.metadata and a metadata sibling is accepted; the
    metadata is the frame's, not an observation field."""
    message = (
        '{"type":"observation","data":{"observation":{"echoed_message":"hi","metadata":{"step":1}},'
        '"reward":0.2,"done":false,"metadata":{"step":1}}}'
    )
    frame = parse_server_frame(message)
    assert frame == ObservationFrame(
        observation={"echoed_message": "hi"},
        reward=0.2,
        done=False,
        truncated=False,
        info={},
        metadata={"step": 1},
    )


def test_parse_openenv_observation_without_our_extensions() -> None:
    """An OpenEnv frame without truncated/info defaults them to False/{}; reward null stays None."""
    frame = parse_server_frame('{"type":"observation","data":{"observation":{"stdout":""},"reward":null,"done":true}}')
    assert frame == ObservationFrame(observation={"stdout": ""}, reward=None, done=True, truncated=False, info={})
    assert frame.metadata is None  # type: ignore[union-attr]


def test_parse_observation_null_fields_become_empty_objects() -> None:
    """``observation: null`` and ``info: null`` are read as empty objects."""
    frame = parse_server_frame('{"type":"observation","data":{"observation":null,"info":null,"done":false}}')
    assert frame == ObservationFrame(observation={}, info={})


@pytest.mark.parametrize("reward", [0, 3, -1.25, 1e300])
def test_parse_observation_accepts_numeric_rewards(reward: float) -> None:
    """Integer and float rewards are accepted unchanged."""
    frame = parse_server_frame(json.dumps({"type": "observation", "data": {"observation": {}, "reward": reward}}))
    assert frame.reward == reward  # type: ignore[union-attr]


def test_parse_openenv_observation_with_bool_reward() -> None:
    """An OpenEnv observation whose reward is a JSON boolean (allowed by OpenEnv) is accepted."""
    frame = parse_server_frame('{"type":"observation","data":{"observation":{},"reward":true,"done":false}}')
    assert frame.reward is True  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "frame, message",
    [
        (ObservationFrame({}, reward="1"), "reward must be a number or null, got '1'"),  # type: ignore[arg-type]
        (ObservationFrame({}, reward=[1.0]), "reward must be a number or null, got [1.0]"),  # type: ignore[arg-type]
        (ObservationFrame({}, done=0), "done and truncated must be booleans"),  # type: ignore[arg-type]
        (ObservationFrame({}, done="false"), "done and truncated must be booleans"),  # type: ignore[arg-type]
        (ObservationFrame({}, done=None), "done and truncated must be booleans"),  # type: ignore[arg-type]
        (ObservationFrame({}, truncated=1), "done and truncated must be booleans"),  # type: ignore[arg-type]
        (ObservationFrame([1]), "observation must be an object, got list"),  # type: ignore[arg-type]
        (ObservationFrame({}, info=[]), "info must be an object, got list"),  # type: ignore[arg-type]
    ],
)
def test_observation_check_rejects_wrong_json_types(frame: ObservationFrame, message: str) -> None:
    """ObservationFrame.check raises VALIDATION_ERROR for a field of the wrong JSON type."""
    with pytest.raises(ProtocolError) as exc_info:
        frame.check()
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, message)


def test_parse_server_observation_with_wrong_types_raises() -> None:
    """parse_server_frame runs check(): a string ``done`` raises VALIDATION_ERROR."""
    with pytest.raises(ProtocolError, match=re.escape("done and truncated must be booleans")):
        parse_server_frame('{"type":"observation","data":{"observation":{},"done":"no"}}')


def test_observation_check_accepts_valid_frame() -> None:
    """A well-typed ObservationFrame passes check()."""
    ObservationFrame({"a": 1}, reward=1, done=True, truncated=True, info={"x": None}).check()


def test_error_frame_serialize_keeps_extra_details() -> None:
    """ErrorFrame.serialize writes its details beside message and code (OpenEnv's CAPACITY_REACHED shape)."""
    frame = ErrorFrame(
        ErrorCode.CAPACITY_REACHED,
        "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
        {"active_sessions": 1, "max_sessions": 1},
    )
    assert json.loads(frame.serialize()) == {
        "type": "error",
        "data": {
            "message": "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
            "code": "CAPACITY_REACHED",
            "active_sessions": 1,
            "max_sessions": 1,
        },
    }


def test_parse_server_error_frame_returns_extras_in_details() -> None:
    """parse_server_frame puts every error field besides message and code into details."""
    message = (
        '{"type":"error","data":{"message":"Server at capacity: 1/1 sessions active. Cannot accept new '
        'connections.","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}'
    )
    frame = parse_server_frame(message)
    assert frame == ErrorFrame(
        "CAPACITY_REACHED",
        "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
        {"active_sessions": 1, "max_sessions": 1},
    )
    assert frame.code == ErrorCode.CAPACITY_REACHED  # type: ignore[union-attr]


def test_error_frame_round_trips() -> None:
    """An ErrorFrame with details survives serialize -> parse_server_frame."""
    frame = ErrorFrame("FACTORY_ERROR", "cannot build env", {"factory_name": "Echo"})
    assert parse_server_frame(frame.serialize()) == frame


def test_parse_server_error_frame_without_code_defaults_to_execution_error() -> None:
    """An error frame lacking code and message reads as EXECUTION_ERROR with an empty message."""
    assert parse_server_frame('{"type":"error","data":{}}') == ErrorFrame("EXECUTION_ERROR", "", {})


def test_state_frame_round_trips() -> None:
    """StateFrame serializes compactly and parses back equal."""
    frame = StateFrame({"episode_id": "ep1", "step_count": 2})
    assert frame.serialize() == '{"type":"state","data":{"episode_id":"ep1","step_count":2}}'
    assert parse_server_frame(frame.serialize()) == frame


def test_parse_server_unknown_type_raises() -> None:
    """A server frame of unknown type raises UNKNOWN_TYPE naming it."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_server_frame('{"type":"batch_step","data":{}}')
    assert_protocol_error(exc_info, ErrorCode.UNKNOWN_TYPE, "unknown server frame type: 'batch_step'")


# __str__ ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        StepFrame({"code": "x" * 10000}),
        ResetFrame({"options": {"blob": "y" * 10000}}),
        StateFrame({"log": "z" * 10000}),
        ObservationFrame({"stdout": "w" * 10000}),
    ],
)
def test_frame_str_elides_long_payloads(frame: object) -> None:
    """str() of a frame with a huge payload stays short and says how long the payload was."""
    text = str(frame)
    assert len(text) < 200
    assert "chars]" in text


def test_frame_str_of_short_payload_is_complete() -> None:
    """str() of a small frame shows the whole payload."""
    assert str(StepFrame({"message": "hi"})) == "step {'message': 'hi'}"
    assert str(ErrorFrame("SESSION_ERROR", "nope")) == "error SESSION_ERROR: nope"


def test_error_frame_str_with_enum_code_shows_wire_code() -> None:
    """str() of an ErrorFrame built with an ErrorCode member shows the bare wire code."""
    reply = ServerSession().receive('{"type":"step","data":{}}')
    assert str(reply) == "error SESSION_ERROR: step before reset: send a reset frame first"


def test_metadata_only_inside_the_observation_is_the_frames_without_copies_of_its_fields() -> None:
    """OpenEnv 0.3 servers send metadata only inside the observation; ours copy a tool env's reset
    fields there for OpenEnv's tool client. The parser keeps what is not a copy."""
    inside_only = (
        '{"type":"observation","data":{"observation":{"x":1,"metadata":{"step":1}},"reward":null,"done":false}}'
    )
    assert parse_server_frame(inside_only) == ObservationFrame({"x": 1}, metadata={"step": 1})
    copies = '{"type":"observation","data":{"observation":{"prompt":"p","metadata":{"prompt":"p","k":2}}}}'
    assert parse_server_frame(copies) == ObservationFrame({"prompt": "p"}, metadata={"k": 2})
    only_copies = '{"type":"observation","data":{"observation":{"prompt":"p","metadata":{"prompt":"p"}}}}'
    assert parse_server_frame(only_copies) == ObservationFrame({"prompt": "p"})
