"""A delaying TCP proxy: one simulated host's network link (this kernel has no netem).

Run inside a host's network namespace, where an iptables REDIRECT rule sends it every TCP
connection the trainer opens to that host. For each one it reads the original destination
(``SO_ORIGINAL_DST``), connects there, and forwards the bytes both ways, each chunk held back by
the link's one-way ``delay`` plus up to ``jitter`` (order kept, as TCP keeps it), ``loss`` (the
chance that a chunk waits a retransmission timeout more, which is how a lost segment looks to a
TCP application) and ``bandwidth`` (bytes/s: a chunk leaves after the ones before it have).

Bounded and self-stopping: at most ``MAX_CONNECTIONS`` connections, an exit after ``--lifetime``
seconds, and an exit when standard input closes (its owner is gone). Standard input also takes
new link settings as JSON lines (``{"delay": 0.005}``), which apply to chunks read from then on;
each is answered with ``ok`` on standard output.

    python -m tests.delay_proxy --port 909 --delay 0.001 --lifetime 3600
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass

MAX_CONNECTIONS = 512
SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
RETRANSMISSION_TIMEOUT = 0.2  # Linux's minimum RTO: what a lost segment costs
CHUNK = 256 * 1024


@dataclass
class Link:
    """How one host's link behaves, each direction: seconds, a probability, bytes per second."""

    delay: float = 0.0
    jitter: float = 0.0
    loss: float = 0.0
    bandwidth: float | None = None

    def __post_init__(self) -> None:
        if not (0 <= self.delay <= 1 and 0 <= self.jitter <= 1 and 0 <= self.loss < 1):
            raise ValueError(f"a link needs 0 <= delay, jitter <= 1 s and 0 <= loss < 1, got {self}")
        if self.bandwidth is not None and self.bandwidth <= 0:
            raise ValueError(f"bandwidth must be positive bytes/s or None, got {self.bandwidth}")


class _Direction:
    """One direction of one connection: a reader thread stamps chunks with when they may leave,
    a writer thread sends each at that moment."""

    def __init__(self, source: socket.socket, sink: socket.socket, link: list[Link], rng: random.Random) -> None:
        self.source, self.sink, self.link, self.rng = source, sink, link, rng
        self.queue: deque[tuple[float, bytes]] = deque()
        self.ready = threading.Condition()
        self.last_due = 0.0
        self.closed = False

    def read(self) -> None:
        try:
            while data := self.source.recv(CHUNK):
                link = self.link[0]
                now = time.monotonic()
                due = now + link.delay + (self.rng.uniform(0, link.jitter) if link.jitter else 0.0)
                if link.loss and self.rng.random() < link.loss:
                    due += RETRANSMISSION_TIMEOUT
                if link.bandwidth:
                    due = max(due, self.last_due) + len(data) / link.bandwidth
                due = max(due, self.last_due)  # TCP delivers in order
                self.last_due = due
                with self.ready:
                    self.queue.append((due, data))
                    self.ready.notify()
        except OSError:
            pass
        finally:
            with self.ready:
                self.closed = True
                self.ready.notify()

    def write(self) -> None:
        try:
            while True:
                with self.ready:
                    while not self.queue and not self.closed:
                        self.ready.wait()
                    if not self.queue:
                        break
                    due, data = self.queue.popleft()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self.sink.sendall(data)
            self.sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def original_destination(connection: socket.socket) -> tuple[str, int]:
    """Where the client meant to connect, before the REDIRECT rule sent it here."""
    raw = connection.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


def relay(client: socket.socket, link: list[Link], slots: threading.Semaphore, seed: int) -> None:
    try:
        host, port = original_destination(client)
        upstream = socket.create_connection((host, port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        client.close()
        slots.release()
        return
    for sock in (client, upstream):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rng = random.Random(seed)
    directions = [_Direction(client, upstream, link, rng), _Direction(upstream, client, link, rng)]
    threads = [threading.Thread(target=f, daemon=True) for d in directions for f in (d.read, d.write)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    client.close()
    upstream.close()
    slots.release()


def serve(port: int, link: list[Link], lifetime: float, seed: int) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(128)
    listener.settimeout(0.5)
    print("listening", flush=True)
    slots = threading.Semaphore(MAX_CONNECTIONS)
    deadline = time.monotonic() + lifetime
    count = 0
    while time.monotonic() < deadline:
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        if not slots.acquire(blocking=False):
            client.close()  # bounded: a flood of connections is refused, not served
            continue
        count += 1
        threading.Thread(target=relay, args=(client, link, slots, seed + count), daemon=True).start()
    os._exit(0)


def watch_owner(link: list[Link]) -> None:
    """New link settings from standard input; its end means the owner is gone: exit."""
    for line in sys.stdin:
        try:
            link[0] = Link(**{**asdict(link[0]), **json.loads(line)})
            print("ok", flush=True)
        except (ValueError, TypeError) as exc:
            print(f"error: {exc}", flush=True)
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0, help="one-way seconds, each direction")
    parser.add_argument("--jitter", type=float, default=0.0)
    parser.add_argument("--loss", type=float, default=0.0)
    parser.add_argument("--bandwidth", type=float, default=None, help="bytes/s, each direction")
    parser.add_argument("--lifetime", type=float, default=3600.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    link = [Link(args.delay, args.jitter, args.loss, args.bandwidth)]
    threading.Thread(target=watch_owner, args=(link,), daemon=True).start()
    serve(args.port, link, args.lifetime, args.seed)


if __name__ == "__main__":
    main()
