"""Write the atheris target's seed corpus (``tests/fuzz/corpus``) from our own encoders.

Each file is one input of :mod:`tests.fuzz.atheris_target`: a byte naming the parser (bit 7
for a binary frame), then a message our own code wrote: the frames a client and a server send,
packed arrays, space descriptions and values, JSON schemas of real models, URLs and start-up
reports; plus the frames quoted in OpenEnv's wire reference when it is on this machine
(``--reference DIR``, default ``/work/shared/reference``). Run from the repository root::

    .venv/bin/python -m tests.fuzz.make_corpus

It replaces the folder's contents, so the corpus is always what this script makes.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from openenv_gym import urls
from openenv_gym.envs.coding.environment import CodeAction, CodeObservation, TaskObservation
from openenv_gym.envs.echo.environment import EchoAction, EchoEnvironment, EchoObservation
from openenv_gym.protocol import arrays, jsonrpc, pickled, tools
from openenv_gym.protocol.batch import (
    AutoresetMode,
    BatchCallFrame,
    BatchResetFrame,
    BatchResultFrame,
    BatchStepFrame,
    BatchValuesFrame,
    batch_query,
)
from openenv_gym.protocol.codes import ErrorCode
from openenv_gym.protocol.frames import (
    CloseFrame,
    ErrorFrame,
    McpFrame,
    ObservationFrame,
    RenderFrame,
    RenderRequest,
    ResetFrame,
    StateFrame,
    StateRequest,
    StepFrame,
)
from openenv_gym.protocol.snapshot import ReleaseRequest, RestoreRequest, SnapshotFrame, SnapshotRequest
from openenv_gym.protocol.vector import VectorResetFrame, VectorResultFrame, VectorStepFrame
from openenv_gym.spaces import encode, space_to_json, to_wire
from openenv_gym.startup import FAILED_PREFIX, READY_PREFIX

from .wire_properties import TARGETS

CORPUS = pathlib.Path(__file__).with_name("corpus")
REFERENCE = pathlib.Path("/work/shared/reference")
_INDEX = {target.__name__: index for index, target in enumerate(TARGETS)}
_CLIENT_TYPES = {"reset", "step", "state", "render", "close", "mcp"}


def _spaces() -> list[spaces.Space]:
    cartpole = gym.make("CartPole-v1")
    box = spaces.Box(-1.0, 1.0, (2, 3), np.float32)
    found = [
        cartpole.observation_space,
        cartpole.action_space,
        gym.make("Pendulum-v1").action_space,
        spaces.Discrete(5, start=-2),
        spaces.MultiDiscrete([3, 4], start=[1, 0]),
        spaces.MultiBinary([2, 2]),
        spaces.Text(8, min_length=1, charset="abc"),
        spaces.Box(0, 255, (4, 4, 3), np.uint8),
        spaces.Dict({"position": box, "mode": spaces.Discrete(3), "name": spaces.Text(4)}),
        spaces.Tuple([spaces.Discrete(2), spaces.Tuple([box, spaces.MultiBinary(3)])]),
    ]
    cartpole.close()
    return found


def _tool_calls() -> Iterator[dict]:
    yield tools.call_tool_action("echo_message", {"message": "hi"})
    yield tools.call_tool_action("run_python", {"code": "print(1)"}, timeout_s=5.0)
    yield {"type": "list_tools"}


def seeds() -> Iterator[tuple[str, str | bytes]]:
    """``(parser name, message)`` pairs; a ``bytes`` message is sent as a binary frame."""
    request = {"jsonrpc": "2.0", "method": "tools/call", "id": 7, "params": {"name": "echo_message", "arguments": {}}}
    # Client frames on /ws.
    for frame in (
        ResetFrame({"seed": 42, "episode_id": "ep1"}),
        ResetFrame(),
        StepFrame({"action": 1}),
        StepFrame({"message": "hi"}),
        StepFrame({"code": "print('hello')"}),
        StateRequest(),
        RenderRequest(),
        CloseFrame(),
        McpFrame(request),
        McpFrame({"jsonrpc": "2.0", "method": "tools/list", "id": 1}),
        *(StepFrame(call) for call in _tool_calls()),
        SnapshotRequest(portable=True),
        RestoreRequest(id="9f2c"),
        RestoreRequest(portable=b"OGS1sealed-state"),
        ReleaseRequest(("9f2c", "a1")),
    ):
        yield "client_frame", frame.serialize()
    # Server frames.
    cartpole_obs = {"observation": [0.01, -0.02, 0.03, 0.04]}
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    result = tools.call_tool_result({"sum": 5})
    for server_frame in (
        ObservationFrame(cartpole_obs, 1.0, False, False, {"episode": {"r": 1.0}}),
        ObservationFrame({"stdout": "hello\n", "stderr": "", "exit_code": 0}, 0.1, True, False, {}, {"task": "t"}),
        ObservationFrame(tools.call_tool_observation("add", result), None),
        StateFrame({"episode_id": "ep", "step_count": 3}),
        ErrorFrame(ErrorCode.VALIDATION_ERROR, "invalid action", {"errors": [{"type": "int_parsing", "loc": ["a"]}]}),
        ErrorFrame(ErrorCode.CAPACITY_REACHED, "Server at capacity", {"active_sessions": 1, "max_sessions": 1}),
        McpFrame(jsonrpc.call_response(7, result, None)),
        McpFrame(jsonrpc.error_response(8, jsonrpc.JsonRpcCode.INVALID_PARAMS, "bad")),
        RenderFrame(image),
        RenderFrame("ansi\ntext"),
        RenderFrame(None),
        SnapshotFrame(id="9f2c", size=1234, portable=b"OGS1sealed-state", held=1, held_bytes=1234),
        SnapshotFrame(released=("9f2c",)),
    ):
        yield "server_frame", server_frame.serialize()
    yield "server_frame", RenderFrame(image).serialize_binary()
    yield "server_frame", RenderFrame([image, image]).serialize_binary()
    # Batch frames.
    for batch_frame in (
        BatchResetFrame([0, 1, None], {"low": 0}, None),
        BatchResetFrame(None, None, [True, False, True]),
        BatchStepFrame([{"action": 0}, {"action": 1}]),
        BatchCallFrame("get", "spec"),
        BatchCallFrame("set", "gravity", values=[9.8, 1.6]),
        BatchCallFrame("call", "render", [1], {"mode": "x"}),
        RenderRequest(),
        CloseFrame(),
    ):
        yield "batch_client_frame", batch_frame.serialize()
    step = BatchResultFrame(
        [cartpole_obs, cartpole_obs], [{}, {"k": 1}], [1.0, 0.0], [False, True], [False, False],
        {1: {"observation": cartpole_obs, "info": {}}},
    )  # fmt: skip
    reset = BatchResultFrame([cartpole_obs], [{}])
    yield "batch_server_frame", step.serialize()
    yield "batch_server_frame", reset.serialize()
    yield "batch_server_frame", step.serialize_binary(np.dtype(np.float32))
    yield "batch_server_frame", BatchValuesFrame([1, "x", None]).serialize()
    yield "batch_server_frame", ErrorFrame(ErrorCode.SESSION_ERROR, "step before reset").serialize()
    # Vector frames.
    actions = np.array([0, 1, 1], dtype=np.int64)
    observations = np.zeros((3, 4), dtype=np.float32)
    infos = {"episode": {"r": np.zeros(3)}, "_episode": np.array([True, False, False])}
    for vector_frame in (VectorStepFrame(actions), VectorStepFrame({"a": actions, "b": observations})):
        yield "vector_client_frame", vector_frame.serialize()
        yield "vector_client_frame", vector_frame.serialize_binary()
    yield "vector_client_frame", VectorResetFrame(7, {"x": 1}, [True, False, True]).serialize()
    flags = np.zeros(3, dtype=bool)
    vector_result = VectorResultFrame(observations, infos, np.ones(3), flags, flags)
    yield "vector_server_frame", vector_result.serialize()
    yield "vector_server_frame", vector_result.serialize_binary()
    yield "vector_server_frame", VectorResultFrame(observations, {}).serialize()
    # Pickled factories (base64 text: nothing here is ever unpickled).
    yield "batch_make", pickled.BatchMakeFrame([b"\x80\x05N.", b"\x80\x05K\x01."], "3.11", 2).serialize()
    # Batch queries.
    yield "batch_query_string", batch_query(4, AutoresetMode.NEXT_STEP)
    yield "batch_query_string", batch_query(2, AutoresetMode.SAME_STEP, "gymnasium", "rgb_array")
    yield "batch_query_string", pickled.pickled_batch_query(3, AutoresetMode.DISABLED)
    # Packed arrays, binary and JSON.
    value = {"a": observations, "b": [np.float64(1.5), np.arange(3, dtype=">i2")], "c": {"d": "text", "e": None}}
    yield "packed_arrays", arrays.pack(value)
    yield "packed_arrays", arrays.pack(value, reuse_headers=False)
    yield "packed_arrays", arrays.to_json(value)
    # JSON-RPC, tool actions, tool calls as a model writes them.
    yield "json_rpc", json.dumps(request)
    yield "json_rpc", json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": "a"})
    for call in _tool_calls():
        yield "json_rpc", json.dumps(call)
    yield "json_rpc", 'Let me add. <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    yield "json_rpc", json.dumps({"function": {"name": "add", "arguments": json.dumps({"a": 1})}})
    # URLs.
    for url in ("http://127.0.0.1:8000", "ws://[::1]:9000/ws", urls.unix_url("/tmp/s.sock"), "https://host/base/"):
        yield "server_url", url
    # Start-up reports.
    failure = ErrorFrame(ErrorCode.FACTORY_ERROR, "ValueError: no such env", {"factory_name": "make"})
    yield "startup_line", FAILED_PREFIX + json.dumps(failure.data())
    yield "startup_line", READY_PREFIX + "http://127.0.0.1:8000 (WebSocket ws://127.0.0.1:8000/ws)"
    # Spaces: descriptions, and values with their space.
    for index, space in enumerate(_spaces()):
        yield "space_description", json.dumps(space_to_json(space))
        space.seed(index)
        sample = space.sample()
        yield "space_value", json.dumps({"space": space_to_json(space), "value": encode(space, sample)})
        yield "space_value", json.dumps({"space": space_to_json(space), "value": to_wire(space, sample, "action")})
    # JSON schemas of real models (what an OpenEnv server's /schema holds).
    for schema in (
        EchoAction.model_json_schema(),
        EchoObservation.model_json_schema(),
        CodeAction.model_json_schema(),
        CodeObservation.model_json_schema(),
        TaskObservation.model_json_schema(),
    ):
        yield "json_schema", json.dumps(schema)
    yield "json_schema", json.dumps(EchoEnvironment().schema())


def reference_frames(folder: pathlib.Path) -> Iterator[tuple[str, str]]:
    """The complete frames quoted in the wire reference's Markdown, each to the parser of its side."""
    for path in sorted(folder.glob("*.md")):
        for line in path.read_text().splitlines():
            text = line.strip().removeprefix("->").removeprefix("<-").split("  #")[0].strip()
            try:
                frame = json.loads(text)
            except ValueError:
                continue
            if isinstance(frame, dict) and isinstance(frame.get("type"), str):
                yield ("client_frame" if frame["type"] in _CLIENT_TYPES and "->" in line[:3] else "server_frame"), text


def write_corpus(folder: pathlib.Path, reference: pathlib.Path | None) -> int:
    """Replace ``folder``'s files by the seeds; returns how many were written."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    found = list(seeds())
    if reference is not None and reference.is_dir():
        found += list(reference_frames(reference))
    counts: dict[str, int] = {}
    for name, message in found:
        binary = isinstance(message, bytes)
        payload = message if isinstance(message, bytes) else message.encode("utf-8")
        counts[name] = counts.get(name, 0) + 1
        selector = _INDEX[name] | (0x80 if binary else 0)
        (folder / f"{name}-{counts[name]:02d}").write_bytes(bytes([selector]) + payload)
    return len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=CORPUS)
    parser.add_argument("--reference", type=pathlib.Path, default=REFERENCE)
    args = parser.parse_args()
    count = write_corpus(args.out, args.reference)
    print(f"wrote {count} seeds to {os.path.relpath(args.out)}")


if __name__ == "__main__":
    main()
