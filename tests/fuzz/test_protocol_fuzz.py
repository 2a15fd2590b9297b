"""Property-based tests of the protocol layer's parsers and codecs: any input gives a
``ProtocolError`` (or the documented exception) or a value; valid frames round-trip."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from openenv_gym import urls
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import arrays, jsonrpc, pickled, tools
from openenv_gym.protocol.batch import (
    AutoresetMode,
    BatchCallFrame,
    BatchResetFrame,
    BatchStepFrame,
    BatchValuesFrame,
    batch_query,
    parse_batch_client_frame,
    parse_batch_query,
    parse_batch_server_frame,
)
from openenv_gym.protocol.frames import (
    CloseFrame,
    ErrorFrame,
    McpFrame,
    ObservationFrame,
    RenderRequest,
    ResetFrame,
    StateFrame,
    StateRequest,
    StepFrame,
    parse_client_frame,
    parse_server_frame,
)
from openenv_gym.protocol.session import ServerSession
from openenv_gym.protocol.vector import (
    VectorResetFrame,
    VectorResultFrame,
    VectorStepFrame,
    parse_vector_client_frame,
    parse_vector_server_frame,
)

from .strategies import finite_objects, finite_scalars, json_objects, json_values, messages

# (a) any input: a ProtocolError or a frame ----------------------------------------------------


@given(messages)
def test_parse_client_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_client_frame(message)
    except ProtocolError:
        pass


@given(messages)
def test_server_session_receive_never_raises(message: str | bytes) -> None:
    reply = ServerSession().receive(message)
    assert reply is not None


@given(messages)
def test_parse_server_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_server_frame(message)
    except ProtocolError:
        pass


@given(messages)
def test_parse_batch_client_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_batch_client_frame(message)
    except ProtocolError:
        pass


@given(messages)
def test_parse_batch_server_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_batch_server_frame(message)
    except ProtocolError:
        pass


@given(messages)
def test_parse_vector_client_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_vector_client_frame(message)
    except ProtocolError:
        pass


@given(messages)
def test_parse_vector_server_frame_raises_only_protocol_errors(message: str | bytes) -> None:
    try:
        parse_vector_server_frame(message)
    except ProtocolError:
        pass


# batch_make only base64-decodes the factories: it never unpickles, so fuzzing it runs no code.
@given(messages, st.integers(min_value=0, max_value=4))
def test_parse_batch_make_raises_only_protocol_errors(message: str | bytes, size: int) -> None:
    try:
        frame = pickled.parse_batch_make(message, size)
    except ProtocolError:
        return
    assert all(isinstance(factory, bytes) for factory in frame.factories)


@given(st.text(), st.integers(min_value=1, max_value=64))
def test_parse_batch_query_raises_only_protocol_errors(query: str, max_envs: int) -> None:
    try:
        parse_batch_query(query, max_envs)
    except ProtocolError:
        pass
    try:
        pickled.wants_pickled_factories(query)
    except ProtocolError:
        pass


@st.composite
def packed_headers(draw: st.DrawFn) -> bytes:
    """A packed message with a random header: arbitrary JSON, or ``$array`` entries with random
    dtypes, shapes and offsets, over a body of random length."""
    described = st.fixed_dictionaries(
        {
            "dtype": st.one_of(st.sampled_from(["<f4", ">i8", "|u1", "|b1", "<c16", "|O", "<U3", "xx"]), json_values()),
            "shape": st.one_of(st.lists(st.integers(min_value=-2, max_value=2**40), max_size=3), json_values()),
        },
        optional={"offset": json_values(), "items": json_values(), "data": json_values()},
    )
    node = st.recursive(
        st.one_of(json_values(), st.builds(lambda d: {"$array": d}, described)),
        lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children)),
        max_leaves=6,
    )
    header = json.dumps(draw(node)).encode()
    length = draw(st.one_of(st.just(len(header)), st.integers(min_value=0, max_value=2**32 - 1)))
    body = draw(st.binary(max_size=64))
    return arrays.BINARY_MAGIC + length.to_bytes(4, "little") + header + body


@given(st.one_of(st.binary(), packed_headers()))
def test_unpack_raises_only_protocol_errors(message: bytes) -> None:
    assert arrays.is_packed(message) == message.startswith(arrays.BINARY_MAGIC)
    try:
        arrays.unpack(message)
    except ProtocolError:
        pass


@given(st.one_of(st.text(), packed_headers().map(lambda m: m[8:].decode("utf-8", "replace"))))
def test_from_json_raises_only_protocol_errors(text: str) -> None:
    try:
        arrays.from_json(text)
    except ProtocolError:
        pass


@given(json_values())
def test_jsonrpc_parse_request_never_raises(data: Any) -> None:
    request = data if isinstance(data, dict) else {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": data}
    request_id, parsed = jsonrpc.parse_request(request)
    assert request_id is None or isinstance(request_id, (str, int))
    assert isinstance(parsed, (tools.ListToolsRequest, tools.CallToolRequest, jsonrpc.JsonRpcError))


_timeouts = st.one_of(json_values(), st.floats(), st.integers(min_value=-(10**320), max_value=10**320))


@given(
    st.fixed_dictionaries(
        {"name": st.one_of(st.just("t"), json_values()), "arguments": json_values(), "timeout_s": _timeouts}
    )
)
def test_jsonrpc_tools_call_params_never_raise(params: dict[str, Any]) -> None:
    _, parsed = jsonrpc.parse_request({"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": params})
    if isinstance(parsed, tools.CallToolRequest) and parsed.timeout_s is not None:
        assert 0 < parsed.timeout_s < math.inf


@given(
    st.one_of(
        json_objects,
        st.fixed_dictionaries(
            {"type": st.sampled_from(["call_tool", "list_tools"])},
            optional={
                "tool_name": st.one_of(st.just("t"), json_values()),
                "arguments": json_values(),
                "timeout_s": _timeouts,
            },
        ),
    )
)
def test_parse_tool_action_raises_only_protocol_errors(data: dict[str, Any]) -> None:
    try:
        parsed = tools.parse_tool_action(data)
    except ProtocolError:
        return
    if isinstance(parsed, tools.CallToolRequest) and parsed.timeout_s is not None:
        assert 0 < parsed.timeout_s < math.inf


@given(st.one_of(st.text(), json_values(), json_values().map(json.dumps)))
def test_parse_tool_call_raises_only_tool_call_errors(action: Any) -> None:
    from openenv_gym.errors import ToolCallError

    if not isinstance(action, (str, dict)):
        action = {"name": "t", "arguments": action}
    try:
        tools.parse_tool_call(action)
    except ToolCallError:
        pass


@given(st.text())
def test_url_helpers_raise_only_value_errors(url: str) -> None:
    """check_base_url documents ValueError; the others take URLs it accepted."""
    try:
        checked = urls.check_base_url(url)
    except ValueError:
        return
    try:
        ws = urls.ws_url(checked)
    except ValueError:
        return  # urllib's own ValueError (an invalid IPv6 netloc)
    assert urls.ws_url(ws) == ws
    urls.http_url(checked, "/schema")
    urls.tcp_form(ws)
    urls.unix_socket_path(ws)


# (b) valid values round-trip ------------------------------------------------------------------


@given(finite_objects)
def test_client_frames_round_trip(data: dict[str, Any]) -> None:
    for frame in (ResetFrame(data), StepFrame(data), McpFrame(data)):
        assert parse_client_frame(frame.serialize()) == frame
    for bare in (StateRequest(), RenderRequest(), CloseFrame()):
        assert parse_client_frame(bare.serialize()) == bare


@given(
    finite_objects,
    st.one_of(st.none(), st.integers(), st.floats(allow_nan=False)),
    st.booleans(),
    st.booleans(),
    finite_objects,
    st.text(),
    st.text(),
)
def test_server_frames_round_trip(
    obs: dict[str, Any], reward: float | None, done: bool, truncated: bool, info: dict[str, Any], code: str, msg: str
) -> None:
    assume(reward is None or math.isfinite(reward))
    observation = ObservationFrame(obs, reward, done, truncated, info)
    assert parse_server_frame(observation.serialize()) == observation
    assert parse_server_frame(StateFrame(obs).serialize()) == StateFrame(obs)
    details = {k: v for k, v in info.items() if k not in ("code", "message")}
    error = ErrorFrame(code, msg, details)
    assert parse_server_frame(error.serialize()) == error


@given(
    st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers()), max_size=4)),
    st.one_of(st.none(), finite_objects),
    st.one_of(st.none(), st.lists(st.booleans(), max_size=4)),
    st.lists(finite_objects, max_size=4),
    st.sampled_from(["get", "set", "call"]),
    st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
    st.lists(json_values(finite_scalars), max_size=3),
)
def test_batch_client_frames_round_trip(
    seeds: Any, options: Any, mask: Any, actions: list[Any], op: str, name: str, values: list[Any]
) -> None:
    reset = BatchResetFrame(seeds, options, mask)
    assert parse_batch_client_frame(reset.serialize()) == reset
    step = BatchStepFrame(actions)
    assert parse_batch_client_frame(step.serialize()) == step
    call = BatchCallFrame(op, name, values, {"k": 1}, values)
    assert parse_batch_client_frame(call.serialize()) == call
    assert parse_batch_server_frame(BatchValuesFrame(values).serialize()) == BatchValuesFrame(values)


@given(
    st.integers(min_value=1, max_value=64),
    st.sampled_from(list(AutoresetMode)),
    st.one_of(st.none(), st.text(min_size=1)),
    st.one_of(st.none(), st.text(min_size=1)),
)
def test_batch_query_round_trips(envs: int, mode: AutoresetMode, backend: str | None, render_mode: str | None) -> None:
    query = batch_query(envs, mode, backend, render_mode)
    assert parse_batch_query(query, 64) == (envs, mode, backend, render_mode)
    assert not pickled.wants_pickled_factories(query)
    assert pickled.wants_pickled_factories(pickled.pickled_batch_query(envs, mode))


@given(st.lists(st.binary(), max_size=4), st.text(), st.integers(min_value=0, max_value=2**40))
def test_batch_make_round_trips(factories: list[bytes], python: str, first: int) -> None:
    frame = pickled.BatchMakeFrame(factories, python, first)
    assert pickled.parse_batch_make(frame.serialize(), len(factories)) == frame


# Every fixed-size dtype the arrays' wire form carries, both byte orders where they differ.
_DTYPES = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="="),
    hnp.unsigned_integer_dtypes(endianness="="),
    hnp.floating_dtypes(endianness="="),
    hnp.integer_dtypes(endianness=">"),
    hnp.floating_dtypes(endianness=">"),
)
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
_ARRAYS = hnp.arrays(_DTYPES, _SHAPES)


def _same(a: Any, b: Any, bits: bool = True) -> bool:
    """Equal values, tuples as lists; arrays of the same dtype and shape, bit for bit (NaN
    payloads included) for the binary form, ``bits=False`` for the JSON form (``NaN`` in JSON
    is one NaN: only the binary form promises every NaN's payload)."""
    if isinstance(a, (np.ndarray, np.generic)):
        if type(a) is not type(b) and not (isinstance(a, np.float64) and type(b) is float):
            return False
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if bits:
            return a.tobytes() == np.ascontiguousarray(b).tobytes()
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y, bits) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k], bits) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


