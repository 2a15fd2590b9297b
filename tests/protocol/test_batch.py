"""Tests for openenv_gym.protocol.batch: batch frames, the binary codec, queries, autoreset (no sockets)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from openenv_gym.errors import EpisodeEndedError, ProtocolError
from openenv_gym.protocol import CloseFrame, ErrorCode, ErrorFrame, RenderFrame, RenderRequest
from openenv_gym.protocol.batch import (
    BATCH_PATH,
    BINARY_MAGIC,
    AutoresetMode,
    AutoresetRule,
    BatchQuery,
    BatchResetFrame,
    BatchResultFrame,
    BatchStepFrame,
    batch_query,
    parse_batch_client_frame,
    parse_batch_query,
    parse_batch_server_frame,
)

MODES = ["NextStep", "SameStep", "Disabled"]


def assert_unknown_type(exc_info: pytest.ExceptionInfo[ProtocolError], kind: object) -> None:
    """UNKNOWN_TYPE naming the type sent and saying that a batch session takes batch_reset, batch_step and close.

    The list of frames is checked by name, not pinned: other batch frames may join it.
    """
    assert exc_info.value.code == ErrorCode.UNKNOWN_TYPE.value
    message = exc_info.value.message
    assert message.startswith(f"Unknown message type: {kind} (a batch session takes batch_reset, batch_step"), message
    assert message.endswith(" and close)"), message


def assert_protocol_error(exc_info: pytest.ExceptionInfo[ProtocolError], code: ErrorCode, message: str) -> None:
    """Check the wire code and the exact message of a raised ProtocolError."""
    assert exc_info.value.code == code.value
    assert exc_info.value.message == message


def frame(kind: str, data: object = None) -> str:
    return json.dumps({"type": kind, "data": data})


def binary(header: bytes, payload: bytes = b"") -> bytes:
    """A binary batch message with the given header bytes, as the codec lays it out."""
    return BINARY_MAGIC + struct.pack("<I", len(header)) + header + payload


def assert_same_result(actual: BatchResultFrame, expected: BatchResultFrame, dtype: np.dtype, shape: tuple) -> None:
    """A parsed binary result: observations as equal arrays of ``dtype``; every other field unchanged."""
    assert isinstance(actual, BatchResultFrame)
    stacked = np.asarray(actual.observations)
    assert stacked.shape == shape and stacked.dtype == dtype
    for row in actual.observations:
        assert isinstance(row, np.ndarray) and row.dtype == dtype
    expected_rows = [o["observation"] if isinstance(o, dict) else o for o in expected.observations]
    np.testing.assert_array_equal(stacked, np.asarray(expected_rows, dtype=dtype))
    assert (actual.infos, actual.rewards, actual.terminated, actual.truncated, actual.final) == (
        expected.infos,
        expected.rewards,
        expected.terminated,
        expected.truncated,
        expected.final,
    )


# parse_batch_client_frame: valid frames ---------------------------------------------------------


def test_parse_batch_reset_with_seeds_options_and_mask() -> None:
    """A batch_reset frame carries its seeds (integers and nulls), options and mask as sent."""
    message = frame("batch_reset", {"seeds": [0, None, 7], "options": {"low": -0.1}, "mask": [True, False, True]})
    assert parse_batch_client_frame(message) == BatchResetFrame([0, None, 7], {"low": -0.1}, [True, False, True])


@pytest.mark.parametrize(
    "message",
    [
        frame("batch_reset", {"seeds": None, "options": None, "mask": None}),
        frame("batch_reset", {}),
        frame("batch_reset", None),
        '{"type":"batch_reset"}',
    ],
)
def test_parse_batch_reset_nulls_and_missing_fields_mean_defaults(message: str) -> None:
    """Null or missing seeds, options, mask (or data) give a BatchResetFrame of Nones."""
    assert parse_batch_client_frame(message) == BatchResetFrame(None, None, None)


def test_parse_batch_step_actions_list() -> None:
    """A batch_step frame's data.actions is the list of per-sub-env action objects."""
    message = frame("batch_step", {"actions": [{"action": 0}, {"action": 1}, {}]})
    assert parse_batch_client_frame(message) == BatchStepFrame([{"action": 0}, {"action": 1}, {}])


