"""What both Coding envs do with a program: the sandbox it runs in, the task it is for, and its grade.

``openenv/Coding-v0`` (:mod:`.environment`, one program per step) and ``openenv/CodingTools-v0``
(:mod:`.tools_environment`, programs as tool calls) share these pieces, so a program runs, is
scored and is explained the same way in both.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from openenv_gym.sandbox import Limits, RunResult, Sandbox

from ..task_sets import TaskSource, choice_error, hidden_task_files
from .feedback import FEEDBACK_LIMIT, feedback
from .scoring import passed_tests, well_formed
from .tasks import BUILTIN_TASKS, Task

__all__ = [
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
        results: the sandbox's per-test results, every ill-typed field dropped (:func:`~.scoring.well_formed`).
        passed: which of the task's tests passed.
        feedback: a few lines on the first failure, never giving a hidden test away (:mod:`.feedback`).
    """

    output: Output
    results: list[dict[str, Any]]
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

    Only the arguments enter the sandbox; the expected values stay here. A raising call keeps its
    traceback when the prompt shows that test (the sandbox also keeps the first raising call's).
    """
    result = sandbox.run(
        code, entry_point=task.entry_point, cases=[test.args for test in task.tests], tracebacks=task.visible_tests
    )
    result = dataclasses.replace(result, results=well_formed(result.results))
    passed = passed_tests(task.tests, result.results)
    return Graded(
        output=Output.of(result, output_limit),
        results=result.results,
        passed=passed,
        feedback=fit_text(feedback(task, result, passed), FEEDBACK_LIMIT),
    )


def reward_for(mode: RewardMode, graded: Graded, best_fraction: float) -> float:
    """The reward of ``graded`` in reward ``mode``, given the episode's best fraction before it."""
    if mode == "binary":
        return float(graded.solved)
    if mode == "improvement":
        return max(0.0, graded.fraction - best_fraction)
    return graded.fraction


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
