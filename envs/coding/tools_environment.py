"""`CodingToolsEnvironment`: the Coding tasks for a multi-turn agent, worked through three tools.

:meth:`~CodingToolsEnvironment.reset` picks a task as ``openenv/Coding-v0`` does; its
observation's ``prompt`` is the task, the function to write and a word on the tools. Then every
tool call is one turn:

- ``run_python(code)``: run a program in the sandbox; its stdout, stderr and exit code. No reward.
- ``run_tests(code)``: run the program and call its function on the examples the prompt shows;
  each example's call, expected outcome and what came instead. No reward.
- ``submit(code)``: score the function on the hidden tests, as a Coding-v0 step does: the reward
  is 1 when all pass, else 0 (or as ``reward=`` says), and the episode ends when all pass; the
  result says how many passed, never which. A submission that fails a test does not end the
  episode: the agent may fix the code and submit again, until the turn limit
  (``max_episode_steps``) truncates it.

On the wire (OpenEnv's tool actions)::

    -> {"type":"step","data":{"type":"call_tool","tool_name":"run_tests","arguments":{"code":"def f(x): ..."}}}
    <- {"type":"observation","data":{"observation":{"tool_name":"run_tests","result":{"content":[...],
        "structured_content":{"passed":1,"total":1,"examples":[...],...},...},"error":null},"reward":null,...}}

Every call runs a fresh program: nothing of one call's globals or files is left for the next.
Calls run one at a time. A call that overruns its time limit is answered with a ``timeout``
error, but its run goes on in the sandbox until the sandbox's own wall-clock limit kills it;
the next call waits for that.
"""

from __future__ import annotations

import random
import threading
import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from openenv_gym.errors import SnapshotRefusedError
from openenv_gym.sandbox import Limits
from openenv_gym.server.environment import Action, Environment, EnvironmentMetadata, Observation
from openenv_gym.server.task_sets import TaskSet, TaskSource, episode_snapshot, restored_episode
from openenv_gym.server.tools import DEFAULT_TOOL_TIMEOUT, MAX_TOOL_RESULT_BYTES, ToolResult, tool

from .environment import MAX_CODE_LENGTH, CodingState
from .feedback import example_reports
from .harness import (
    DEFAULT_REWARD_MODE,
    Output,
    RewardMode,
    check_episode_options,
    examples_of,
    grade,
    run_program,
    task_sandbox,
    tests_composition,
)
from .tasks import Task, select_tasks

__all__ = ["DEFAULT_MAX_EPISODE_STEPS", "DEFAULT_TOOL_TIMEOUT_S", "CodingToolsEnvironment", "CodingToolsObservation"]

#: Tool calls an episode may take (each call is one turn), as the manifest and the registry say.
DEFAULT_MAX_EPISODE_STEPS = 16
#: Seconds one tool call may take: the sandbox's default wall-clock limit (10 s) plus room to
#: start a sandbox and collect the results.
DEFAULT_TOOL_TIMEOUT_S = DEFAULT_TOOL_TIMEOUT

Code = Annotated[str, Field(max_length=MAX_CODE_LENGTH)]


class CodingToolsObservation(Observation):
    """What a reset shows: the task, the function to write and the tools (tool calls answer with their results)."""

    prompt: str = ""