def test_parse_close() -> None:
    """A close frame parses to CloseFrame, with or without data."""
    assert parse_batch_client_frame('{"type":"close"}') == CloseFrame()
    assert parse_batch_client_frame(frame("close", {})) == CloseFrame()


@pytest.mark.parametrize(
    "request_frame",
    [
        BatchResetFrame([1, None], {"level": 2}, [True, True]),
        BatchResetFrame(),
        BatchStepFrame([{"action": 1}, {"message": "héllo"}]),
    ],
)
def test_client_frames_round_trip(request_frame: object) -> None:
    """Every batch client frame's serialize() parses back to an equal frame."""
    assert parse_batch_client_frame(request_frame.serialize()) == request_frame  # type: ignore[attr-defined]


# parse_batch_client_frame: errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [{}, {"actions": None}, {"actions": {"action": 1}}, {"actions": "01"}, {"actions": [1, 0]}, {"actions": [{}, [1]]}],
)
def test_parse_batch_step_needs_a_list_of_action_objects(data: dict) -> None:
    """actions missing, not a list, or holding non-objects raise VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame("batch_step", data))
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, "batch_step needs data.actions, a list of action objects"
    )


@pytest.mark.parametrize("seeds", [[True], ["1"], [1.5], [0, [1]], 3, "0,1", {"0": 1}])
def test_parse_batch_reset_bad_seeds(seeds: object) -> None:
    """Seeds that are not a list of integers and nulls (booleans included) raise VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame("batch_reset", {"seeds": seeds}))
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, "batch_reset seeds must be null or a list of integers and nulls"
    )


@pytest.mark.parametrize("mask", [[1, 0], [True, None], ["true"], True, "TF"])
def test_parse_batch_reset_non_bool_mask(mask: object) -> None:
    """A mask that is not a list of booleans raises VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame("batch_reset", {"mask": mask}))
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, "batch_reset mask must be null or a list of booleans")


@pytest.mark.parametrize("options", [[1], "opts", 3])
def test_parse_batch_reset_non_object_options(options: object) -> None:
    """Options that are not an object raise VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame("batch_reset", {"options": options}))
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, "batch_reset options must be null or an object")


@pytest.mark.parametrize("kind", ["step", "reset", "state", "bogus", "batch_result"])
def test_parse_unknown_type_names_the_batch_frames(kind: str) -> None:
    """Any other type, the plain step and reset included, raises UNKNOWN_TYPE listing the batch frames."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame(kind, {}))
    assert_unknown_type(exc_info, kind)


def test_parse_missing_type_is_unknown_type() -> None:
    """A frame without a type raises UNKNOWN_TYPE."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame('{"data":{}}')
    assert_unknown_type(exc_info, None)


def test_parse_invalid_json() -> None:
    """Text that is not JSON raises INVALID_JSON."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame("{not json")
    assert exc_info.value.code == ErrorCode.INVALID_JSON.value
    assert exc_info.value.message.startswith("Invalid JSON: ")


def test_parse_binary_request_is_invalid_json() -> None:
    """Requests stay JSON text: a binary client frame raises INVALID_JSON."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(b'{"type":"close"}')
    assert_protocol_error(
        exc_info, ErrorCode.INVALID_JSON, "binary frames are not accepted on this session: send JSON text frames"
    )


