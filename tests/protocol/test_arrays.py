"""Values holding arrays on the wire: packed (binary) and JSON forms, and their cached fast paths."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import arrays

VALUES = [
    pytest.param({"x": np.arange(12, dtype=np.float32).reshape(3, 4)}, id="float32-2d"),
    pytest.param({"a": np.zeros(0, dtype=np.int64), "b": np.ones((2, 0, 3), dtype=np.uint8)}, id="empty"),
    pytest.param({"obs": np.random.default_rng(0).integers(0, 255, (2, 4, 84, 84), dtype=np.uint8)}, id="frames"),
    pytest.param([np.array([True, False]), np.array([1.5, -0.0, np.inf, np.nan])], id="list-bool-special-floats"),
    pytest.param({"s": np.float32(2.5), "i": np.int64(-3), "b": np.bool_(True)}, id="numpy-scalars"),
    pytest.param({"lives": np.array([3, 2], dtype=np.int32), "_lives": np.array([True, False])}, id="vector-info"),
    pytest.param({"final_obs": np.array([np.zeros(2), None], dtype=object)}, id="object-array"),
    pytest.param({"text": np.array(["ab", "c"]), "nested": {"deep": {"x": np.arange(3)}}}, id="unicode-nested"),
    pytest.param({"plain": [1, "two", None, True, 2.5, -0.0], "big": 2**70}, id="json-only"),
    pytest.param(np.arange(6, dtype=">i4").reshape(2, 3), id="big-endian"),
    pytest.param({"t": np.arange(8, dtype=np.float64).reshape(2, 4).T}, id="not-contiguous"),
]


def assert_same(actual, expected) -> None:
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray) and actual.dtype == expected.dtype and actual.shape == expected.shape
        if expected.dtype.hasobject:
            for got, want in zip(actual.ravel(), expected.ravel()):
                assert_same(got, want)
        else:
            np.testing.assert_array_equal(actual, expected)
            assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()  # bit for bit, NaN included
    elif isinstance(expected, np.generic):
        assert type(actual) is type(expected) and actual == expected
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys()
        for key in expected:
            assert_same(actual[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, list) and len(actual) == len(expected)
        for got, want in zip(actual, expected):
            assert_same(got, want)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert type(actual) is type(expected) and actual == expected
        if isinstance(expected, float):
            assert math.copysign(1, actual) == math.copysign(1, expected)


@pytest.mark.parametrize("value", VALUES)
def test_packed_and_json_forms_round_trip_exactly(value):
    for _ in range(2):  # the second time through the cached header and plan
        assert_same(arrays.unpack(arrays.pack(value)), value)
    assert_same(arrays.from_json(arrays.to_json(value)), value)


@pytest.mark.parametrize("value", VALUES)
def test_the_cached_path_writes_the_bytes_of_the_full_one(value):
    assert arrays.pack(value) == arrays._pack_walking(value)


def test_a_cached_header_still_gives_fresh_values():
    """Two messages of one layout: the second's dicts and arrays are its own, not the first's."""
    first = arrays.unpack(arrays.pack({"a": np.array([1, 2]), "meta": {"k": 1}}))
    first["meta"]["k"] = 99
    second = arrays.unpack(arrays.pack({"a": np.array([3, 4]), "meta": {"k": 1}}))
    assert second["meta"] == {"k": 1} and second["a"].tolist() == [3, 4]
    assert not second["a"].flags.writeable  # a view of the message: join_batches copies it


def test_header_layout_and_alignment():
    message = arrays.pack({"a": np.zeros(3, dtype=np.uint8), "b": np.ones(2, dtype=np.float64)})
    assert message[:4] == arrays.BINARY_MAGIC
    (length,) = struct.unpack_from("<I", message, 4)
    header = json.loads(message[8 : 8 + length])
    assert header == {
        "a": {"$array": {"dtype": "|u1", "shape": [3], "offset": 0}},
        "b": {"$array": {"dtype": "<f8", "shape": [2], "offset": 8}},  # 8-byte aligned after 3 bytes
    }
    assert len(message) == 8 + length + 8 + 16


def packed(header: object, body: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return arrays.BINARY_MAGIC + struct.pack("<I", len(text)) + text + body


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(b"OGB1\x00\x00\x00\x00", id="other-magic"),
        pytest.param(arrays.BINARY_MAGIC + b"\x01", id="short-length"),
        pytest.param(arrays.BINARY_MAGIC + struct.pack("<I", 5) + b"\xff\xfe\xfd\xfc\xfb", id="not-utf8"),
        pytest.param(packed("nope")[:-2] + b"{{", id="bad-json"),
        pytest.param(packed({"$array": {"dtype": "<f4", "shape": [4], "offset": 0}}, b"\0" * 8), id="too-short"),
        pytest.param(packed({"$array": {"dtype": "<f4", "shape": [2], "offset": 0}}, b"\0" * 16), id="too-long"),
        pytest.param(packed({"$array": {"dtype": "<f4", "shape": [-1], "offset": 0}}), id="negative-shape"),
        pytest.param(packed({"$array": {"dtype": "<f4", "shape": [1], "offset": -8}}, b"\0" * 8), id="negative-offset"),
        pytest.param(packed({"$array": {"dtype": "what", "shape": [1], "offset": 0}}, b"\0" * 8), id="bad-dtype"),
        pytest.param(packed({"$array": {"dtype": "O", "shape": [1], "offset": 0}}, b"\0" * 8), id="raw-objects"),
        pytest.param(packed({"$array": {"dtype": "object", "shape": [2], "items": [1]}}), id="items-short"),
        pytest.param(packed({"$array": {"shape": [1], "offset": 0}}, b"\0" * 8), id="no-dtype"),
    ],
)
def test_malformed_messages_are_protocol_errors(message):
    for _ in range(2):  # and again, once a plan of that header could have been kept
        with pytest.raises(ProtocolError) as exc_info:
            arrays.unpack(message)
        assert exc_info.value.code == "VALIDATION_ERROR"


def test_malformed_json_form_is_a_protocol_error():
    with pytest.raises(ProtocolError) as exc_info:
        arrays.from_json("{nope")
    assert exc_info.value.code == "INVALID_JSON"
    with pytest.raises(ProtocolError) as exc_info:
        arrays.from_json('{"$array": {"dtype": "<f4", "shape": [3], "data": [1, 2]}}')
    assert exc_info.value.code == "VALIDATION_ERROR"


def test_values_json_cannot_carry_are_refused():
    with pytest.raises(TypeError):
        arrays.pack({"x": object()})


@pytest.mark.parametrize(
    "text",
    [
        '{"$array":{"dtype":"u1","shape":[],"data":-1}}',
        '{"$array":{"dtype":"i1","shape":[1],"data":[300]}}',
    ],
)
def test_inline_data_out_of_its_dtypes_range_is_a_protocol_error(text: str) -> None:
    """Found by tests/fuzz: numpy's OverflowError escaped from_json."""
    with pytest.raises(ProtocolError, match="malformed"):
        arrays.from_json(text)


