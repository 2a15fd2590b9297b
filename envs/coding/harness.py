"""What both Coding envs do with a program: the sandbox it runs in, the task it is for, and its grade.

``openenv/Coding-v0`` (:mod:`.environment`, one program per step) and ``openenv/CodingTools-v0``
(:mod:`.tools_environment`, programs as tool calls) share these pieces, so a program runs, is
scored and is explained the same way in both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections.abc import Sequence
from typing import Any, Literal

from openenv_gym.rewards import Composition, RewardPart
from openenv_gym.sandbox import Limits, RunResult, Sandbox
from openenv_gym.sandbox.fresh import FreshSandbox
from openenv_gym.server.task_sets import TaskSource, choice_error, hidden_task_files

from .feedback import FEEDBACK_LIMIT, feedback
from .scoring import passed_tests, well_formed
from .tasks import BUILTIN_TASKS, Task

__all__ = [
    "DEFAULT_REWARD_MODE",
    "OUTPUT_MARKER_ROOM",
    "REWARD_MODES",
    "Graded",
    "Output",
    "RewardMode",
    "check_episode_options",
    "examples_of",
    "fit_text",
    "grade",
    "reward_for",
    "run_program",
    "task_sandbox",
]

OUTPUT_MARKER_ROOM = 256  # characters the truncation markers and sandbox notes may add to a capped stream
RewardMode = Literal["fraction", "binary", "improvement"]
REWARD_MODES = ("fraction", "binary", "improvement")
#: What both Coding envs pay unless told otherwise: only a solution earns anything (why: docs/envs.md).
DEFAULT_REWARD_MODE: RewardMode = "binary"
#: The order of every run's hidden calls, drawn from the OS's entropy: no seed of the agent's predicts it.
_HIDDEN_ORDER = random.SystemRandom()
_CONTROL = {code: f"\\x{code:02x}" for code in [*range(0x09), *range(0x0E, 0x20), 0x7F]}


def check_episode_options(reward: str, max_episode_steps: int | None) -> None:
    """Refuse a reward mode that is none of :data:`REWARD_MODES`, or a turn limit below 1.

    Raises:
        ValueError: naming the nearest reward mode, or the bad limit.
    """
    if reward not in REWARD_MODES:
        raise choice_error("reward", reward, REWARD_MODES)
    if max_episode_steps is not None and max_episode_steps < 1:
        raise ValueError(f"max_episode_steps must be at least 1, got {max_episode_steps}")


def task_sandbox(tasks: TaskSource, limits: Limits, mechanism: Literal["bubblewrap", "none"]) -> Sandbox:
    """The sandbox for programs of the task set ``tasks`` (as the envs' ``tasks`` argument).

    The task file holds the expected values, so runs never see it, wherever it lives (a task
    set from the Hub or a list of dicts has no file on the host to hide).

    Raises:
        SandboxUnavailableError: no sandbox mechanism here, and ``mechanism="none"`` not given.
    """
    return Sandbox(limits, mechanism=mechanism, hidden_paths=hidden_task_files(tasks, BUILTIN_TASKS))


def fit_text(text: str, limit: int) -> str:
    """``text`` in the observation's charset (other characters escaped), capped near ``limit``."""
    if not text.isascii() or any(ord(char) in _CONTROL for char in text):
        text = text.encode("ascii", "backslashreplace").decode("ascii").translate(_CONTROL)
    if len(text) > limit + OUTPUT_MARKER_ROOM:
        text = text[:limit] + f"\n[... truncated: {len(text) - limit} more characters]"
    return text


@dataclasses.dataclass(frozen=True)
class Output:
    """What a program printed and how it exited, fit for an observation.

    Attributes:
        stdout: its standard output, escaped to printable ASCII and capped near the output limit.
        stderr: the same for its standard error (with the sandbox's notes: a limit hit, a signal).
        exit_code: its exit status, clamped to -128..255 (negative: the signal that killed it).
        timed_out: whether it was killed at its wall-clock or CPU-time limit.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool

    @classmethod
    def of(cls, result: RunResult, output_limit: int) -> Output:
        """The observable part of ``result``."""
        return cls(
            stdout=fit_text(result.stdout, output_limit),
            stderr=fit_text(result.stderr, output_limit),
            exit_code=max(-128, min(255, result.exit_code)),
            timed_out=result.timed_out,
        )


def run_program(sandbox: Sandbox, code: str, output_limit: int) -> Output:
    """Run ``code`` as a program, calling nothing in it."""
    return Output.of(sandbox.run(code), output_limit)


@dataclasses.dataclass(frozen=True)
class Graded:
    """A program's run on a task's tests, scored outside the sandbox.

    Attributes:
        output: what it printed and how it exited.
        results: per test, what feedback may say of its call (``None``: it did not run): for a
            test the prompt shows, the sandbox's result with every ill-typed field dropped
            (:func:`~.scoring.well_formed`); for a hidden one, :func:`_hidden_result`.
        passed: which of the task's tests passed, in the task's order: the server's alone. The
            agent is told how many (and the examples' own results), never which hidden ones.
        feedback: a few lines on the first failing example, or how many hidden tests failed and
            how (:mod:`.feedback`).
    """

    output: Output
    results: list[dict[str, Any] | None]
    passed: list[bool]
    feedback: str

    @property
    def fraction(self) -> float:
        """The fraction of the tests that passed."""
        return sum(self.passed) / len(self.passed)

    @property
    def solved(self) -> bool:
        """Whether every test passed."""
        return all(self.passed)


def grade(sandbox: Sandbox, task: Task, code: str, output_limit: int) -> Graded:
    """Run ``code``, call ``task``'s function on each of its tests' arguments, and score the results.

    Only the arguments enter the sandbox; the expected values stay here. The program runs twice,
    in two processes. The first calls the function on the tests the prompt shows: its output,
    exit code and tracebacks are what the agent sees. The second calls it on the hidden tests, in
    an order drawn afresh for every run (a program counting its calls cannot tell which test it
    answers): what each call returned or raised is scored here, and the agent learns only how many
    passed and how many of the others raised; its output and exit code go nowhere, so a program
    that prints (or exits with, or raises with) its arguments shows nothing of a hidden test's.
    The second runs in a fresh sandbox (:class:`~openenv_gym.sandbox.fresh.FreshSandbox`, started
    beside the first run and ended after the second): nothing it did, not even a counter it
    advanced, is there for ``sandbox``'s later runs.

    The two runs share one wall-clock limit, the sandbox's ``wall_time``, which so bounds the step:
    the hidden run gets what the first left of it. A first run stopped at a time limit (wall clock
    or CPU) leaves it nothing: the hidden calls do not run, and the grade says the time ran out.
    """
    shown = task.visible_tests
    hidden = [index for index in range(len(task.tests)) if index not in shown]
    _HIDDEN_ORDER.shuffle(hidden)
    with contextlib.ExitStack() as stack:
        apart = FreshSandbox(sandbox) if hidden else None  # its worker starts now, beside the first run
        if apart is not None:
            stack.callback(apart.close, wait=False)
        run = _cases_run(sandbox, task, code, shown, tracebacks=True)
        scored: list[dict[str, Any] | None] = [None] * len(task.tests)  # None: the call did not run
        told = list(scored)
        _place(scored, shown, run.results)
        _place(told, shown, run.results)
        timed_out = run.timed_out
        left = sandbox.limits.wall_time - run.duration
        if apart is not None and (left <= 0 or run.timed_out):
            timed_out = True  # the step's time is up: the hidden calls do not run
        elif apart is not None:
            secret = _cases_run(apart.ready(), task, code, hidden, tracebacks=False, timeout=left)
            _place(scored, hidden, secret.results)
            _place(told, hidden, [_hidden_result(item) for item in secret.results])
            timed_out = timed_out or secret.timed_out
    passed = passed_tests(task.tests, [item or {} for item in scored])
    return Graded(
        output=Output.of(run, output_limit),
        results=told,
        passed=passed,
        feedback=fit_text(feedback(task, dataclasses.replace(run, timed_out=timed_out), passed, told), FEEDBACK_LIMIT),
    )


def _cases_run(
    sandbox: Sandbox, task: Task, code: str, indices: Sequence[int], *, tracebacks: bool, timeout: float | None = None
) -> RunResult:
    """One run of ``code`` calling the function on the tests at ``indices`` (each call's result, well formed)."""
    result = sandbox.run(
        code,
        entry_point=task.entry_point,
        cases=[task.tests[index].args for index in indices],
        tracebacks=range(len(indices)) if tracebacks else (),
        timeout=timeout,
    )
    return dataclasses.replace(result, results=well_formed(result.results))


def _place(results: list[dict[str, Any] | None], indices: Sequence[int], run: list[dict[str, Any]]) -> None:
    """Put a run's results (fewer than asked when it stopped early) at the tests' ``indices``."""
    for index, item in zip(indices, run):
        results[index] = item


def _hidden_result(item: dict[str, Any]) -> dict[str, Any]:
    """A hidden call's result as the agent may learn of it: whether it returned or raised, and
    nothing else (it is scored on the whole result, here). Not the value, the exception's type,
    message or traceback: a program can put its arguments in any of them."""
    if item.get("missing_entry_point"):
        return {"missing_entry_point": True}
    return {"value": None} if "value" in item else {"exception": []}


def reward_for(mode: RewardMode, graded: Graded, best_fraction: float, last_fraction: float) -> float:
    """The reward of submission ``graded`` in reward ``mode``, given the episode's best fraction of
    hidden tests passed before it and its previous submission's (0 before the first).

    Each mode pays an episode at most 1 in all (the episode ends on the submission that solves the
    task, and a step after the end is refused). Whatever the mode, a submission's observation tells
    the agent how many tests passed (``n of m``), the examples the prompt shows in full, and how
    many hidden tests failed by a wrong value or an exception, never which; the reward tells no more:

    - ``"binary"`` (the default, :data:`DEFAULT_REWARD_MODE`): 1 for the submission that passes
      every test, else 0. An episode returns 1 or 0; the reward tells only whether the task is
      solved, and a program that does not compute the answers earns nothing.
    - ``"fraction"``: the change in the fraction of tests passed since the previous submission
      (negative when fewer pass). An episode returns the fraction its last submission passed,
      however many it made: resubmitting a partial solution earns nothing more. The reward tells
      the count again; a constant program earns the share of tests whose answer is that constant
      (up to 0.67 on a shipped task: ``benchmarks/constant_answers.py``).
    - ``"improvement"``: how far the fraction rose over the episode's best so far, never negative.
      An episode returns the best fraction any of its submissions passed; the reward tells the
      count when it beats the best, and a constant earns as in ``"fraction"``.
    """
    if mode == "binary":
        return float(graded.solved)
    if mode == "improvement":
        return max(0.0, graded.fraction - best_fraction)
    return graded.fraction - last_fraction


def tests_composition(mode: RewardMode) -> Composition:
    """The reward's one part, ``"tests"``: what ``mode`` pays for the hidden tests a submission passes
    (a step's ``info["reward_components"]["tests"]`` is its whole reward)."""
    paid = {
        "fraction": "the change in the fraction of hidden tests passed since the previous submission",
        "binary": "1 for the submission that passes every hidden test, else 0",
        "improvement": "the rise of the fraction of hidden tests passed over the episode's best",
    }[mode]
    return Composition((RewardPart("tests", 1.0, description=paid),))


def examples_of(task: Task) -> Task:
    """``task`` with only its visible tests (the calls its prompt writes out), all of them visible still.

    Raises:
        ValueError: the prompt shows none of the task's tests.
    """
    if not task.visible_tests:
        raise ValueError(f"the prompt of task {task.task_id!r} shows none of its tests")
    # A new Task, not a copy: `visible_tests` is cached per instance and holds the old indices.
    examples = [task.tests[index].model_dump(exclude_unset=True) for index in task.visible_tests]
    return Task.model_validate({**task.model_dump(exclude={"tests"}), "tests": examples})