@pytest.mark.parametrize("kind", ["batch_reset", "batch_step"])
def test_parse_non_object_data_is_validation_error(kind: str) -> None:
    """Batch frames whose data is not an object raise VALIDATION_ERROR naming the frame."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_client_frame(frame(kind, [1]))
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, f"the data of a {kind} frame must be a JSON object, got list"
    )


# BatchResultFrame (JSON) ------------------------------------------------------------------------


def test_reset_result_serializes_without_rewards_and_round_trips() -> None:
    """A reset result has only observations and infos on the wire, and parses back equal."""
    result = BatchResultFrame(observations=[{"observation": [0.5, 1]}, {"observation": [2, 3]}], infos=[{}, {"k": 1}])
    text = result.serialize()
    assert json.loads(text) == {
        "type": "batch_result",
        "data": {"observations": [{"observation": [0.5, 1]}, {"observation": [2, 3]}], "infos": [{}, {"k": 1}]},
    }
    parsed = parse_batch_server_frame(text)
    assert parsed == result
    assert parsed.rewards is None and parsed.terminated is None and parsed.final == {}  # type: ignore[union-attr]


def test_step_result_with_final_round_trips() -> None:
    """A step result carries rewards, flags and final keyed by index (strings on the wire, ints parsed)."""
    result = BatchResultFrame(
        observations=[{"observation": 1}, {"observation": 2}, {"observation": 3}],
        infos=[{}, {}, {"episode": 4}],
        rewards=[1.0, 0.0, -2.5],
        terminated=[False, False, True],
        truncated=[False, True, False],
        final={2: {"observation": {"observation": 9}, "info": {"why": "fell"}}},
    )
    data = json.loads(result.serialize())["data"]
    assert data["final"] == {"2": {"observation": {"observation": 9}, "info": {"why": "fell"}}}
    assert (data["rewards"], data["terminated"], data["truncated"]) == (
        [1.0, 0.0, -2.5],
        [False, False, True],
        [False, True, False],
    )
    assert parse_batch_server_frame(result.serialize()) == result


TWO = {"observations": [1, 2], "infos": [{}, {}]}  # a consistent reset result of two sub-envs


@pytest.mark.parametrize(
    "kwargs, size, message",
    [
        ({"observations": [1, 2], "infos": [{}]}, None, "batch_result infos must be a list of 2 items"),
        (TWO, 3, "batch_result observations must be a list of 3 items"),
        ({"observations": [1], "infos": {}}, None, "batch_result infos must be a list of 1 items"),
        (
            {**TWO, "rewards": [1.0], "terminated": [False] * 2, "truncated": [False] * 2},
            None,
            "batch_result rewards must be a list of 2 items",
        ),
        (
            {**TWO, "rewards": [1.0, 2.0], "terminated": None, "truncated": [False] * 2},
            None,
            "batch_result terminated must be a list of 2 items",
        ),
        (
            {**TWO, "rewards": [1.0] * 2, "terminated": [True] * 2, "truncated": [1]},
            None,
            "batch_result truncated must be a list of 2 items",
        ),
        ({**TWO, "final": {2: {}}}, None, "batch_result final has an index outside 0..1"),
        ({**TWO, "final": {-1: {}}}, None, "batch_result final has an index outside 0..1"),
    ],
)
def test_check_rejects_mismatched_lengths_and_bad_final(kwargs: dict, size: int | None, message: str) -> None:
    """check() names the first list whose length disagrees, and final indices out of range."""
    with pytest.raises(ProtocolError) as exc_info:
        BatchResultFrame(**kwargs).check(size)
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, message)


def test_check_accepts_a_consistent_result() -> None:
    """A result whose lists all have K items and whose final indices are in range passes check()."""
    BatchResultFrame([1, 2], [{}, {}], [0.0, 1.0], [True, False], [False, False], {0: {}, 1: {}}).check(2)


def test_parse_server_frame_checks_lengths() -> None:
    """A received batch_result whose lists disagree raises VALIDATION_ERROR."""
    message = json.dumps({"type": "batch_result", "data": {"observations": [1, 2], "infos": [{}]}})
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame(message)
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, "batch_result infos must be a list of 2 items")


@pytest.mark.parametrize("final", [{"x": {}}, [{}]])
def test_parse_server_frame_bad_final_keys(final: object) -> None:
    """final must map integer indices to results."""
    data = {"observations": [1], "infos": [{}], "rewards": [1.0], "terminated": [True], "truncated": [False]}
    data["final"] = final
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame(json.dumps({"type": "batch_result", "data": data}))
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, "batch_result final must map sub-env indices to results"
    )


def test_parse_server_error_frame_is_an_error_frame() -> None:
    """An error frame on a batch session parses to ErrorFrame, details kept."""
    message = '{"type":"error","data":{"message":"full","code":"CAPACITY_REACHED","requested":2}}'
    assert parse_batch_server_frame(message) == ErrorFrame("CAPACITY_REACHED", "full", {"requested": 2})


def test_parse_server_observation_frame_raises() -> None:
    """A plain observation frame is not a batch reply: SESSION_ERROR."""
    message = '{"type":"observation","data":{"observation":{},"reward":null,"done":false}}'
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame(message)
    assert_protocol_error(exc_info, ErrorCode.SESSION_ERROR, "expected batch_result, got 'observation'")


def test_parse_server_unknown_type_raises() -> None:
    """An unknown server frame type raises UNKNOWN_TYPE."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame('{"type":"bogus","data":{}}')
    assert exc_info.value.code == ErrorCode.UNKNOWN_TYPE.value