# Found by the atheris target (tests/fuzz/atheris_target.py) -----------------------------------


@pytest.mark.parametrize("dtype", [",f8", "f8,i4", "(2)f8", "[('a','<f4')]", "a8", 3, None, ["<f4"]])
def test_only_plain_dtype_strings_are_read(dtype: object) -> None:
    """numpy's comma and tuple forms go through ast.literal_eval (a ``SyntaxError`` for ``",f8"``)."""
    described = {"dtype": dtype, "shape": [1], "offset": 0}
    header = json.dumps({"$array": described}).encode()
    message = arrays.BINARY_MAGIC + struct.pack("<I", len(header)) + header + bytes(8)
    for _ in range(2):  # the second time a header comes, its plan is made and used
        with pytest.raises(ProtocolError, match="dtype"):
            arrays.unpack(message)
    with pytest.raises(ProtocolError, match="dtype"):
        arrays.from_json(json.dumps({"$array": {**described, "data": [0.0]}}))


def test_a_wide_dtype_is_not_allocated_for_a_short_text() -> None:
    """Three one-character items as ``<U100000000`` would take 1.2 GB: refused before numpy allocates."""
    text = json.dumps({"$array": {"dtype": "<U100000000", "shape": [3], "data": ["a", "b", "c"]}})
    with pytest.raises(ProtocolError, match="wide dtypes"):
        arrays.from_json(text)
    mismatched = json.dumps({"$array": {"dtype": "<U1000", "shape": [1], "data": ["a", "b"]}})
    with pytest.raises(ProtocolError, match="shape"):
        arrays.from_json(mismatched)
    wide = np.array(["x" * 40, "y"])  # <U40: wider than a number, within the bound
    assert np.array_equal(arrays.from_json(arrays.to_json(wide)), wide)


def test_a_lone_surrogate_packs_as_its_escape() -> None:
    """A string read from a ``"\\ud800"`` escape cannot be strict UTF-8; its header carries the escape."""
    value = {"text": "a\ud800b", "array": np.arange(3)}
    message = arrays.pack(value)
    message.decode("utf-8", "ignore")
    unpacked = arrays.unpack(message)
    assert unpacked["text"] == "a\ud800b" and np.array_equal(unpacked["array"], value["array"])
    assert arrays.unpack(arrays.pack(value, reuse_headers=False))["text"] == "a\ud800b"


@pytest.mark.parametrize("dtype", ["|S3", "S8", "|V8"])
def test_bytes_dtypes_travel_packed_only(dtype: str) -> None:
    """Found by atheris: the JSON form read ``|S`` arrays that to_json cannot write (their items are bytes)."""
    with pytest.raises(ProtocolError, match="packed only"):
        arrays.from_json(json.dumps({"$array": {"dtype": dtype, "shape": [1], "data": [0]}}))
    packed = np.zeros(2, dtype=dtype)
    assert arrays.unpack(arrays.pack(packed)).tobytes() == packed.tobytes()
