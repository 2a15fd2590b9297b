"""The properties the coverage-guided fuzz target checks (:mod:`tests.fuzz.atheris_target`),
one function per parser of the protocol and spaces layers, each taking one message.

The property is the hypothesis tests' (``tests/fuzz/test_*_fuzz.py``): each parser raises only
its documented, typed error, and what it accepts round-trips through its own serializer. Any
other exception, a failed assertion included, is a crash. Plain Python: the runner imports this
module under atheris's instrumentation, ``make_corpus`` without it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from openenv_gym import urls
from openenv_gym.errors import ProtocolError, SpaceCodecError, ToolCallError, UnsupportedSpaceError
from openenv_gym.protocol import arrays, jsonrpc, pickled, tools
from openenv_gym.protocol._json import utf8
from openenv_gym.protocol.batch import (
    BatchResultFrame,
    BatchStepFrame,
    batch_query,
    parse_batch_client_frame,
    parse_batch_query,
    parse_batch_server_frame,
)
from openenv_gym.protocol.frames import ErrorFrame, RenderFrame, parse_client_frame, parse_server_frame
from openenv_gym.protocol.session import ServerSession
from openenv_gym.protocol.vector import parse_vector_client_frame, parse_vector_server_frame
from openenv_gym.providers.process import _creation_error
from openenv_gym.spaces import decode, encode, from_wire, space_from_json, space_to_json
from openenv_gym.spaces.schema import map_schema, openenv_spaces
from openenv_gym.startup import FAILED_PREFIX, READY_PREFIX

__all__ = ["TARGETS", "Message", "one_input"]

Message = str | bytes


def _sendable(text: str) -> None:
    """A server's reply travels as UTF-8 (lone surrogates escaped, as the server sends them) and
    reads back as the same frame."""
    wire = utf8(text).decode("utf-8")
    assert parse_server_frame(wire).serialize() == text


def _json_of(message: Message) -> Any:
    """The JSON value a payload holds, or ``None`` (no parser is reached with it then)."""
    try:
        return json.loads(message)
    except (ValueError, RecursionError):
        return None


def _parsed(parse: Callable[[Message], Any], message: Message) -> Any:
    """What ``parse`` makes of ``message``; ``None`` when it refuses it, as it may, with ProtocolError."""
    try:
        return parse(message)
    except ProtocolError:
        return None


def _reparses(parse: Callable[[Message], Any], frame: Any) -> str:
    """``frame``'s JSON form, which ``parse`` must read back as the same frame."""
    text = frame.serialize()
    assert parse(text).serialize() == text
    return text


def client_frame(message: Message) -> None:
    """``/ws`` frames from a client: what the server's session makes of them, and round trips."""
    reply = ServerSession().receive(message)
    if isinstance(reply, ErrorFrame):
        _sendable(reply.serialize())
    if (frame := _parsed(parse_client_frame, message)) is not None:
        _reparses(parse_client_frame, frame)


def server_frame(message: Message) -> None:
    """Frames from a server (ours or OpenEnv's), as a client parses them."""
    if (frame := _parsed(parse_server_frame, message)) is None:
        return
    text = _reparses(parse_server_frame, frame)
    if isinstance(frame, RenderFrame):
        assert parse_server_frame(frame.serialize_binary()).serialize() == text


def batch_client_frame(message: Message) -> None:
    """``/ws/batch`` frames from a client."""
    reply = ServerSession(parse_batch_client_frame, step_types=(BatchStepFrame,)).receive(message)
    if isinstance(reply, ErrorFrame):
        _sendable(reply.serialize())
    if (frame := _parsed(parse_batch_client_frame, message)) is not None:
        _reparses(parse_batch_client_frame, frame)


def batch_server_frame(message: Message) -> None:
    """``/ws/batch`` frames from a server, JSON or packed."""
    if (frame := _parsed(parse_batch_server_frame, message)) is None:
        return
    if isinstance(frame, BatchResultFrame) and isinstance(message, bytes):
        return  # its observations became arrays: its JSON form is the server's to choose
    _reparses(parse_batch_server_frame, frame)


def vector_client_frame(message: Message) -> None:
    """Vector-session frames from a client, JSON or packed."""
    if (frame := _parsed(parse_vector_client_frame, message)) is not None:
        _reparses(parse_vector_client_frame, frame)


def vector_server_frame(message: Message) -> None:
    """Vector-session frames from a server, JSON or packed."""
    if (frame := _parsed(parse_vector_server_frame, message)) is not None:
        _reparses(parse_vector_server_frame, frame)


def batch_make(message: Message) -> None:
    """The ``batch_make`` frame of pickled factories (only base64-decoded: nothing is unpickled)."""
    size = message[-1] % 5 if isinstance(message, bytes) and message else len(message) % 5
    try:
        frame = pickled.parse_batch_make(message, size)
    except ProtocolError:
        return
    assert pickled.parse_batch_make(frame.serialize(), size) == frame


def batch_query_string(message: Message) -> None:
    """A batch session's query string."""
    query = message if isinstance(message, str) else message.decode("latin-1")
    try:
        pickled.wants_pickled_factories(query)
        parsed = parse_batch_query(query, 64)
    except ProtocolError:
        return
    assert parse_batch_query(batch_query(*parsed), 64) == parsed


