"""`CodingEnvironment`: write a Python function; each step's code runs in a sandbox; hidden tests give the reward.

In task mode (the default) :meth:`reset` picks a task and shows its prompt; each step submits a
whole program, which must define the task's function. The program runs in the sandbox, then the
function is called on every hidden test's arguments, in an order drawn afresh for every run; the
results are scored outside the sandbox. The observation tells how many tests passed, and its
``feedback`` which example the prompt shows failed and how, or how many hidden tests failed and how,
never which (:mod:`.feedback`). The reward is 1 for a solution and 0 otherwise, unless ``reward=``
says otherwise (:func:`~.harness.reward_for`).

In free mode there is no task: each step runs the code and returns its stdout, stderr and exit
code, the observation of OpenEnv's coding env, so its clients work unchanged::

    -> {"type":"step","data":{"code":"print(1)"}}
    <- {"type":"observation","data":{"observation":{"stdout":"1\\n","stderr":"","exit_code":0},
        "reward":0.0,"done":false,...}}

Every step is a fresh program: nothing of one step's globals or files is left for the next.
"""

from __future__ import annotations

import random
import string
import uuid
from typing import Any, Literal

from pydantic import Field

from openenv_gym.errors import SnapshotRefusedError
from openenv_gym.sandbox import Limits
from openenv_gym.server.environment import Action, Environment, EnvironmentMetadata, Observation, State
from openenv_gym.server.task_sets import TaskSet, TaskSource, choice_error, episode_snapshot, restored_episode

from .feedback import FEEDBACK_LIMIT
from .harness import (
    DEFAULT_REWARD_MODE,
    OUTPUT_MARKER_ROOM,
    Graded,
    RewardMode,
    check_episode_options,
    grade,
    reward_for,
    run_program,
    task_sandbox,
    tests_composition,
)
from .tasks import MAX_PROMPT_LENGTH, MAX_TESTS, Task, select_tasks

__all__ = ["MAX_CODE_LENGTH", "CodeAction", "CodeObservation", "CodingEnvironment", "CodingState", "TaskObservation"]

MAX_CODE_LENGTH = 65536
DEFAULT_MAX_EPISODE_STEPS = 8
_MODES = ("tasks", "free")


class CodeAction(Action):
    """A whole Python program (its source code)."""

    code: str = Field(max_length=MAX_CODE_LENGTH)


