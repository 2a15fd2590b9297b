"""Connection-abuse benchmark: how fast the server's capacity comes back, what abuse costs it, and
how much a well-behaved client is slowed.

One ``openenv-gym serve`` process (``tests.testing_env:BlobEnvironment``: replies as big as
asked) with a short idle and handshake timeout; everything is measured in the same run:

* capacity back: 1,000 half-open connections (half send nothing, half part of a request) and
  1,000 WebSocket handshakes that go silent (64 hold sessions, the rest are refused with
  ``CAPACITY_REACHED``); the time from the last handshake until ``/web/sessions`` is empty and a
  new client gets a session, against the idle timeout; then until the server's file descriptors
  are back to where they started; twice, so the second flood shows whether memory grows from
  one flood to the next;
* the server's RSS and open file descriptors before, at the peak of the flood, and after;
* a good client's steps/s alone, beside 50 sessions that never read their (60 kB) replies, and
  during a flood of handshakes past the session limit run by a second process; each against a
  clean reference server measured in interleaved rounds (a loaded machine drifts alike for
  both): the ratios are printed, never asserted. The flood's own CPU counts: on a 2-core machine
  it competes with both servers and the client.

Run from the repository root::

    .venv/bin/python benchmarks/connection_abuse.py            # full run
    .venv/bin/python benchmarks/connection_abuse.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request

from servers import REPO_ROOT, Server, start_ours, stop_all, stop_all_on_sigterm

sys.path.insert(0, REPO_ROOT)  # the raw clients live with the tests
from tests.abuse_clients import RawSession, half_open, raise_open_file_limit

TARGET = "tests.testing_env:BlobEnvironment"
MAX_SESSIONS = 64
BIG_STEP = {"type": "step", "data": {"size": 60000}}
SMALL_STEP = {"type": "step", "data": {"size": 16}}


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def sessions_listed(url: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url + "/web/sessions", timeout=10) as reply:
        return len(json.loads(reply.read())["sessions"])


async def listed(url: str) -> int:
    return await asyncio.to_thread(sessions_listed, url)


async def good_session(port: int) -> RawSession:
    """A session, reset, that :func:`steps_per_s` steps."""
    session = await RawSession.open(port)
    session.queue({"type": "reset"})
    session.write_some()
    reply = await session.next_json(30)
    if reply["type"] != "observation":
        session.close()
        raise RuntimeError(f"a good client's reset failed: {reply}")
    return session


async def steps_per_s(session: RawSession, steps: int) -> float:
    """A session's steps/s: one reply read before the next step is sent."""
    began = time.perf_counter()
    for _ in range(steps):
        session.queue(SMALL_STEP)
        if not session.write_some():
            raise RuntimeError("a good client's step did not fit in its socket")
        reply = await session.next_json(30)
        if reply["type"] != "observation":
            raise RuntimeError(f"a good client's step failed: {reply}")
    return steps / (time.perf_counter() - began)


async def good_client(port: int, steps: int) -> float:
    """A new session's steps/s."""
    session = await good_session(port)
    try:
        return await steps_per_s(session, steps)
    finally:
        session.close()


async def capacity_back(server: Server, pid: int, port: int, count: int, idle: float) -> None:
    before = (rss_mib(pid), fds(pid))
    socks: list[object] = []
    try:
        began = time.perf_counter()
        for index in range(count):
            socks.append(await half_open(port, partial=index % 2 == 1))
        peak_rss, peak_fds = rss_mib(pid), fds(pid)
        for _ in range(count):
            socks.append(await RawSession.open(port))
        flood_s = time.perf_counter() - began
        peak_rss, peak_fds = max(peak_rss, rss_mib(pid)), max(peak_fds, fds(pid))
        over = time.perf_counter()
        while await listed(server.url) > 0:
            if time.perf_counter() - over > 60:
                raise RuntimeError("capacity did not come back within 60 s")
            await asyncio.sleep(0.02)
        back_s = time.perf_counter() - over
        await good_client(port, 1)
        gets_session_s = time.perf_counter() - over
        while fds(pid) > before[1] + 2:
            if time.perf_counter() - over > 120:
                break
            await asyncio.sleep(0.1)
        drained_s = time.perf_counter() - over
        after = (rss_mib(pid), fds(pid))
    finally:
        for sock in socks:
            sock.close()  # type: ignore[attr-defined]
    print(f"  {count} half-open + {count} silent handshakes in {flood_s:.1f} s ({MAX_SESSIONS} sessions)")
    print(
        f"  capacity back {back_s:.2f} s after the last handshake (idle timeout {idle:g} s: "
        f"ratio {back_s / idle:.2f}); a new client served {gets_session_s:.2f} s after; "
        f"fds back {drained_s:.1f} s after"
    )
    print(
        f"  server RSS {before[0]:.1f} -> peak {peak_rss:.1f} -> {after[0]:.1f} MiB; "
        f"fds {before[1]} -> peak {peak_fds} -> {after[1]}; "
        f"~{(peak_rss - before[0]) * 1024 / (2 * count):.1f} KiB per abusive connection at the peak"
    )


