"""The live fuzz's frames (``benchmarks/live_fuzz.py`` sends them): each kind's valid frames, made by our
encoders, and the :class:`Mutator` that makes the next frame to send from them."""

from __future__ import annotations

import base64
import functools
import json
import random
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from openenv_gym.protocol import arrays, tools
from openenv_gym.protocol.batch import BatchCallFrame, BatchResetFrame, BatchStepFrame
from openenv_gym.protocol.frames import CloseFrame, McpFrame, RenderRequest, ResetFrame, StateRequest, StepFrame
from openenv_gym.protocol.pickled import BatchMakeFrame
from openenv_gym.protocol.vector import VectorResetFrame, VectorStepFrame

__all__ = ["BAD_QUERIES", "Frame", "Mutator", "batch_seeds", "coding_seeds", "plain_seeds", "tool_call", "tool_seeds"]

Frame = str | bytes


# Valid frames ----------------------------------------------------------------------------------


def _mcp(method: str, params: dict[str, Any] | None = None) -> str:
    request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params is not None:
        request["params"] = params
    return McpFrame(request).serialize()


def plain_seeds(path: str) -> list[Frame]:
    return [
        ResetFrame().serialize(),
        ResetFrame({"seed": 3}).serialize(),
        StepFrame({"action": 0}).serialize(),
        StepFrame({"action": 1}).serialize(),
        StateRequest().serialize(),
        RenderRequest().serialize(),
        _mcp("tools/list"),
        CloseFrame().serialize(),
    ]


_VECTOR_ACTIONS = np.array([0, 1, 1, 0], dtype=np.int64)


def batch_seeds(path: str) -> list[Frame]:
    if "backend=" in path:
        step = VectorStepFrame(_VECTOR_ACTIONS)
        return [
            VectorResetFrame(7).serialize(),
            VectorResetFrame(None, None, [True, False, True, False]).serialize(),
            step.serialize(),
            step.serialize_binary(),
            RenderRequest().serialize(),
            CloseFrame().serialize(),
        ]
    return [
        BatchResetFrame([0, 1, 2, 3]).serialize(),
        BatchResetFrame(None, None, [True, False, False, True]).serialize(),
        BatchStepFrame([{"action": int(a)} for a in _VECTOR_ACTIONS]).serialize(),
        BatchCallFrame("get", "render_mode").serialize(),
        BatchCallFrame("set", "fuzzed", values=[1, 2, 3, 4]).serialize(),
        BatchMakeFrame([b"\x80\x05N."], "3.11").serialize(),  # refused: this server takes no pickles
        RenderRequest().serialize(),
        CloseFrame().serialize(),
    ]


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    return StepFrame(tools.call_tool_action(name, arguments)).serialize()


def tool_seeds(path: str) -> list[Frame]:
    return [
        ResetFrame().serialize(),
        StepFrame({"type": "list_tools"}).serialize(),
        tool_call("add", {"a": 2, "b": 3}),
        tool_call("distance", {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}, "scale": 2}),
        tool_call("submit", {"answer": 5}),
        tool_call("fail", {"why": "fuzzed"}),
        tool_call("nothing", {}),
        tool_call("opaque", {}),
        tool_call("get-weather", {"city": "Paris"}),
        _mcp("tools/list"),
        _mcp("tools/call", {"name": "add", "arguments": {"a": 1}}),
        StateRequest().serialize(),
        CloseFrame().serialize(),
    ]


_CODE = "def solve(numbers):\n    return sorted(numbers)\n\nprint(solve([3, 1, 2]))\n"


def coding_seeds(path: str) -> list[Frame]:
    return [
        ResetFrame({"seed": 1}).serialize(),
        StepFrame({"code": _CODE}).serialize(),
        StepFrame({"code": "print('hello')"}).serialize(),
        StateRequest().serialize(),
        _mcp("tools/list"),
        CloseFrame().serialize(),
    ]


# The well-behaved client -------------------------------------------------------------------------


# Mutations ---------------------------------------------------------------------------------------

_ODD_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, -(2**64), 10**400, 1e308, float("nan"), float("inf"), "", "x" * 300,
    "\ud800", [], [[[]]], {}, {"type": "step"}, 3.5, "reset", "$array", {"$array": {"dtype": "<f4"}},
]  # fmt: skip
BAD_QUERIES = [
    "envs=0", "envs=-1", "envs=100000", "envs=abc", "envs=2&autoreset_mode=Sometimes", "envs=2&backend=nope",
    "envs=2&render_mode=human", "envs=2&factories=pickled", "envs=2&autoreset_mode=%ff%fe", "", "envs=1e3",
]  # fmt: skip