def test_parse_server_bytes_without_magic_are_refused() -> None:
    """Bytes that do not start with the binary magic are not JSON text: INVALID_JSON."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame(b'{"type":"batch_result","data":{}}')
    assert exc_info.value.code == ErrorCode.INVALID_JSON.value


# Binary codec -----------------------------------------------------------------------------------


def test_binary_of_wire_objects_round_trips() -> None:
    """Wire-object observations become one float32 array of shape (K, ...); everything else is kept."""
    result = BatchResultFrame(
        observations=[{"observation": [0.25, -1.5, 3.0, 0.1]}, {"observation": [1.0, 2.0, 3.0, 4.0]}],
        infos=[{}, {"lives": 3}],
        rewards=[1.0, 0.5],
        terminated=[False, True],
        truncated=[False, False],
        final={1: {"observation": {"observation": [9.0, 9.0, 9.0, 9.0]}, "info": {"end": True}}},
    )
    message = result.serialize_binary(np.float32)
    assert isinstance(message, bytes) and message.startswith(BINARY_MAGIC)
    (length,) = struct.unpack_from("<I", message, 4)
    header = json.loads(message[8 : 8 + length])
    assert header["data"]["observations"] == {"$array": {"dtype": "<f4", "shape": [2, 4], "offset": 0}}
    assert len(message) == 8 + length + 2 * 4 * 4
    parsed = parse_batch_server_frame(message)
    assert_same_result(parsed, result, np.dtype(np.float32), (2, 4))  # type: ignore[arg-type]


def test_binary_of_raw_arrays_round_trips() -> None:
    """Raw numpy observations (a reset result) keep their dtype and shape through the binary form."""
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (3, 2, 2), dtype=np.uint8) for _ in range(3)]
    result = BatchResultFrame(observations=frames, infos=[{}, {}, {}])
    parsed = parse_batch_server_frame(result.serialize_binary(np.dtype(np.uint8)))
    assert_same_result(parsed, result, np.dtype(np.uint8), (3, 3, 2, 2))  # type: ignore[arg-type]
    assert parsed.rewards is None  # type: ignore[union-attr]


def test_binary_parse_accepts_bytearray_and_memoryview() -> None:
    """The binary form parses from any bytes-like message."""
    message = BatchResultFrame([np.arange(2, dtype=np.float64)], [{}]).serialize_binary(np.float64)
    for view in (bytearray(message), memoryview(message)):
        parsed = parse_batch_server_frame(view)
        np.testing.assert_array_equal(parsed.observations[0], [0.0, 1.0])  # type: ignore[union-attr]


def good_binary() -> bytes:
    return BatchResultFrame([{"observation": [1, 2]}, {"observation": [3, 4]}], [{}, {}]).serialize_binary(np.float32)


def _without_array_header() -> bytes:
    header = json.dumps({"type": "batch_result", "data": {"observations": [[1.0]], "infos": [{}]}}).encode()
    return binary(header, np.zeros(1, np.float32).tobytes())


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(BINARY_MAGIC + b"\x05\x00", id="truncated-header-length"),
        pytest.param(BINARY_MAGIC, id="magic-only"),
        pytest.param(good_binary()[:-1], id="payload-one-byte-short"),
        pytest.param(good_binary()[:-4], id="payload-one-item-short"),
        pytest.param(good_binary() + b"\x00" * 4, id="payload-one-item-long"),
        pytest.param(binary(b"{nope", b"\x00" * 8), id="bad-json-header"),
        pytest.param(binary(b"\xff\xfe", b""), id="header-not-utf8"),
        pytest.param(BINARY_MAGIC + struct.pack("<I", 10_000) + b'{"type":', id="header-length-past-end"),
        pytest.param(binary(b"[1, 2]"), id="header-not-an-object"),
        pytest.param(_without_array_header(), id="observations-not-described"),
    ],
)
def test_malformed_binary_is_a_protocol_error(message: bytes) -> None:
    """A truncated, mis-sized or badly described binary result raises ProtocolError, never something else."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_server_frame(message)
    assert exc_info.value.code == ErrorCode.VALIDATION_ERROR.value
    assert exc_info.value.message.startswith("malformed binary ")


