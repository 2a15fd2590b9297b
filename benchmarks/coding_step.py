"""Coding env step latency: a warm sandbox worker forking per step vs a fresh interpreter per step.

Everything is measured in one run, in interleaved rounds, so the ratios hold on a noisy machine:

* warm, end to end: ``env.step("print(1)")`` on ``gym.make("openenv/Coding-v0")`` in free mode
  (client -> WebSocket -> server -> sandbox worker fork -> back);
* warm, sandbox only: ``Sandbox.run("print(1)")`` in this process, without server or client;
  and the same in a sandbox started without its seccomp filter, the filter's cost;
* cold reference: a fresh confined interpreter per step, ``bwrap ... python -c 'print(1)'`` (the
  same bubblewrap command line the worker runs under, from ``bwrap_command``) through
  ``subprocess.run``; and the same with ``-S -s -B`` (no ``site``, as the worker starts). It only
  prints: a real cold design would also drop privileges, set the limits and run the hidden
  tests, so this is a lower bound of its cost;
* a realistic step: the reference solution of a hard task, scored with its hidden tests, end to
  end and in the sandbox only.

Target, printed and never asserted: p50 of the warm end-to-end trivial step <= 30 ms. Run from
the repository root::

    .venv/bin/python benchmarks/coding_step.py            # full run
    .venv/bin/python benchmarks/coding_step.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import gymnasium as gym
from servers import REPO_ROOT

import openenv_gym  # noqa: F401 - registers openenv/Coding-v0
from openenv_gym.envs.coding.tasks import load_tasks
from openenv_gym.sandbox import Limits, Sandbox, find_bwrap
from openenv_gym.sandbox.bubblewrap import bwrap_command

sys.path.insert(0, REPO_ROOT)  # the reference solutions live in the test suite
from tests.envs.coding_reference import SOLUTIONS

ENV_ID = "openenv/Coding-v0"
TRIVIAL = "print(1)"
HARD_TASK = "run-stack-program"  # the slowest hard task's reference: one hidden test runs 10,000 instructions
TARGET_MS = 30.0


@dataclass
class Timings:
    """Per-step seconds, all rounds pooled."""

    lat: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        xs = sorted(self.lat)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def split(total: int, rounds: int) -> list[int]:
    """``total`` steps over ``rounds`` rounds, as evenly as can be."""
    return [total // rounds + (i < total % rounds) for i in range(rounds)]


def timed(step: Callable[[], Any], n: int, into: Timings) -> None:
    for _ in range(n):
        t = time.perf_counter()
        step()
        into.lat.append(time.perf_counter() - t)


class EnvStepper:
    """Steps one action on a Coding-v0 env, checking each result and resetting (untimed) when an episode ends."""

    def __init__(self, env: gym.Env[Any, Any], action: str, check: Callable[[Any, float], bool], reset: dict[str, Any]):
        self.env, self.action, self.check, self.reset_options = env, action, check, reset
        self.ended = False
        env.reset(options=reset or None)

    def step(self) -> None:
        obs, reward, terminated, truncated, _ = self.env.step(self.action)
        if not self.check(obs, reward):
            raise RuntimeError(f"unexpected step result: {obs!r}, reward {reward}")
        self.ended = terminated or truncated

    def run(self, n: int, into: Timings) -> None:
        for _ in range(n):
            if self.ended:  # untimed: a new episode (the env truncates after 8 steps)
                self.env.reset(options=self.reset_options or None)
                self.ended = False
            t = time.perf_counter()
            self.step()
            into.lat.append(time.perf_counter() - t)


def cold_command(flags: list[str]) -> list[str]:
    bwrap = find_bwrap()
    if bwrap is None:
        raise SystemExit("bubblewrap is not installed: the Coding env cannot run here either")
    python = Sandbox().python  # the base interpreter the sandbox runs, not the virtual environment's link
    return bwrap_command(
        bwrap,
        python,
        [*flags, "-c", TRIVIAL],
        scratch_size=Limits().scratch_size,
        privileged=os.geteuid() == 0,
    )


def cold_step(argv: list[str]) -> None:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
    if done.returncode != 0 or done.stdout != b"1\n":
        raise RuntimeError(f"cold step failed ({done.returncode}): {done.stderr.decode(errors='replace')[-500:]}")


def row(name: str, t: Timings, note: str = "") -> None:
    print(f"  {name:<50}{t.ms(0.5):>8.2f}{t.ms(0.9):>8.2f}{t.ms(0.99):>8.2f}{len(t.lat):>6}  {note}")


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300, help="timed steps per configuration, all rounds together")
    p.add_argument("--hard-steps", type=int, default=100, help="timed steps of the hard task's solution")
    p.add_argument("--warmup", type=int, default=30, help="untimed steps per configuration before timing")
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds the timed steps are split over")
    p.add_argument("--task", default=HARD_TASK, help="the task whose reference solution is the realistic step")
    p.add_argument("--quick", action="store_true", help="smoke run: a tenth of the steps, one round")
    args = p.parse_args()
    if args.quick:
        args.steps, args.hard_steps, args.warmup, args.rounds = 30, 10, 5, 1
    task = next((t for t in load_tasks() if t.task_id == args.task), None)
    if task is None:
        raise SystemExit(f"no task {args.task!r}")
    per_round = split(args.steps, args.rounds)
    hard_per_round = split(args.hard_steps, args.rounds)
    colds = {"python -c": cold_command([]), "python -S -s -B -c": cold_command(["-S", "-s", "-B"])}
    bwrap_version = subprocess.run([colds["python -c"][0], "--version"], capture_output=True, text=True).stdout.strip()

    print(
        f"python {platform.python_version()}, openenv-gym {version('openenv-gym')}, gymnasium "
        f"{version('gymnasium')}, websockets {version('websockets')}, {bwrap_version or 'bubblewrap'}"
        f"{' (as root)' if os.geteuid() == 0 else ''}"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{args.steps} timed steps per configuration ({args.rounds} interleaved rounds) after "
        f"{args.warmup} warm-up steps; the hard task's solution: {args.hard_steps} steps"
    )

    free = gym.make(ENV_ID, env_kwargs={"mode": "free"})
    tasks = gym.make(ENV_ID)
    box = Sandbox(Limits())
    unfiltered = Sandbox(Limits())
    unfiltered._seccomp = None  # the reference only: every real sandbox has its filter
    cases = [test.args for test in task.tests]
    solution = SOLUTIONS[task.task_id]
    results = {name: Timings() for name in ("e2e", "box", "unfiltered", *colds, "hard e2e", "hard box")}
    try:
        box.start()
        unfiltered.start()
        e2e = EnvStepper(free, TRIVIAL, lambda obs, r: obs["stdout"] == "1\n" and obs["exit_code"] == 0, {})
        hard = EnvStepper(tasks, solution, lambda obs, r: r == 1.0, {"task_id": task.task_id})

        def box_step() -> None:
            if box.run(TRIVIAL).stdout != "1\n":
                raise RuntimeError("Sandbox.run failed")

        def unfiltered_step() -> None:
            if unfiltered.run(TRIVIAL).stdout != "1\n":
                raise RuntimeError("Sandbox.run without the filter failed")

        def hard_box_step() -> None:
            result = box.run(solution, entry_point=task.entry_point, cases=cases)
            if len(result.results) != len(cases) or result.exit_code != 0:
                raise RuntimeError(f"Sandbox.run of the solution failed: {result}")

        # Warm-up, untimed: page cache, .pyc files, the workers' first forks.
        e2e.run(args.warmup, Timings())
        hard.run(args.warmup, Timings())
        timed(box_step, args.warmup, Timings())
        timed(unfiltered_step, args.warmup, Timings())
        timed(hard_box_step, args.warmup, Timings())
        for argv in colds.values():
            timed(functools.partial(cold_step, argv), max(3, args.warmup // 10), Timings())

        for n, hard_n in zip(per_round, hard_per_round):
            e2e.run(n, results["e2e"])
            timed(box_step, n, results["box"])
            timed(unfiltered_step, n, results["unfiltered"])
            for name, argv in colds.items():
                timed(functools.partial(cold_step, argv), n, results[name])
            hard.run(hard_n, results["hard e2e"])
            timed(hard_box_step, hard_n, results["hard box"])
    finally:
        box.close()
        unfiltered.close()
        tasks.close()
        free.close()

    warm = results["e2e"]
    print(f"\n{'latency per step, ms':<52}{'p50':>8}{'p90':>8}{'p99':>8}{'n':>6}")
    print(f"trivial step: {TRIVIAL}")
    row("warm, end to end (gym.make, free mode)", warm, "client -> WebSocket -> server -> fork -> back")
    row("warm, Sandbox.run in process (no server)", results["box"])
    row("warm, Sandbox.run without the seccomp filter", results["unfiltered"], "reference: the filter's cost")
    for name in colds:
        row(f"cold, bwrap + fresh {name} per step", results[name], "reference: prints only, no limits or tests")
    print(
        f"realistic step: the reference solution of {task.task_id} ({task.difficulty}, "
        f"{len(task.tests)} hidden tests), scored"
    )
    row("warm, end to end (gym.make, task mode)", results["hard e2e"])
    row("warm, Sandbox.run in process (no server)", results["hard box"])

    print()
    for name in colds:
        cold = results[name]
        print(
            f"ratio cold ({name}) / warm end to end, trivial step: p50 {cold.ms(0.5) / warm.ms(0.5):.1f}x, "
            f"p90 {cold.ms(0.9) / warm.ms(0.9):.1f}x, p99 {cold.ms(0.99) / warm.ms(0.99):.1f}x"
        )
    print(
        f"overhead of client + WebSocket + server over Sandbox.run, p50: {warm.ms(0.5) - results['box'].ms(0.5):.2f} ms"
    )
    print(
        f"ratio Sandbox.run with / without the seccomp filter, trivial step: p50 "
        f"{results['box'].ms(0.5) / results['unfiltered'].ms(0.5):.2f}x, "
        f"p90 {results['box'].ms(0.9) / results['unfiltered'].ms(0.9):.2f}x"
    )
    ok = warm.ms(0.5) <= TARGET_MS
    print(
        f"target: warm end-to-end trivial step p50 <= {TARGET_MS:g} ms -> {warm.ms(0.5):.2f} ms, "
        f"{'met' if ok else 'NOT met'}"
    )
    print(f"after the run: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