class Mutator:
    """Makes the next frame to send from a kind's valid frames, by one mutation picked at random."""

    def __init__(self, rng: random.Random, max_frame_bytes: int) -> None:
        self.rng = rng
        self.max_frame_bytes = max_frame_bytes
        self.used: Counter[str] = Counter()

    def frame(self, seeds: list[Frame]) -> tuple[Frame, bool]:
        """A frame and whether it goes as a text frame (bytes as text: maybe invalid UTF-8)."""
        rng = self.rng
        seed = rng.choice(seeds)
        name, mutation = rng.choice(self._mutations)
        self.used[name] += 1
        return mutation(self, seed, seeds)

    def _valid(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:  # valid, in any order
        return seed, isinstance(seed, str)

    def _flip(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        data = bytearray(seed.encode() if isinstance(seed, str) else seed)
        for _ in range(self.rng.randint(1, 4)):
            data[self.rng.randrange(len(data))] ^= 1 << self.rng.randrange(8)
        return bytes(data), isinstance(seed, str)

    def _truncate(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        return seed[: self.rng.randrange(len(seed))], isinstance(seed, str)

    def _retype(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        if not isinstance(seed, str):
            return self._flip(seed, seeds)
        frame = json.loads(seed)
        paths = list(_paths(frame))
        path = self.rng.choice(paths)
        value = self.rng.choice(_ODD_VALUES)
        if not path:
            return json.dumps(value), True
        *parents, last = path
        node = frame
        for key in parents:
            node = node[key]
        node[last] = value
        return json.dumps(frame), True

    def _huge_number(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        digits = "9" * self.rng.choice([20, 400, 5000, 20000])
        return self._replace_leaf(seed, digits), True

    def _deep(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        depth = self.rng.choice([100, 1000, 5000, 20000])
        nested = self.rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
        return self._replace_leaf(seed, nested), True

    def _replace_leaf(self, seed: Frame, text: str) -> str:
        if not isinstance(seed, str) or '"data":' not in seed:
            return '{"type":"step","data":{"action":' + text + "}}"
        frame = json.loads(seed)
        marker = "\x00FUZZ\x00"
        frame["data"] = {**(frame.get("data") or {}), "fuzz": marker}
        return json.dumps(frame).replace(json.dumps(marker), text)

    def _invalid_utf8(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        data = bytearray(seed.encode() if isinstance(seed, str) else seed)
        bad = self.rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"])
        at = self.rng.randrange(len(data) + 1)
        return bytes(data[:at] + bad + data[at:]), True

    def _swap(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:  # text as binary, binary as text
        if isinstance(seed, str):
            return seed.encode(), False
        return seed, True

    def _oversize(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        padding = "x" * (self.max_frame_bytes + self.rng.randrange(1, 4096))
        return self._replace_leaf(seed, json.dumps(padding)), self.rng.random() < 0.8

    def _batch_counts(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        n = self.rng.choice([0, 1, 3, 5, 64, 1000])
        frame = self.rng.choice(
            [
                BatchStepFrame([{"action": self.rng.randrange(2)} for _ in range(n)]),
                BatchResetFrame([self.rng.randrange(10) for _ in range(n)]),
                BatchResetFrame(None, None, [self.rng.random() < 0.5 for _ in range(n)]),
                BatchCallFrame("set", "fuzzed", values=list(range(n))),
                VectorStepFrame(np.zeros(n, dtype=np.int64)),
                VectorResetFrame(None, None, [True] * n),
            ]
        )
        return frame.serialize(), True

    def _wrong_kind(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:  # another session's frames
        frame = self.rng.choice(_every_seed())
        return frame, isinstance(frame, str)

    def _surrogate(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        kind = self.rng.choice(['"\\ud800"', '"\\udfff\\ud800"', '"a\\ud83d"'])
        frame = self.rng.choice(['{"type":' + kind + "}", '{"type":"step","data":{' + kind + ":1}}"])
        return (self._replace_leaf(seed, kind) if self.rng.random() < 0.5 else frame), True

    def _random(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        size = self.rng.choice([0, 1, 8, 100, 2000])
        data = self.rng.randbytes(size)
        if self.rng.random() < 0.3:
            data = arrays.BINARY_MAGIC + data  # a packed message's magic, then garbage
        return data, self.rng.random() < 0.5

    def _packed(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        """A packed message whose header lies: dtypes, shapes, offsets, lengths."""
        dtype = self.rng.choice(["<f4", "<i8", "|O", ",f8", "<U100000000", "V9999999", "xx", "<M8[ns]"])
        shape = self.rng.choice([[4], [0], [-1], [2**40], [10**6, 10**6], "x"])
        described = {"dtype": dtype, "shape": shape, "offset": self.rng.choice([0, -8, 2**40, "0"])}
        if self.rng.random() < 0.5:
            described["data"] = [0, 1, 1, 0]
        actions = {"$array": described}
        frame = {"type": self.rng.choice(["vector_step", "batch_step", "step"]), "data": {"actions": actions}}
        header = json.dumps(frame).encode()
        if self.rng.random() < 0.5:
            return json.dumps(frame), True
        length = self.rng.choice([len(header), len(header) + 100, 2**32 - 1, 0])
        body = self.rng.randbytes(self.rng.choice([0, 8, 32]))
        return arrays.BINARY_MAGIC + length.to_bytes(4, "little") + header + body, False

    def _base64_garbage(self, seed: Frame, seeds: list[Frame]) -> tuple[Frame, bool]:
        blob = base64.b64encode(self.rng.randbytes(30)).decode()
        return self._replace_leaf(seed, json.dumps(blob[:-1] + "!")), True

    _mutations: ClassVar[list[tuple[str, Callable[..., tuple[Frame, bool]]]]] = [
        ("valid", _valid),
        ("valid", _valid),
        ("flip", _flip),
        ("flip", _flip),
        ("truncate", _truncate),
        ("retype", _retype),
        ("retype", _retype),
        ("huge_number", _huge_number),
        ("deep", _deep),
        ("invalid_utf8", _invalid_utf8),
        ("swap", _swap),
        ("oversize", _oversize),
        ("batch_counts", _batch_counts),
        ("wrong_kind", _wrong_kind),
        ("surrogate", _surrogate),
        ("random", _random),
        ("packed", _packed),
        ("base64", _base64_garbage),
    ]


@functools.cache
def _every_seed() -> list[Frame]:
    return plain_seeds("") + batch_seeds("") + batch_seeds("backend=") + tool_seeds("") + coding_seeds("")


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Any:
    """Every path into a JSON value (the root's is empty)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))