@pytest.mark.parametrize(
    "observations",
    [
        pytest.param([{"observation": [1, 2]}, {"observation": [1]}], id="ragged"),
        pytest.param([{"observation": [1]}, {"obs": [1]}], id="no-observation-key"),
        pytest.param([{"observation": ["a"]}, {"observation": ["b"]}], id="not-numbers"),
        pytest.param([np.zeros(2), np.zeros(3)], id="raw-ragged"),
    ],
)
def test_observations_that_do_not_stack_are_a_protocol_error(observations: list) -> None:
    """serialize_binary refuses observations that do not make one array, with VALIDATION_ERROR."""
    with pytest.raises(ProtocolError) as exc_info:
        BatchResultFrame(observations, [{}, {}]).serialize_binary(np.float32)
    assert exc_info.value.code == ErrorCode.VALIDATION_ERROR.value
    assert exc_info.value.message.startswith("observations do not stack into one ")


# Render -----------------------------------------------------------------------------------------


def test_a_render_request_asks_for_every_sub_env_s_frame() -> None:
    assert parse_batch_client_frame('{"type":"render"}') == RenderRequest()


@pytest.mark.parametrize("packed", [True, False])
def test_render_frames_of_k_sub_envs_round_trip(packed: bool) -> None:
    """A batch session's render frame, packed raw or inline JSON, parses back to one array per sub-env."""
    frames = [np.full((2, 3, 3), index, dtype=np.uint8) for index in range(3)]
    reply = RenderFrame(frames)
    parsed = parse_batch_server_frame(reply.serialize_binary() if packed else reply.serialize())
    assert isinstance(parsed, RenderFrame)
    parsed.check(3)
    for got, want in zip(parsed.frame, frames):
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("frame", [[None, None], np.zeros((2, 4, 4, 3), np.uint8), None, "text"])
def test_a_render_frame_of_the_wrong_size_fails_its_check(frame: object) -> None:
    with pytest.raises(ProtocolError, match="a batch render frame must hold 3 frames, one per sub-env"):
        RenderFrame(frame).check(3)


# Query ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_batch_query_round_trips(mode: AutoresetMode) -> None:
    """batch_query() builds a query that parse_batch_query() reads back."""
    query = batch_query(5, mode)
    assert query == f"envs=5&autoreset_mode={mode.value}"
    assert parse_batch_query(query, max_envs=8) == BatchQuery(5, mode)


def test_batch_query_carries_the_render_mode() -> None:
    """render_mode travels in the query and comes back as BatchQuery.render_mode; none when absent."""
    query = batch_query(2, AutoresetMode.SAME_STEP, render_mode="rgb_array")
    assert query == "envs=2&autoreset_mode=SameStep&render_mode=rgb_array"
    parsed = parse_batch_query(query, max_envs=8)
    assert parsed == BatchQuery(2, AutoresetMode.SAME_STEP, None, "rgb_array") and parsed.render_mode == "rgb_array"
    assert parse_batch_query("envs=2", max_envs=8).render_mode is None


def test_default_autoreset_mode_is_next_step() -> None:
    """Without autoreset_mode the session autoresets on the next step, as Gymnasium does by default."""
    assert parse_batch_query("envs=3", max_envs=3) == BatchQuery(3, AutoresetMode.NEXT_STEP)
    assert parse_batch_query("envs=1&autoreset_mode=", max_envs=3) == BatchQuery(1, AutoresetMode.NEXT_STEP)


