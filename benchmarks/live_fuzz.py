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
import dataclasses
import json
import os
import random
import signal
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from openenv_gym.protocol import arrays
from openenv_gym.protocol.batch import BINARY_SUBPROTOCOL, BatchResetFrame, BatchStepFrame
from openenv_gym.protocol.frames import ResetFrame, StepFrame
from openenv_gym.providers.process import ProcessProvider

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks.live_fuzz_frames
from benchmarks.live_fuzz_frames import (
    BAD_QUERIES,
    Frame,
    Mutator,
    batch_seeds,
    coding_seeds,
    plain_seeds,
    tool_call,
    tool_seeds,
)

__all__ = ["KINDS", "FuzzReport", "Kind", "fuzz_kind", "main"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FRAME_BYTES = 64 * 1024  # small, so oversize frames are cheap to send
REPLY_TIMEOUT = 30.0  # a Coding step runs up to its wall time (2 s here) plus the sandbox's start-up
GOOD_CLOSES = {1000, 1007, 1008, 1009, 1013}  # normal, invalid UTF-8, policy (bad query), too big, capacity
# 1011 is websockets' close when a handler raised (bad), and the server's own, after a FACTORY_ERROR
# frame, when the session's env cannot be made (backend=envpool without EnvPool): told apart by reason.
FACTORY_FAILED = "environment factory failed"


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
        data = await ask(tool_call("add", {"a": a, "b": b}), "observation")
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
    "plain": Kind("plain", "CartPole-v1", ["/ws"], plain_seeds, "/ws", _cartpole_episode),
    "batch": Kind(
        "batch",
        "CartPole-v1",
        ["/ws/batch?envs=4&autoreset_mode=NextStep", "/ws/batch?envs=4&autoreset_mode=NextStep&backend=gymnasium"],
        batch_seeds,
        "/ws/batch?envs=4&autoreset_mode=NextStep",
        _batch_episode,
        max_sessions=256,
    ),
    "tool": Kind(
        "tool", "tests.tool_envs:ToolboxEnvironment", ["/ws"], tool_seeds, "/ws", _tool_episode, cwd=REPO_ROOT
    ),
    "coding": Kind(
        "coding",
        "openenv_gym.envs.coding:CodingEnvironment",
        ["/ws"],
        coding_seeds,
        "/ws",
        _coding_episode,
        env_kwargs={"limits": {"wall_time": 2}},
    ),
}


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
                path = "/ws/batch?" + rng.choice(BAD_QUERIES)
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
