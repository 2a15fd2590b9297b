"""What the web debug page costs a server: nothing while unused, a little while a page watches.

One run, so the ratios hold on a noisy shared machine. Two ``openenv-gym serve CartPole-v1``
servers, one with ``--no-web`` and one with the page on (the default on loopback):

* idle RSS: ``VmRSS`` once each server has served one session and idled ~1 s;
* steps/s of one ``EnvClient`` session stepping CartPole, in alternating rounds: no page,
  page on but unused, and page on with a watcher following the session (``/web/watch``,
  10 transitions/s, drained by a thread as a browser would).

Targets, printed and never asserted: unused page within noise of no page (steps/s ratio
>= 0.95, idle RSS within 1 MiB). Run from the repository root::

    .venv/bin/python benchmarks/web_page.py            # full run
    .venv/bin/python benchmarks/web_page.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator

from servers import Server, met, start_ours, stop_all
from single_session import vm_rss_mib
from websockets.sync.client import connect

from openenv_gym.client.sync_client import EnvClient


def steps_per_second(client: EnvClient, steps: int) -> float:
    client.reset(seed=0)
    start = time.perf_counter()
    for index in range(steps):
        if client.step({"action": index % 2}).done:
            client.reset()
    return steps / (time.perf_counter() - start)


def session_id(server: Server) -> str:
    with urllib.request.urlopen(f"{server.url}/web/sessions", timeout=10) as response:
        sessions = json.load(response)["sessions"]
    (entry,) = sessions
    return str(entry["id"])


@contextlib.contextmanager
def watching(server: Server) -> Iterator[list[int]]:
    """A watcher on the server's one session, its messages counted by a draining thread."""
    received = [0]
    url = server.url.replace("http", "ws", 1) + f"/web/watch?session={session_id(server)}&fps=10"
    with connect(url, open_timeout=10) as page:

        def drain() -> None:
            with contextlib.suppress(Exception):
                while True:
                    page.recv(timeout=30)
                    received[0] += 1

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
        yield received
    thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few, short rounds")
    args = parser.parse_args()
    steps, rounds = (300, 2) if args.quick else (3000, 5)
    plain = start_ours("CartPole-v1", "--no-web")
    web = start_ours("CartPole-v1")
    try:
        rss = []
        for server in (plain, web):
            with EnvClient(server.url) as client:
                steps_per_second(client, 50)
            time.sleep(1.0)
            rss.append(vm_rss_mib(server.proc.pid))
        rates: dict[str, list[float]] = {"no page": [], "page, unused": [], "page, watched": []}
        messages = 0
        with EnvClient(plain.url) as plain_client, EnvClient(web.url) as web_client:
            steps_per_second(web_client, 10)
            for _ in range(rounds):
                rates["no page"].append(steps_per_second(plain_client, steps))
                rates["page, unused"].append(steps_per_second(web_client, steps))
                with watching(web) as received:
                    rates["page, watched"].append(steps_per_second(web_client, steps))
                messages += received[0]
        print(f"CartPole-v1, one EnvClient session, {rounds} rounds of {steps} steps (medians)")
        base = statistics.median(rates["no page"])
        for name, values in rates.items():
            rate = statistics.median(values)
            print(f"  {name:<14} {rate:8.0f} steps/s  {rate / base:5.2f}x")
        print(f"  the watcher got {messages} messages (transitions and frames sampled at 10/s)")
        print(f"idle RSS: no page {rss[0]:.1f} MiB, page on {rss[1]:.1f} MiB")
        ratio = statistics.median(rates["page, unused"]) / base
        quiet = abs(rss[1] - rss[0]) <= 1.0
        print(f"target: unused page >= 0.95x steps/s and idle RSS within 1 MiB: {met(ratio >= 0.95 and quiet)}")
    finally:
        stop_all()


if __name__ == "__main__":
    main()
