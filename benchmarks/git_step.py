"""Git env step latency: a warm ``run("git status")`` tool call over a WebSocket session, and what it is made of.

Everything is measured in one run, in interleaved rounds, so the ratios hold on a noisy machine:

* warm, end to end: the ``run`` tool with ``git status`` on an ``openenv/Git-v0`` server (a
  ``ProcessProvider`` child, as ``gym.make`` starts it) through one ``EnvClient`` WebSocket
  session: client -> server -> sandbox worker fork -> ``bash -c`` -> git -> back;
* warm, sandbox only: the same command through ``Sandbox.run`` in this process (the Git env's
  shell program in a sandbox with a workspace), without server or client;
* reference: ``git status`` on the host through ``subprocess.run``, no sandbox (the floor: a
  fork and exec of git that the sandbox cannot avoid);
* the other calls of an episode, end to end: ``read_file``, ``write_file``, ``submit`` (the
  verifier: a copy of the repository, made inert, then three checks), and ``reset`` (a fresh
  sandbox and the setup that builds the repository).

Target, printed and never asserted: p50 of the warm end-to-end ``run("git status")`` <= 30 ms.
Run from the repository root::

    .venv/bin/python benchmarks/git_step.py            # full run
    .venv/bin/python benchmarks/git_step.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from servers import REPO_ROOT

from openenv_gym.client import EnvClient
from openenv_gym.envs.git import shell
from openenv_gym.envs.git.environment import command_env
from openenv_gym.providers import ProcessProvider
from openenv_gym.sandbox import Limits, Sandbox

sys.path.insert(0, REPO_ROOT)  # the test tasks live in the test suite
from tests.envs.git_cases import TASKS_BY_ID, sh

COMMAND = "git status"
TARGET_MS = 30.0
# A repository of the size of the tasks': a few directories, tens of files, a short history.
SETUP = sh("""
    git init -q -b main
    for d in src docs tests; do
      mkdir $d
      for i in $(seq 1 12); do echo "line $i of $d" > $d/file$i.txt; done
    done
    git add -A
    git commit -q -m 'Add the project'
    for i in $(seq 1 20); do echo "change $i" >> src/file1.txt; git commit -q -am "Change $i"; done
    echo draft > docs/draft.txt