async def non_readers(port: int, count: int) -> list[RawSession]:
    sessions = []
    for _ in range(count):
        session = await RawSession.open(port, receive_buffer=4096)
        sessions.append(session)
        await session.fill_without_reading(BIG_STEP)
    await asyncio.sleep(1.0)  # let the server write what it can and get stuck
    return sessions


def flood_worker(port: int, seconds: float) -> None:
    """Open handshakes past the session limit and close them, in a loop, for ``seconds``."""

    async def run() -> int:
        opened = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            batch = await asyncio.gather(*(RawSession.open(port) for _ in range(50)), return_exceptions=True)
            for session in batch:
                if isinstance(session, RawSession):
                    opened += 1
                    session.close()
        return opened

    print(asyncio.run(run()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer connections and steps")
    parser.add_argument("--flood-worker", nargs=2, type=float, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood_worker:
        flood_worker(int(args.flood_worker[0]), args.flood_worker[1])
        return
    count, steps, rounds = (200, 300, 3) if args.quick else (1000, 2000, 5)
    idle = 1.0
    print(
        f"soft open-file limit: {raise_open_file_limit(8192)} (raised to 8192 if it was lower; the servers inherit it)"
    )
    stop_all_on_sigterm()
    try:
        server = start_ours(
            TARGET,
            "--max-sessions",
            str(MAX_SESSIONS),
            "--idle-timeout",
            str(idle),
            "--handshake-timeout",
            "2",
            "--send-timeout",
            "600",
        )
        pid, port = server.proc.pid, int(server.url.rsplit(":", 1)[1])
        asyncio.run(good_client(port, 10))  # warm up (the schema probe, imports)
        for flood in (1, 2):  # the second shows whether memory grows from one flood to the next
            print(f"flood {flood}:")
            asyncio.run(capacity_back(server, pid, port, count, idle))
        server.stop()

        # Throughput: the abused server beside a clean reference one, their rounds interleaved so
        # that the machine's load drifts alike for both. Idle timeouts outlast the run.
        server = start_ours(TARGET, "--max-sessions", str(MAX_SESSIONS), "--idle-timeout", "600")
        reference = start_ours(TARGET, "--max-sessions", str(MAX_SESSIONS), "--idle-timeout", "600")
        pid, port = server.proc.pid, int(server.url.rsplit(":", 1)[1])
        ref_port = int(reference.url.rsplit(":", 1)[1])
        asyncio.run(good_client(port, 10))
        asyncio.run(good_client(ref_port, 10))

        async def interleaved(sessions: list[RawSession] | None = None) -> tuple[float, float]:
            """Median steps/s on the reference and on the abused server, a round on each in turn."""
            # One session each for all rounds: during a flood, a slot let go is the flood's.
            sessions = sessions or [await good_session(ref_port), await good_session(port)]
            clean, abused = [], []
            try:
                for _ in range(rounds):
                    clean.append(await steps_per_s(sessions[0], steps))
                    abused.append(await steps_per_s(sessions[1], steps))
            finally:
                for session in sessions:
                    session.close()
            return sorted(clean)[rounds // 2], sorted(abused)[rounds // 2]

        alone_ref, alone = asyncio.run(interleaved())
        print(
            f"good client alone: {alone:.0f} steps/s (reference server: {alone_ref:.0f}, ratio {alone / alone_ref:.2f})"
        )

        async def beside() -> tuple[float, float, float, int]:
            stuck = await non_readers(port, 50)
            try:
                rss, held = rss_mib(pid), fds(pid)
                clean, abused = await interleaved()
                return clean, abused, rss, held
            finally:
                for session in stuck:
                    session.close()

        clean, with_stuck, rss, held = asyncio.run(beside())
        print(
            f"beside 50 non-readers: {with_stuck:.0f} steps/s, reference {clean:.0f} (ratio {with_stuck / clean:.2f}); "
            f"server RSS {rss:.1f} MiB, {held} fds while they are stuck"
        )

        async def during_flood() -> tuple[float, float, int, float]:
            # Sessions held silent, but one slot: the good client's, opened before the flood starts.
            holders = [await RawSession.open(port) for _ in range(MAX_SESSIONS - 1)]
            good = [await good_session(ref_port), await good_session(port)]
            seconds = max(3.0, 2 * rounds * steps / alone * 1.5)
            worker = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--flood-worker", str(port), str(seconds),
                stdout=subprocess.PIPE, cwd=REPO_ROOT,
            )  # fmt: skip
            try:
                await asyncio.sleep(0.5)  # let the flood start
                clean, abused = await interleaved(good)
                out, _ = await asyncio.wait_for(worker.communicate(), seconds + 60)
            finally:
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
                for holder in holders:
                    holder.close()
            return clean, abused, int(out.strip() or 0), seconds

        clean, during, flooded, seconds = asyncio.run(during_flood())
        print(
            f"during a flood of {flooded} handshakes refused at capacity ({flooded / seconds:.0f}/s, from a "
            f"second process): {during:.0f} steps/s, reference {clean:.0f} (ratio {during / clean:.2f})"
        )
    finally:
        stop_all()


if __name__ == "__main__":
    main()