@st.composite
def array_values(draw: st.DrawFn) -> Any:
    """A value of nested dicts and lists holding arrays (some non-contiguous, some 0-d or empty),
    numpy scalars and JSON scalars."""
    leaf = st.one_of(
        _ARRAYS,
        _ARRAYS.map(lambda a: a[::2] if a.ndim else a),  # non-contiguous views
        _ARRAYS.map(lambda a: a.T),
        _ARRAYS.filter(lambda a: a.ndim == 0).map(lambda a: a[()]),  # numpy scalars
        finite_scalars,
    )
    return draw(
        st.recursive(
            leaf,
            lambda children: st.one_of(
                st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
            ),
            max_leaves=6,
        )
    )


@given(array_values(), st.booleans())
def test_pack_unpack_round_trips(value: Any, reuse_headers: bool) -> None:
    message = arrays.pack(value, reuse_headers=reuse_headers)
    assert arrays.is_packed(message)
    assert _same(value, arrays.unpack(message))


@given(array_values())
def test_to_json_from_json_round_trips(value: Any) -> None:
    assert _same(value, arrays.from_json(arrays.to_json(value)), bits=False)


@settings(max_examples=50)
@given(
    hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.uint8]), hnp.array_shapes(min_dims=1, max_side=4)),
    finite_objects,
    st.booleans(),
)
def test_vector_frames_round_trip(observations: np.ndarray, infos: dict[str, Any], binary: bool) -> None:
    rewards = np.zeros(len(observations))
    flags = np.zeros(len(observations), dtype=bool)
    result = VectorResultFrame(observations, infos, rewards, flags, flags)
    parsed = parse_vector_server_frame(result.serialize_binary() if binary else result.serialize())
    assert isinstance(parsed, VectorResultFrame)
    assert _same(observations, parsed.observations, binary) and _same(infos, parsed.infos, binary)
    step = VectorStepFrame(observations)
    parsed_step = parse_vector_client_frame(step.serialize_binary() if binary else step.serialize())
    assert isinstance(parsed_step, VectorStepFrame) and _same(observations, parsed_step.actions, binary)
    reset = VectorResetFrame(7, None, [True] * len(observations))
    assert parse_vector_client_frame(reset.serialize()) == reset


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "example.com"])
@given(port=st.integers(min_value=1, max_value=65535), path=st.text())
def test_unix_and_tcp_urls_round_trip(host: str, port: int, path: str) -> None:
    assert urls.unix_socket_path(urls.unix_url(path)) == path
    base = urls.with_host(f"http://x:{port}", host)
    assert urls.http_url(urls.ws_url(base), "/schema") == base + "/schema"