class CodingToolsEnvironment(Environment[Action, CodingToolsObservation, CodingState]):
    """Python function-writing tasks with hidden tests, for an agent that runs code and tests before it submits.

    Args:
        tasks: the task set: ``None`` for the 56 shipped tasks, a JSONL path, or
            ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl`` (see :func:`~.tasks.load_tasks`).
        difficulties: only tasks of these difficulties (``"easy"``, ``"medium"``, ``"hard"``).
        splits, split_seed, split: how the set is split, and the split resets draw from
            (``None``: all tasks); see :class:`~openenv_gym.server.TaskSet`.
        reward: what a ``submit`` earns: ``"binary"`` (the default: 1 when all tests pass, else
            0), the change in the ``"fraction"`` of tests passed since the previous submission (an
            episode returns its last submission's fraction), or the ``"improvement"`` of the
            fraction over the episode's best submission so far; none tells the agent more than
            how many tests passed (see :func:`~.harness.reward_for`).
        max_episode_steps: tool calls after which an unsolved episode is truncated (``None``: never).
        tool_timeout_s: seconds a tool call may take before it is answered with a ``timeout``
            error (a call's own ``timeout_s`` overrides it); more than ``limits``' ``wall_time``,
            which stops each run inside the sandbox.
        sandbox: ``"bubblewrap"`` (the default), or ``"none"`` to run agent code without a
            sandbox; only for trusted code, or when the server itself runs in a container.
        limits: :class:`~openenv_gym.sandbox.Limits` fields of each run, such as ``{"wall_time": 5}``.

    Raises:
        SandboxUnavailableError: no sandbox mechanism here, and ``sandbox="none"`` not given.
        ValueError: a bad argument or task file.
    """

    observation_type = CodingToolsObservation
    state_type = CodingState
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own sandbox
    blocking = True

    def __init__(
        self,
        tasks: TaskSource = None,
        difficulties: list[str] | None = None,
        reward: RewardMode = DEFAULT_REWARD_MODE,
        max_episode_steps: int | None = DEFAULT_MAX_EPISODE_STEPS,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        sandbox: Literal["bubblewrap", "none"] = "bubblewrap",
        limits: dict[str, Any] | None = None,
        splits: dict[str, float] | None = None,
        split_seed: int = 0,
        split: str | None = None,
    ) -> None:
        check_episode_options(reward, max_episode_steps)
        self.limits = Limits(**(limits or {}))
        if not tool_timeout_s > self.limits.wall_time:
            # A call cut off before its run ends leaves the sandbox busy: the next call would wait.
            raise ValueError(
                f"tool_timeout_s ({tool_timeout_s:g} s) must be more than the sandbox's wall_time "
                f"({self.limits.wall_time:g} s), which ends each run inside a call"
            )
        self.tool_timeout_s = float(tool_timeout_s)
        # Two capped streams, each at most doubled by JSON's escapes, and room for the rest.
        self.max_tool_result_bytes = max(MAX_TOOL_RESULT_BYTES, 8 * self.limits.output_limit)
        self.reward_mode = reward
        self.reward_composition = tests_composition(reward)
        self.max_episode_steps = max_episode_steps
        self.task_set = TaskSet(select_tasks(tasks, difficulties), splits=splits, split_seed=split_seed, split=split)
        self._examples: dict[str, Task | None] = {}
        self._sandbox = task_sandbox(tasks, self.limits, sandbox)  # raises if no sandbox here
        self._rng = random.Random()
        self._task: Task | None = None
        self._state = CodingState()
        # One call at a time, including one the session gave up on at its time limit: its
        # effects land before the next call's.
        self._lock = threading.Lock()

    # --- Environment API ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CodingToolsObservation:
        """Pick a task (by ``options``, else one drawn by ``seed``: see :meth:`TaskSet.pick`) and show it."""
        with self._lock:
            if seed is not None:
                self._rng = random.Random(seed)
            task = self.task_set.pick(kwargs.get("options"), self._rng)
            self._sandbox.start()
            self._task = task
            self._state = CodingState(episode_id=episode_id or str(uuid.uuid4()), task_id=task.task_id)
        return CodingToolsObservation(
            prompt=self._prompt(task),
            reward=0.0,
            info={"task_id": task.task_id, "difficulty": task.difficulty},
        )

    def step(self, action: Action) -> CodingToolsObservation:
        """Not used: the agent acts through the tools."""
        raise NotImplementedError(_TOOLS_ONLY)

    @property
    def state(self) -> CodingState:
        return self._state

    def close(self) -> None:
        self._sandbox.close()

    def snapshot(self) -> bytes:
        """The episode: its task (by id), turns, scores so far and the generator that draws tasks,
        once any call still running has landed. Nothing else lasts between calls."""
        with self._lock:
            return episode_snapshot(self._rng, self._state)

    def restore(self, state: bytes) -> None:
        rng, episode, task, _ = restored_episode(state, CodingState, self.task_set.by_id)
        if task is None:
            raise SnapshotRefusedError("the snapshot holds no task (an episode of Coding-v0's free mode?)")
        with self._lock:
            self._sandbox.start()
            self._rng, self._state, self._task = rng, episode, task

    def parse_action(self, data: dict[str, Any]) -> Action:
        """Refuse any action that is not a tool call (those never reach here)."""
        raise ValueError(_TOOLS_ONLY)

    def task_catalog(self) -> dict[str, Any]:
        return self.task_set.describe()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="coding_tools_env",
            description="Write Python functions for hidden tests with tools to run code and examples; code runs in a sandbox",
            version="0.1.0",
        )

    # --- Tools -------------------------------------------------------------------------------

    @tool
    def run_python(self, code: Code) -> ToolResult:
        """Run a Python program in a sandbox and return its stdout, stderr and exit code.

        Each call is a fresh program, without network, in a private scratch directory; nothing
        is kept between calls. A run that takes too long is killed (timed_out is then true).

        Args:
            code: the whole program's source code.
        """
        with self._lock:
            _task, last = self._turn()
            output = run_program(self._sandbox, code, self.limits.output_limit)
            return ToolResult(_output(output), truncated=last)

    @tool
    def run_tests(self, code: Code) -> ToolResult:
        """Run the program, then call its function on the task's examples (the calls the prompt shows).

        Returns how many examples passed and, for each, the call, the expected result and what
        the function gave, with the output of the program. Running the examples scores nothing.

        Args:
            code: the whole program, defining the task's function.
        """
        with self._lock:
            task, last = self._turn()
            examples = self._examples_of(task)
            if examples is None:
                message = "This task's prompt shows no example call, so there is nothing to run; use submit."
                return ToolResult(message, truncated=last, is_error=True)
            graded = grade(self._sandbox, examples, code, self.limits.output_limit)
            report = {
                "passed": sum(graded.passed),
                "total": len(graded.passed),
                "examples": example_reports(examples, graded.results, graded.passed),
                "feedback": graded.feedback,
                **_output(graded.output),
            }
            return ToolResult(report, truncated=last)

    @tool
    def submit(self, code: Code) -> ToolResult:
        """Submit the program: its function is scored on the task's hidden tests, for the reward.

        The task is solved when all of them pass. A submission that fails some does not end the
        episode: fix the code and submit again. The result says how many tests passed; its
        feedback names the first failing example, or how many hidden tests failed and how.

        Args:
            code: the whole program, defining the task's function.
        """
        with self._lock:
            task, last = self._turn()
            graded = grade(self._sandbox, task, code, self.limits.output_limit)
            reward = self._state.pay(self.reward_mode, graded)
            report = {
                "tests_passed": sum(graded.passed),
                "tests_total": len(graded.passed),
                "solved": graded.solved,
                "feedback": graded.feedback,
                **_output(graded.output),
            }
            return ToolResult(
                report,
                reward=reward,
                done=graded.solved,
                truncated=last and not graded.solved,
                metadata={"task_id": task.task_id},
                info={"reward_components": {"tests": reward}},
            )

    # --- internals ---------------------------------------------------------------------------

    def _turn(self) -> tuple[Task, bool]:
        """Count a tool call; return the episode's task and whether this call is its last turn."""
        if self._task is None:
            raise RuntimeError("reset before the first tool call")
        return self._task, self._state.take_turn(self.max_episode_steps)

    def _examples_of(self, task: Task) -> Task | None:
        """``task`` with only the tests its prompt shows (``None`` if it shows none), made once per task."""
        if task.task_id not in self._examples:
            self._examples[task.task_id] = examples_of(task) if task.visible_tests else None
        return self._examples[task.task_id]

    def _prompt(self, task: Task) -> str:
        turns = f" You have {self.max_episode_steps} tool calls." if self.max_episode_steps is not None else ""
        return (
            f"{task.statement}\n\n"
            "Use the tools. run_python(code) runs a program in a sandbox and shows its output; "
            f"run_tests(code) calls the `{task.entry_point}` your program defines on the examples above; "
            "submit(code) scores it on hidden tests and solves the task when all of them pass. "
            f"Each call runs a fresh program: nothing carries over between calls.{turns}"
        )


_TOOLS_ONLY = (
    'this environment is driven by its tools: send {"type": "call_tool", "tool_name": "run_python", '
    '"arguments": {"code": "..."}} (or "run_tests", "submit"), or {"type": "list_tools"}'
)


def _output(output: Output) -> dict[str, Any]:
    return {
        "stdout": output.stdout,
        "stderr": output.stderr,
        "exit_code": output.exit_code,
        "timed_out": output.timed_out,
    }
