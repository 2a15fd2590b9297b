"""Live fuzzing: random and mutated frames over many connections to real servers of each kind.

For each server kind (``plain`` CartPole on ``/ws``; ``batch`` CartPole on ``/ws/batch``, per-env
and Gymnasium's vector env; ``tool``, the test suite's toolbox of tools; ``coding``,
openenv/Coding-v0 with its bubblewrap sandbox) an ``openenv-gym serve`` process is started
(``ProcessProvider``) with a small ``--max-frame-bytes``, and K connections send it frames made
from valid ones our own encoders wrote, mutated: bytes flipped, cut short, values of the wrong
type, huge numbers, deep nesting, invalid UTF-8 in text frames, text sent as binary, frames
beyond the size limit, valid frames in the wrong order, batch frames with the wrong counts,
bad batch queries. Every frame gets one of:

* an error frame, or a valid reply (good);
* a clean close with a close code (good: the connection is opened again);
* nothing within ``reply_timeout`` (STUCK), a close with 1011 (the server's handler failed), or
  a connection dropped without a close frame (bad);
* the server process gone (CRASH).

Beside the fuzz one well-behaved client plays episodes with valid frames, and must never meet
an error. At the end the server must be alive, answer ``/health``, hold no session
(``/web/sessions``) and, once stopped, leave no process behind.

Run it (figures for docs/reliability.md; from the repository root)::

    .venv/bin/python benchmarks/live_fuzz.py --frames 100000 [--kinds plain,batch,tool,coding]

``tests/fuzz/test_live_fuzz.py`` runs a short version of each kind.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import functools
import json
import os
import random
import signal
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from openenv_gym.protocol import arrays, tools
from openenv_gym.protocol.batch import BINARY_SUBPROTOCOL, BatchCallFrame, BatchResetFrame, BatchStepFrame
from openenv_gym.protocol.frames import CloseFrame, McpFrame, RenderRequest, ResetFrame, StateRequest, StepFrame
from openenv_gym.protocol.pickled import BatchMakeFrame
from openenv_gym.protocol.vector import VectorResetFrame, VectorStepFrame
from openenv_gym.providers.process import ProcessProvider

__all__ = ["KINDS", "FuzzReport", "Kind", "fuzz_kind", "main"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FRAME_BYTES = 64 * 1024  # small, so oversize frames are cheap to send
REPLY_TIMEOUT = 30.0  # a Coding step runs up to its wall time (2 s here) plus the sandbox's start-up
GOOD_CLOSES = {1000, 1007, 1008, 1009, 1013}  # normal, invalid UTF-8, policy (bad query), too big, capacity
# 1011 is websockets' close when a handler raised (bad), and the server's own, after a FACTORY_ERROR
# frame, when the session's env cannot be made (backend=envpool without EnvPool): told apart by reason.
FACTORY_FAILED = "environment factory failed"


Frame = str | bytes
Ask = Callable[[Frame, str], Any]  # sends a frame, awaits the reply of the type named; returns its data


@dataclasses.dataclass
class Kind:
    """One kind of server, and the valid frames its sessions speak."""

    name: str
    target: str
    paths: list[str]  # the session URLs' paths and queries; a connection picks one
    seeds: Callable[[str], list[Frame]]  # valid frames (our encoders') for a path
    good_path: str
    good_episode: Callable[[Ask, random.Random], Any]  # plays one episode (a coroutine); returns its steps
    env_kwargs: dict[str, Any] | None = None
    max_sessions: int = 64
    cwd: str | None = None


# Valid frames ----------------------------------------------------------------------------------


def _mcp(method: str, params: dict[str, Any] | None = None) -> str:
    request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params is not None:
        request["params"] = params
    return McpFrame(request).serialize()


def _plain_seeds(path: str) -> list[Frame]:
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


def _batch_seeds(path: str) -> list[Frame]:
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


def _tool_call(name: str, arguments: dict[str, Any]) -> str:
    return StepFrame(tools.call_tool_action(name, arguments)).serialize()


def _tool_seeds(path: str) -> list[Frame]:
    return [
        ResetFrame().serialize(),
        StepFrame({"type": "list_tools"}).serialize(),
        _tool_call("add", {"a": 2, "b": 3}),
        _tool_call("distance", {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}, "scale": 2}),
        _tool_call("submit", {"answer": 5}),
        _tool_call("fail", {"why": "fuzzed"}),
        _tool_call("nothing", {}),
        _tool_call("opaque", {}),
        _tool_call("get-weather", {"city": "Paris"}),
        _mcp("tools/list"),
        _mcp("tools/call", {"name": "add", "arguments": {"a": 1}}),
        StateRequest().serialize(),
        CloseFrame().serialize(),
    ]


_CODE = "def solve(numbers):\n    return sorted(numbers)\n\nprint(solve([3, 1, 2]))\n"


def _coding_seeds(path: str) -> list[Frame]:
    return [
        ResetFrame({"seed": 1}).serialize(),
        StepFrame({"code": _CODE}).serialize(),
        StepFrame({"code": "print('hello')"}).serialize(),
        StateRequest().serialize(),
        _mcp("tools/list"),
        CloseFrame().serialize(),
    ]


# The well-behaved client -------------------------------------------------------------------------


class GoodClientError(AssertionError):
    """The well-behaved client met an error frame, a close or a reply it did not expect."""


async def _ask(ws: ClientConnection, frame: Frame, expected: str) -> dict[str, Any]:
    await ws.send(frame)
    reply = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
    message = arrays.unpack(reply) if isinstance(reply, bytes) else json.loads(reply)
    if not isinstance(message, dict) or message.get("type") != expected:
        raise GoodClientError(f"expected {expected}, got {str(message)[:300]}")
    data: dict[str, Any] = message["data"]
    return data


async def _cartpole_episode(ask: Ask, rng: random.Random) -> int:
    await ask(ResetFrame({"seed": rng.randrange(2**31)}).serialize(), "observation")
    for step in range(1, 501):
        data = await ask(StepFrame({"action": rng.randrange(2)}).serialize(), "observation")
        if data["done"] or data.get("truncated"):
            return step
    return 500


async def _batch_episode(ask: Ask, rng: random.Random) -> int:
    await ask(BatchResetFrame([rng.randrange(2**31) for _ in range(4)]).serialize(), "batch_result")
    for _ in range(100):  # autoreset (NextStep) keeps the sub-envs going
        actions = [{"action": rng.randrange(2)} for _ in range(4)]
        data = await ask(BatchStepFrame(actions).serialize(), "batch_result")
        if len(data["rewards"]) != 4:
            raise GoodClientError(f"a batch result of {len(data['rewards'])} sub-envs, not 4")
    return 100


async def _tool_episode(ask: Ask, rng: random.Random) -> int:
    await ask(ResetFrame().serialize(), "observation")
    for _ in range(50):
        a, b = rng.randrange(1000), rng.randrange(1000)
        data = await ask(_tool_call("add", {"a": a, "b": b}), "observation")
        result = data["observation"].get("result") or {}
        if result.get("data") != a + b:
            raise GoodClientError(f"add({a}, {b}) gave {str(data)[:300]}")
    return 50


async def _coding_episode(ask: Ask, rng: random.Random) -> int:
    await ask(ResetFrame({"seed": rng.randrange(2**31)}).serialize(), "observation")
    for step in range(1, 9):
        value = rng.randrange(1000)
        data = await ask(StepFrame({"code": f"print({value})"}).serialize(), "observation")
        if data["observation"].get("stdout") != f"{value}\n":
            raise GoodClientError(f"print({value}) gave {str(data)[:300]}")
        if data["done"] or data.get("truncated"):
            return step
    return 8


KINDS: dict[str, Kind] = {
    "plain": Kind("plain", "CartPole-v1", ["/ws"], _plain_seeds, "/ws", _cartpole_episode),
    "batch": Kind(
        "batch",
        "CartPole-v1",
        ["/ws/batch?envs=4&autoreset_mode=NextStep", "/ws/batch?envs=4&autoreset_mode=NextStep&backend=gymnasium"],
        _batch_seeds,
        "/ws/batch?envs=4&autoreset_mode=NextStep",
        _batch_episode,
        max_sessions=256,
    ),
    "tool": Kind(
        "tool", "tests.tool_envs:ToolboxEnvironment", ["/ws"], _tool_seeds, "/ws", _tool_episode, cwd=REPO_ROOT
    ),
    "coding": Kind(
        "coding",
        "openenv_gym.envs.coding:CodingEnvironment",
        ["/ws"],
        _coding_seeds,
        "/ws",
        _coding_episode,
        env_kwargs={"limits": {"wall_time": 2}},
    ),
}


# Mutations ---------------------------------------------------------------------------------------

_ODD_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, -(2**64), 10**400, 1e308, float("nan"), float("inf"), "", "x" * 300,
    "\ud800", [], [[[]]], {}, {"type": "step"}, 3.5, "reset", "$array", {"$array": {"dtype": "<f4"}},
]  # fmt: skip
_BAD_QUERIES = [
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
    return _plain_seeds("") + _batch_seeds("") + _batch_seeds("backend=") + _tool_seeds("") + _coding_seeds("")


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Any:
    """Every path into a JSON value (the root's is empty)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


# The run -------------------------------------------------------------------------------------------


@dataclasses.dataclass
class FuzzReport:
    """What one kind's run counted."""

    kind: str
    frames: int = 0
    error_frames: int = 0
    replies: int = 0
    closes: Counter[int] = dataclasses.field(default_factory=Counter)
    bad_closes: list[str] = dataclasses.field(default_factory=list)
    stuck: int = 0
    crashes: int = 0
    refused_handshakes: int = 0
    connections: int = 0
    good_steps: int = 0
    good_episodes: int = 0
    good_errors: list[str] = dataclasses.field(default_factory=list)
    good_max_gap_s: float = 0.0
    seconds: float = 0.0
    sessions_left: int = -1
    processes_left: int = -1
    health_after: bool = False
    mutations: Counter[str] = dataclasses.field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        """No crash, nothing stuck, no bad close, a good client that stepped without errors, and
        a server healthy, empty and cleaned up after."""
        return (
            self.crashes == 0
            and self.stuck == 0
            and not self.bad_closes
            and not self.good_errors
            and self.good_steps > 0
            and self.health_after
            and self.sessions_left == 0
            and self.processes_left == 0
        )

    def row(self) -> str:
        closes = sum(self.closes.values())
        return (
            f"{self.kind:<7} {self.frames:>8} {self.error_frames:>8} {self.replies:>8} {closes:>7} "
            f"{len(self.bad_closes):>5} {self.stuck:>6} {self.crashes:>7} {self.good_steps:>7} "
            f"{self.good_max_gap_s:>8.2f} {self.frames / max(self.seconds, 1e-9):>8.0f} {self.seconds:>7.1f}"
        )


HEADER = (
    f"{'kind':<7} {'frames':>8} {'errors':>8} {'replies':>8} {'closes':>7} {'bad':>5} {'stuck':>6} "
    f"{'crashes':>7} {'good':>7} {'max gap':>8} {'frames/s':>8} {'seconds':>7}"
)


class _FuzzedServer(ProcessProvider):
    """``openenv-gym serve`` with a small frame limit, so oversize frames are cheap to send."""

    def __init__(self, target: str, *, max_frame_bytes: int, **options: Any) -> None:
        super().__init__(target, **options)
        self.max_frame_bytes = max_frame_bytes

    def command(self, ready_fd: int) -> list[str]:
        return [*super().command(ready_fd), "--max-frame-bytes", str(self.max_frame_bytes)]


def _get_json(url: str, timeout: float = 5.0) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    with opener.open(url, timeout=timeout) as reply:
        return json.loads(reply.read())


def _tree(pid: int) -> list[int]:
    """``pid``'s descendants (not itself), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, ()))
    return found


class _Run:
    def __init__(self, kind: Kind, url: str, frames: int, connections: int, seed: int, server: ProcessProvider) -> None:
        self.kind = kind
        self.ws_base = url.replace("http://", "ws://", 1)
        self.budget = frames
        self.connections = connections
        self.server = server
        self.report = FuzzReport(kind.name)
        self.mutator = Mutator(random.Random(seed), MAX_FRAME_BYTES)
        self.rng = random.Random(seed + 1)
        self.done = asyncio.Event()

    def _crashed(self) -> bool:
        if not self.server.is_alive():
            self.report.crashes += 1
            self.done.set()
            return True
        return False

    async def fuzzer(self) -> None:
        rng = self.rng
        while self.report.frames < self.budget and not self.done.is_set():
            path = rng.choice(self.kind.paths)
            if self.kind.name == "batch" and rng.random() < 0.05:
                path = "/ws/batch?" + rng.choice(_BAD_QUERIES)
            subprotocols = [BINARY_SUBPROTOCOL] if rng.random() < 0.3 else None
            try:
                ws = await asyncio.wait_for(
                    connect(self.ws_base + path, subprotocols=subprotocols, max_size=None, open_timeout=None),  # type: ignore[arg-type]
                    REPLY_TIMEOUT,
                )
            except InvalidStatus:
                self.report.refused_handshakes += 1
                continue
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                if self._crashed():
                    return
                self.report.stuck += 1
                self.report.bad_closes.append(f"handshake to {path} failed: {exc!r}")
                continue
            self.report.connections += 1
            try:
                await self._session(ws, self.kind.seeds(path), rng.randint(1, 60))
            finally:
                await ws.close()

    async def _session(self, ws: ClientConnection, seeds: list[Frame], length: int) -> None:
        if self.rng.random() < 0.7:  # usually begin the episode, so the frames after reach its steps
            length = max(length, 1)
            await self._one(ws, seeds[0], isinstance(seeds[0], str))
        for _ in range(length):
            if self.report.frames >= self.budget or self.done.is_set():
                return
            frame, as_text = self.mutator.frame(seeds)
            if not await self._one(ws, frame, as_text):
                return

    async def _one(self, ws: ClientConnection, frame: Frame, as_text: bool) -> bool:
        """Send one frame and classify what comes back; False once the connection is over."""
        self.report.frames += 1
        try:
            await ws.send(frame, text=as_text)
            reply = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
        except TimeoutError:
            if not self._crashed():
                self.report.stuck += 1
                self.report.bad_closes.append(f"no reply within {REPLY_TIMEOUT:g} s to {str(frame)[:200]!r}")
            return False
        except ConnectionClosed as exc:
            if self._crashed():
                return False
            received = exc.rcvd
            if received is None:
                self.report.bad_closes.append(f"dropped without a close frame after {str(frame)[:200]!r}")
            elif received.code not in GOOD_CLOSES and received.reason != FACTORY_FAILED:
                self.report.bad_closes.append(f"close {received.code} {received.reason!r} after {str(frame)[:200]!r}")
            else:
                self.report.closes[received.code] += 1
            return False
        if isinstance(reply, str) and reply.startswith('{"type":"error"'):
            self.report.error_frames += 1
        else:
            self.report.replies += 1
        return True

    async def good_client(self) -> None:
        rng = random.Random(7)
        try:
            async with connect(self.ws_base + self.kind.good_path, max_size=None) as ws:
                last = time.perf_counter()

                async def ask(frame: Frame, expected: str) -> dict[str, Any]:
                    nonlocal last
                    data = await _ask(ws, frame, expected)
                    now = time.perf_counter()
                    self.report.good_max_gap_s = max(self.report.good_max_gap_s, now - last)
                    last = now
                    return data

                while not self.done.is_set():
                    self.report.good_steps += await self.kind.good_episode(ask, rng)
                    self.report.good_episodes += 1
        except Exception as exc:
            if not self._crashed():
                self.report.good_errors.append(f"{type(exc).__name__}: {exc}")
            self.done.set()

    async def run(self) -> FuzzReport:
        started = time.perf_counter()
        good = asyncio.create_task(self.good_client())
        await asyncio.gather(*(self.fuzzer() for _ in range(self.connections)))
        self.done.set()
        await asyncio.wait_for(good, REPLY_TIMEOUT * 2)
        self.report.seconds = time.perf_counter() - started
        self.report.mutations = self.mutator.used
        return self.report


def fuzz_kind(kind: Kind | str, frames: int, connections: int = 8, seed: int = 0) -> FuzzReport:
    """Start a server of ``kind``, fuzz it with ``frames`` frames over ``connections`` concurrent
    connections beside one well-behaved client, check it after, stop it; the report says what
    happened (:attr:`FuzzReport.ok`)."""
    kind = KINDS[kind] if isinstance(kind, str) else kind
    server = _FuzzedServer(
        kind.target,
        max_frame_bytes=MAX_FRAME_BYTES,
        env_kwargs=kind.env_kwargs,
        max_sessions=kind.max_sessions,
        idle_timeout=60.0,
        cwd=kind.cwd,
        startup_timeout=120.0,
    )
    url = server.start()
    pid = server.pid
    assert pid is not None
    try:
        report = asyncio.run(_Run(kind, url, frames, connections, seed, server).run())
        if server.is_alive():
            report.health_after = _get_json(url + "/health").get("status") == "healthy"
            deadline = time.monotonic() + 30.0
            while True:  # the sessions close their envs (sandboxes included) in their own time
                report.sessions_left = len(_get_json(url + "/web/sessions")["sessions"])
                report.processes_left = len(_tree(pid))
                if (report.sessions_left == 0 and report.processes_left == 0) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
    finally:
        server.stop()
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:  # the server's process group: nothing of it may outlive it
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        report.processes_left = max(report.processes_left, 1)
        os.killpg(pid, signal.SIGKILL)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000, help="frames per server kind")
    parser.add_argument("--connections", type=int, default=8, help="concurrent fuzz connections")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    reports = []
    print(HEADER, flush=True)
    for name in args.kinds.split(","):
        report = fuzz_kind(name, args.frames, args.connections, args.seed)
        reports.append(report)
        print(report.row(), flush=True)
    for report in reports:
        closes = ", ".join(f"{code}: {count}" for code, count in sorted(report.closes.items()))
        print(
            f"\n{report.kind}: {'ok' if report.ok else 'NOT ok'}; {report.connections} connections, "
            f"{report.refused_handshakes} handshakes refused; clean closes by code {{{closes}}}; "
            f"good client {report.good_steps} steps in {report.good_episodes} episodes; after: health "
            f"{report.health_after}, sessions {report.sessions_left}, processes {report.processes_left}"
        )
        print("  mutations: " + ", ".join(f"{name} {count}" for name, count in sorted(report.mutations.items())))
        for problem in (report.bad_closes + report.good_errors)[:20]:
            print(f"  BAD: {problem}")
    sys.exit(0 if all(report.ok for report in reports) else 1)


if __name__ == "__main__":
    main()