@pytest.mark.parametrize("query", ["", "autoreset_mode=NextStep", "envs=", "envs=abc", "envs=1.5", "envs=2e1", "n=2"])
def test_query_without_an_integer_envs(query: str) -> None:
    """envs missing or not an integer raises VALIDATION_ERROR showing the expected form."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_query(query, max_envs=8)
    assert_protocol_error(exc_info, ErrorCode.VALIDATION_ERROR, f"{BATCH_PATH} needs ?envs=N with N a positive integer")


@pytest.mark.parametrize("envs", [0, -1, 9, 1000])
def test_query_envs_out_of_range(envs: int) -> None:
    """envs below 1 or above the server's maximum raises VALIDATION_ERROR naming the range."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_query(f"envs={envs}", max_envs=8)
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, f"envs={envs} is out of range: this server hosts 1 to 8 per session"
    )


@pytest.mark.parametrize("mode", ["bogus", "nextstep", "NEXT_STEP"])
def test_query_unknown_autoreset_mode_lists_the_valid_ones(mode: str) -> None:
    """An unknown autoreset_mode raises VALIDATION_ERROR listing Gymnasium's mode values."""
    with pytest.raises(ProtocolError) as exc_info:
        parse_batch_query(f"envs=2&autoreset_mode={mode}", max_envs=8)
    assert_protocol_error(
        exc_info, ErrorCode.VALIDATION_ERROR, f"unknown autoreset_mode {mode!r}; expected one of {MODES}"
    )


def test_autoreset_modes_match_gymnasium() -> None:
    """AutoresetMode values are gymnasium.vector.AutoresetMode's."""
    from gymnasium.vector import AutoresetMode as GymMode

    assert [m.value for m in AutoresetMode] == MODES
    assert {m.value for m in GymMode} == set(MODES)


# AutoresetRule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_rule_before_any_end_steps_normally(mode: AutoresetMode) -> None:
    """A fresh sub-env, and one whose step did not end, may step and is not reset."""
    rule = AutoresetRule(mode)
    rule.check_can_step(0)
    assert rule.resets_instead_of_stepping() is False
    assert rule.stepped(False, False) is False
    rule.check_can_step(0)
    assert rule.resets_instead_of_stepping() is False


@pytest.mark.parametrize("flags", [(True, False), (False, True), (True, True)], ids=["terminated", "truncated", "both"])
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_rule_after_an_end(mode: AutoresetMode, flags: tuple[bool, bool]) -> None:
    """After an end: SameStep resets now, NextStep resets on the next step, Disabled refuses the next step."""
    rule = AutoresetRule(mode)
    assert rule.stepped(*flags) is (mode is AutoresetMode.SAME_STEP)
    assert rule.resets_instead_of_stepping() is (mode is AutoresetMode.NEXT_STEP)
    if mode is AutoresetMode.DISABLED:
        with pytest.raises(EpisodeEndedError) as exc_info:
            rule.check_can_step(3)
        assert_protocol_error(
            exc_info,
            ErrorCode.EPISODE_ENDED,
            "sub-env 3 ended: reset it with reset_mask before stepping (autoreset_mode=Disabled)",
        )
    else:
        rule.check_can_step(3)


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_rule_was_reset_clears_the_end(mode: AutoresetMode) -> None:
    """was_reset() after an end lets the sub-env step normally again."""
    rule = AutoresetRule(mode)
    rule.stepped(True, False)
    rule.was_reset()
    assert rule.ended is False
    rule.check_can_step(0)
    assert rule.resets_instead_of_stepping() is False
    assert rule.stepped(False, False) is False


@pytest.mark.parametrize("data", [{"infos": [{}]}, {"observations": None, "infos": []}, {"observations": 3}])
def test_batch_result_without_a_list_of_observations_is_a_protocol_error(data: dict) -> None:
    """Found by atheris: a ``batch_result`` without ``observations`` raised TypeError (``len(None)``)."""
    with pytest.raises(ProtocolError, match="observations"):
        parse_batch_server_frame(json.dumps({"type": "batch_result", "data": data}))