def packed_arrays(message: Message) -> None:
    """Values holding arrays: packed binary messages, and their JSON form."""
    try:
        value = arrays.unpack(message) if isinstance(message, bytes) else arrays.from_json(message)
    except ProtocolError:
        return
    packed = arrays.pack(value)
    assert arrays.pack(arrays.unpack(packed)) == packed
    try:
        text = arrays.to_json(value)
    except TypeError:  # bytes items (S and V dtypes) travel packed only: JSON has no bytes
        assert b'"|S' in packed or b'"|V' in packed or b'"<V' in packed or b'">V' in packed or b'"=V' in packed
        return
    assert arrays.to_json(arrays.from_json(text)) == text


def json_rpc(message: Message) -> None:
    """MCP's JSON-RPC requests, tool actions in step frames, and tool calls as a model writes them."""
    data = _json_of(message)
    if isinstance(data, dict):
        request_id, request = jsonrpc.parse_request(data)
        assert request_id is None or isinstance(request_id, (str, int))
        if isinstance(request, jsonrpc.JsonRpcError):
            json.dumps(request.response(request_id))
        elif isinstance(request, tools.CallToolRequest) and request.timeout_s is not None:
            assert 0 < request.timeout_s < math.inf
        try:
            action = tools.parse_tool_action(data)
        except ProtocolError:
            pass
        else:
            if isinstance(action, tools.CallToolRequest):
                again = tools.parse_tool_action(tools.call_tool_action(action.name, action.arguments, action.timeout_s))
                assert again == action
    call: Any = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    for action in (call, data) if isinstance(data, dict) else (call,):
        try:
            name, arguments = tools.parse_tool_call(action)
        except ToolCallError:
            continue
        assert isinstance(name, str) and isinstance(arguments, dict)


def server_url(message: Message) -> None:
    """Server URLs: ``check_base_url`` raises ``ValueError``; the others take what it accepted."""
    url = message if isinstance(message, str) else message.decode("utf-8", "replace")
    try:
        checked = urls.check_base_url(url)
        ws = urls.ws_url(checked)
    except ValueError:
        return
    assert urls.ws_url(ws) == ws
    urls.http_url(checked, "/schema")
    urls.tcp_form(ws)
    urls.unix_socket_path(ws)


def startup_line(message: Message) -> None:
    """A starting server's report: what the process provider makes of a failure's JSON."""
    line = message if isinstance(message, str) else message.decode("utf-8", "replace")
    for prefix in (FAILED_PREFIX, READY_PREFIX):
        if line.startswith(prefix):
            line = line[len(prefix) :]
    error = _creation_error(line, "Target-v0", ["openenv-gym", "serve"])
    assert isinstance(error, Exception)
    str(error)


def space_description(message: Message) -> None:
    """``/schema``'s space descriptions, and their round trip."""
    data = _json_of(message)
    try:
        space = space_from_json(data)
    except SpaceCodecError:
        return
    text = json.dumps(space_to_json(space))
    assert json.dumps(space_to_json(space_from_json(json.loads(text)))) == text


def space_value(message: Message) -> None:
    """A value decoded for a space (``{"space": description, "value": wire form}``), and its round trip."""
    data = _json_of(message)
    if not isinstance(data, dict):
        return
    try:
        space = space_from_json(data.get("space"))
    except SpaceCodecError:
        return
    for decoder in (lambda v: decode(space, v), lambda v: from_wire(space, v, "action")):
        try:
            value = decoder(data.get("value"))
        except SpaceCodecError:
            continue
        text = json.dumps(encode(space, value))
        assert json.dumps(encode(space, decode(space, json.loads(text)))) == text


def json_schema(message: Message) -> None:
    """OpenEnv's pydantic JSON schemas mapped to spaces: ``map_schema`` never raises for a schema."""
    data = _json_of(message)
    if not isinstance(data, dict):
        return
    for role in ("action", "observation"):
        mapped = map_schema(data, role)
        for value in (data.get("example"), {}):
            try:
                mapped.from_wire(value)
            except SpaceCodecError:
                pass
    try:
        openenv_spaces(data)
    except (SpaceCodecError, UnsupportedSpaceError):
        pass


#: The parsers, by the index an input's first byte names. Append only: the corpus names them by index.
TARGETS: list[Callable[[Message], None]] = [
    client_frame,
    server_frame,
    batch_client_frame,
    batch_server_frame,
    vector_client_frame,
    vector_server_frame,
    batch_make,
    batch_query_string,
    packed_arrays,
    json_rpc,
    server_url,
    startup_line,
    space_description,
    space_value,
    json_schema,
]


def one_input(data: bytes) -> None:
    """libFuzzer's entry: the first byte picks the parser and the form, the rest is the message."""
    if not data:
        return
    index, binary = data[0] & 0x7F, bool(data[0] & 0x80)
    payload = data[1:]
    message: Message = payload
    if not binary:
        try:
            message = payload.decode("utf-8")  # a text frame is valid UTF-8, or websockets refuses it
        except UnicodeDecodeError:
            pass
    TARGETS[index % len(TARGETS)](message)