""")
TASK = {
    **TASKS_BY_ID["tag-the-release"],
    "task_id": "bench",
    "setup": SETUP + "git tag -d v1.0 2> /dev/null || true\n",
    "max_turns": None,
}


@dataclass
class Timings:
    """Per-call seconds, all rounds pooled."""

    lat: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        xs = sorted(self.lat)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def split(total: int, rounds: int) -> list[int]:
    return [total // rounds + (i < total % rounds) for i in range(rounds)]


def timed(step: Callable[[], Any], n: int, into: Timings) -> None:
    for _ in range(n):
        t = time.perf_counter()
        step()
        into.lat.append(time.perf_counter() - t)


def row(name: str, t: Timings, note: str = "") -> None:
    print(f"  {name:<52}{t.ms(0.5):>8.2f}{t.ms(0.9):>8.2f}{t.ms(0.99):>8.2f}{len(t.lat):>6}  {note}")


class Session:
    """One WebSocket session on the Git env, in an episode of the benchmark's task; each call's result is checked."""

    def __init__(self, url: str) -> None:
        self.client = EnvClient(url, call_timeout=60).connect()
        self.reset()

    def reset(self) -> None:
        self.client.reset(options={"task_id": "bench"})

    def call(self, name: str, **arguments: Any) -> Any:
        frame = self.client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        observation = frame.observation
        if observation["error"] is not None or observation["result"]["is_error"]:
            raise RuntimeError(f"{name} failed: {observation}")
        return observation["result"]["data"]

    def status(self) -> None:
        output = self.call("run", command=COMMAND)
        if output["exit_code"] != 0 or "On branch main" not in output["stdout"]:
            raise RuntimeError(f"git status failed: {output}")

    def submit(self) -> None:
        frame = self.client.step({"type": "call_tool", "tool_name": "submit", "arguments": {}})
        if not frame.done or frame.reward is None:
            raise RuntimeError(f"submit failed: {frame.observation}")
        self.reset()  # untimed by the caller: the next episode

    def close(self) -> None:
        self.client.close()


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300, help="timed run('git status') calls per configuration")
    p.add_argument(
        "--episode-steps", type=int, default=60, help="timed calls of each other kind (read, write, submit, reset)"
    )
    p.add_argument("--warmup", type=int, default=30, help="untimed calls per configuration before timing")
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds the timed calls are split over")
    p.add_argument("--quick", action="store_true", help="smoke run: a tenth of the calls, one round")
    args = p.parse_args()
    if args.quick:
        args.steps, args.episode_steps, args.warmup, args.rounds = 30, 6, 5, 1
    per_round, episode_per_round = split(args.steps, args.rounds), split(args.episode_steps, args.rounds)
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, websockets "
        f"{version('websockets')}, {git_version}{' (as root)' if os.geteuid() == 0 else ''}"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.steps} timed git status calls per configuration ({args.rounds} interleaved rounds) after "
        f"{args.warmup} warm-up calls; {args.episode_steps} of each other call"
    )

    names = ("e2e", "box", "host", "read", "write", "submit", "reset")
    results = {name: Timings() for name in names}
    provider = ProcessProvider("openenv_gym.envs.git:GitEnvironment", env_kwargs={"tasks": [TASK], "max_turns": None})
    box = Sandbox(Limits(), workspace=True)
    host = tempfile.TemporaryDirectory(prefix="openenv-gym-bench-git-")
    session = None
    try:
        session = Session(provider.start())
        # The sandbox-only configuration: the same repository, the same program and environment.
        box.start()
        assert box.scratch_dir is not None
        env_vars = command_env(box.scratch_dir)
        program, work_tree = Path(shell.__file__).read_text(encoding="utf-8"), f"{box.workspace_dir}/repo"
        built = box.run(program, entry_point="run_bash", cases=[[SETUP, work_tree, env_vars, True]], timeout=60)
        if built.exit_code != 0:
            raise RuntimeError(f"the setup failed in the sandbox: {built.stderr}")
        subprocess.run(["bash", "-euo", "pipefail", "-c", SETUP], cwd=host.name, env=_host_env(host.name), check=True)

        def box_step() -> None:
            result = box.run(program, entry_point="run_bash", cases=[[COMMAND, work_tree, env_vars, False]])
            if result.exit_code != 0 or "On branch main" not in result.stdout:
                raise RuntimeError(f"Sandbox.run of git status failed: {result}")

        def host_step() -> None:
            done = subprocess.run(["git", "status"], cwd=host.name, env=_host_env(host.name), capture_output=True)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.decode())

        def read() -> None:
            if not session.call("read_file", path="src/file1.txt").startswith("line 1 of src"):
                raise RuntimeError("read_file returned the wrong text")

        def write() -> None:
            if not session.call("write_file", path="docs/notes.txt", content="notes\n" * 100).startswith("wrote 600"):
                raise RuntimeError("write_file failed")

        # Warm-up, untimed: page cache, the workers' first forks, the server's first frames.
        timed(session.status, args.warmup, Timings())
        timed(box_step, args.warmup, Timings())
        timed(host_step, args.warmup, Timings())
        timed(session.submit, 2, Timings())

        for n, m in zip(per_round, episode_per_round):
            timed(session.status, n, results["e2e"])
            timed(box_step, n, results["box"])
            timed(host_step, n, results["host"])
            timed(read, m, results["read"])
            timed(write, m, results["write"])
            for _ in range(m):  # submit, then the next episode's reset, each timed on its own
                t = time.perf_counter()
                frame = session.client.step({"type": "call_tool", "tool_name": "submit", "arguments": {}})
                results["submit"].lat.append(time.perf_counter() - t)
                if not frame.done:
                    raise RuntimeError(f"submit did not end the episode: {frame.observation}")
                timed(session.reset, 1, results["reset"])
    finally:
        if session is not None:
            session.close()
        box.close()
        provider.stop()
        host.cleanup()

    warm = results["e2e"]
    print(f"\n{'latency per call, ms':<54}{'p50':>8}{'p90':>8}{'p99':>8}{'n':>6}")
    print(f"the step: run({COMMAND!r}) in a repository of 36 files and 21 commits")
    row("warm, end to end (WebSocket session, server child)", warm, "client -> server -> fork -> bash -> git")
    row("warm, Sandbox.run in process (no server)", results["box"])
    row("reference: git status on the host (no sandbox)", results["host"], "subprocess.run, the floor")
    print("the episode's other calls, end to end")
    row("read_file (a small file)", results["read"])
    row("write_file (600 bytes)", results["write"])
    row("submit (the verifier: copy, inert, 3 checks)", results["submit"])
    row("reset (a fresh sandbox and the setup)", results["reset"], "23 commits built by the setup")

    print()
    host_p50 = results["host"].ms(0.5)
    print(
        f"ratio warm end to end / host git status: p50 {warm.ms(0.5) / host_p50:.1f}x, "
        f"p99 {warm.ms(0.99) / results['host'].ms(0.99):.1f}x"
    )
    print(
        f"overhead of client + WebSocket + server over Sandbox.run, p50: {warm.ms(0.5) - results['box'].ms(0.5):.2f} ms"
    )
    print(
        f"overhead of the sandbox (fork, confinement, cleanup) over the host, p50: {results['box'].ms(0.5) - host_p50:.2f} ms"
    )
    ok = warm.ms(0.5) <= TARGET_MS
    print(
        f"target: warm end-to-end run({COMMAND!r}) p50 <= {TARGET_MS:g} ms -> {warm.ms(0.5):.2f} ms "
        f"(p99 {warm.ms(0.99):.2f} ms), {'met' if ok else 'NOT met'}"
    )
    print(f"after the run: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _host_env(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
    }


if __name__ == "__main__":
    main()