class CodeObservation(Observation):
    """What the program printed and how it exited (the free mode's observation)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0


class TaskObservation(CodeObservation):
    """The task's prompt, what the program printed and how it exited, how many tests passed, and why not all.

    ``feedback`` (empty after a reset) names the first failing example the prompt shows, with the
    traceback of an exception, or says how many hidden tests failed by a wrong value or an
    exception (never which, nor their arguments or expected values; see :mod:`.feedback`).
    """

    prompt: str = ""
    tests_passed: int = 0
    tests_total: int = 0
    feedback: str = ""


class CodingState(State):
    """The episode's task, its best score so far and its last submission's, and whether it has ended."""

    task_id: str | None = None
    best_fraction: float = 0.0
    last_fraction: float = 0.0
    ended: bool = False

    def take_turn(self, max_turns: int | None) -> bool:
        """Count a step (or tool call); whether it is the episode's last, which ends it.

        Raises:
            RuntimeError: the episode has ended (solved, or out of turns): nothing more is run or paid.
        """
        if self.ended:
            raise RuntimeError("the episode has ended (solved, or out of turns): reset for a new one")
        self.step_count += 1
        self.ended = max_turns is not None and self.step_count >= max_turns
        return self.ended

    def pay(self, mode: RewardMode, graded: Graded) -> float:
        """The reward of submission ``graded`` in ``mode`` (see :func:`~.harness.reward_for`), recorded;
        a submission that solves the task ends the episode."""
        reward = reward_for(mode, graded, self.best_fraction, self.last_fraction)
        self.best_fraction = max(self.best_fraction, graded.fraction)
        self.last_fraction = graded.fraction
        self.ended = self.ended or graded.solved
        return reward


class CodingEnvironment(Environment[CodeAction, CodeObservation, CodingState]):
    """Python function-writing tasks with hidden tests, run in a sandbox (or free code execution).

    Args:
        mode: ``"tasks"`` (the default) or ``"free"`` (no task, no reward: OpenEnv's coding env).
        tasks: the task set: ``None`` for the 56 shipped tasks, a JSONL path, or
            ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl`` (see :func:`load_tasks`).
        difficulties: only tasks of these difficulties (``"easy"``, ``"medium"``, ``"hard"``);
            :func:`~.tasks.task_ids` lists the ids ``reset(options={"task_id": ...})`` takes.
        splits, split_seed, split: how the set is split, and the split resets draw from
            (``None``: all tasks); see :class:`~openenv_gym.server.TaskSet`.
        reward: ``"binary"`` (the default: 1 for the step that passes every test, else 0), the
            change in the ``"fraction"`` of tests passed since the previous step (an episode
            returns its last step's fraction), or the ``"improvement"`` of the fraction over the
            episode's best so far; none pays an episode more than 1, and none tells the agent more
            than how many tests passed (see :func:`~.harness.reward_for`).
        max_episode_steps: steps after which an unsolved episode is truncated (``None``: never).
        sandbox: ``"bubblewrap"`` (the default), or ``"none"`` to run agent code without a
            sandbox; only for trusted code, or when the server itself runs in a container.
        limits: :class:`~openenv_gym.sandbox.Limits` fields, such as ``{"wall_time": 5}``.

    Raises:
        SandboxUnavailableError: no sandbox mechanism here, and ``sandbox="none"`` not given.
        ValueError: a bad argument or task file.
    """

    action_type = CodeAction
    state_type = CodingState
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own sandbox
    blocking = True

    def __init__(
        self,
        mode: Literal["tasks", "free"] = "tasks",
        tasks: TaskSource = None,
        difficulties: list[str] | None = None,
        reward: RewardMode = DEFAULT_REWARD_MODE,
        max_episode_steps: int | None = DEFAULT_MAX_EPISODE_STEPS,
        sandbox: Literal["bubblewrap", "none"] = "bubblewrap",
        limits: dict[str, Any] | None = None,
        splits: dict[str, float] | None = None,
        split_seed: int = 0,
        split: str | None = None,
    ) -> None:
        if mode not in _MODES:
            raise choice_error("mode", mode, _MODES)
        check_episode_options(reward, max_episode_steps)
        self.mode = mode
        self.reward_mode = reward
        self.reward_composition = tests_composition(reward) if mode == "tasks" else None
        self.max_episode_steps = max_episode_steps
        self.limits = Limits(**(limits or {}))
        self.task_set: TaskSet[Task] | None = None
        if mode == "tasks":
            self.task_set = TaskSet(
                select_tasks(tasks, difficulties), splits=splits, split_seed=split_seed, split=split
            )
        self.observation_type = TaskObservation if mode == "tasks" else CodeObservation
        self.space_descriptions = _space_descriptions(mode, self.limits.output_limit)
        self._sandbox = task_sandbox(tasks, self.limits, sandbox)  # raises if no sandbox here
        self._rng = random.Random()
        self._task: Task | None = None
        self._state = CodingState()

    # --- Environment API ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CodeObservation:
        options = kwargs.get("options")
        if self.task_set is None and options:
            raise ValueError(f"free mode takes no reset options, got {sorted(options)}")
        if seed is not None:
            self._rng = random.Random(seed)
        task = self.task_set.pick(options, self._rng) if self.task_set is not None else None
        self._sandbox.start()
        self._state = CodingState(episode_id=episode_id or str(uuid.uuid4()))
        if task is None:
            return CodeObservation(reward=0.0)
        self._task = task
        self._state.task_id = self._task.task_id
        return TaskObservation(
            prompt=self._task.statement,
            tests_total=len(self._task.tests),
            reward=0.0,
            info={"task_id": self._task.task_id, "difficulty": self._task.difficulty},
        )

    def step(self, action: CodeAction) -> CodeObservation:
        if self.mode == "tasks" and self._task is None:
            raise RuntimeError("reset before the first step")
        truncated = self._state.take_turn(self.max_episode_steps)
        task = self._task
        if task is None:
            output = run_program(self._sandbox, action.code, self.limits.output_limit)
            return CodeObservation(
                stdout=output.stdout,
                stderr=output.stderr,
                exit_code=output.exit_code,
                reward=0.0,
                truncated=truncated,
                info={"timed_out": output.timed_out},  # no duration: info stays deterministic
            )
        graded = grade(self._sandbox, task, action.code, self.limits.output_limit)
        reward = self._state.pay(self.reward_mode, graded)
        output = graded.output
        return TaskObservation(
            prompt=task.statement,
            stdout=output.stdout,
            stderr=output.stderr,
            exit_code=output.exit_code,
            tests_passed=sum(graded.passed),
            tests_total=len(graded.passed),
            feedback=graded.feedback,
            reward=reward,
            done=graded.solved,
            truncated=truncated and not graded.solved,
            info={
                "timed_out": output.timed_out,
                "task_id": task.task_id,
                "difficulty": task.difficulty,
                "reward_components": {"tests": reward},
            },
        )

    @property
    def state(self) -> CodingState:
        return self._state

    def close(self) -> None:
        self._sandbox.close()

    def snapshot(self) -> bytes:
        """The episode: its task (by id), turns, scores so far and the generator that draws tasks.
        Nothing else lasts between steps: each runs a fresh program."""
        return episode_snapshot(self._rng, self._state)

    def restore(self, state: bytes) -> None:
        rng, episode, task, _ = restored_episode(state, CodingState, self.task_set.by_id if self.task_set else {})
        if (task is None) != (self.mode == "free"):
            raise SnapshotRefusedError(f"the snapshot is of an episode of the other mode (this env's is {self.mode!r})")
        self._sandbox.start()
        self._rng, self._state, self._task = rng, episode, task

    def parse_action(self, data: dict[str, Any]) -> CodeAction:
        """Accept OpenEnv's ``{"code": ...}`` and the Gymnasium wire form ``{"action": ...}`` of a Text action."""
        if "action" in data and "code" not in data:
            data = {**data, "code": data["action"]}
            del data["action"]
        return CodeAction.model_validate(data)

    def task_catalog(self) -> dict[str, Any] | None:
        return self.task_set.describe() if self.task_set is not None else None

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="coding_env",
            description=(
                "Write Python functions for hidden tests; code runs in a sandbox"
                if self.mode == "tasks"
                else "Run Python code in a sandbox; observe stdout, stderr and the exit code"
            ),
            version="0.1.0",
        )


def _space_descriptions(mode: str, output_limit: int) -> dict[str, Any]:
    """The Gymnasium spaces, as data (the server never imports gymnasium)."""

    def text(max_length: int) -> dict[str, Any]:
        return {"type": "Text", "min_length": 0, "max_length": max_length, "charset": string.printable}

    output = text(output_limit + OUTPUT_MARKER_ROOM)
    observation: dict[str, Any] = {
        "stdout": output,
        "stderr": output,
        "exit_code": {"type": "Discrete", "n": 384, "start": -128, "dtype": "int64"},
    }
    if mode == "tasks":
        observation = {
            "prompt": text(MAX_PROMPT_LENGTH + 64),
            **observation,
            "tests_passed": {"type": "Discrete", "n": MAX_TESTS + 1, "start": 0, "dtype": "int64"},
            "tests_total": {"type": "Discrete", "n": MAX_TESTS + 1, "start": 0, "dtype": "int64"},
            "feedback": text(FEEDBACK_LIMIT + OUTPUT_MARKER_ROOM),
        }
    return {"action": text(MAX_CODE_LENGTH), "observation": {"type": "Dict", "spaces": observation}}
