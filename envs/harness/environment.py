"""`HarnessEnvironment`: a real coding agent (mini-swe-agent...) runs the episode; each model call it
makes is one step, and the action is the model's reply.

:meth:`~HarnessEnvironment.reset` picks a task (Coding-v0's or Git-v0's: ``task_kind``, see
:mod:`.task_kinds`), prepares a workspace, starts the agent there
with its model API pointed at this env (:mod:`openenv_gym.server.model_endpoint`) and returns the
agent's first model call: ``{"messages", "tools", "params"}`` in OpenAI chat form, the request as the
agent sent it and its dialect in ``info`` (see :mod:`openenv_gym.protocol.model_calls`). Each
:meth:`~HarnessEnvironment.step` answers that call with the action (an assistant message
``{"content", "tool_calls"}``, or text), in the agent's own dialect, and returns the agent's next call.

The episode terminates when the agent exits: the reward is then the task's grader on the workspace
as the agent left it, run in the grader's sandbox, paid once: Coding's hidden tests on the file the
prompt names (:data:`SOLUTION_FILE`: 1 for a solution, else 0), or Git's checks of the repository
(the fraction that pass). It is truncated, unpaid, when the agent asks for more than ``max_calls``
replies or the episode's ``time_limit_s`` runs out. An agent that leaves a process running behind it
earns nothing. The agent's processes are killed and its workspace removed at the next reset and at close.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import shutil
import string
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, JsonValue

from openenv_gym.errors import ModelCallError
from openenv_gym.protocol.harness_turns import Model
from openenv_gym.sandbox import Limits, SandboxUnavailableError, find_bwrap
from openenv_gym.server.environment import Action, Environment, EnvironmentMetadata, Observation, State
from openenv_gym.server.model_endpoint import PendingCall
from openenv_gym.server.task_sets import TaskSet, TaskSource, choice_error

from .agent_run import AgentRun
from .agents import agent_launch
from .task_kinds import SOLUTION_FILE, TASK_KINDS
from .turns import turn_events

__all__ = ["SOLUTION_FILE", "HarnessEnvironment", "HarnessState", "ModelCallObservation", "ReplyAction"]

DEFAULT_MAX_CALLS = 30
DEFAULT_TIME_LIMIT_S = 900.0
DEFAULT_REPLY_TIMEOUT_S = 600.0
#: The longest call an observation carries (an agent sends its whole history in each), and the longest
#: reply an action does, as JSON text.
MAX_CALL_TEXT = 8 * 1024 * 1024
MAX_REPLY_TEXT = 1024 * 1024
#: Spaces as data (the server never imports gymnasium): Text both ways, as a tool env's, the action the
#: reply's text or its assistant message as JSON text.
SPACES: dict[str, Any] = {
    "action": {"type": "Text", "min_length": 0, "max_length": MAX_REPLY_TEXT, "charset": string.printable},
    "observation": {"type": "Text", "min_length": 0, "max_length": MAX_CALL_TEXT, "charset": string.printable},
}


class ReplyAction(Action):
    """The model's reply to the pending call: text, tool calls or both (see :mod:`openenv_gym.protocol.model_calls.forms`)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None

    def reply(self) -> dict[str, Any]:
        """The reply as :func:`~openenv_gym.protocol.model_calls.answer` takes it."""
        return self.model_dump(exclude={"metadata"}, exclude_none=True)


#: What the observation's JSON schema (``GET /schema``) says of its text: JSON holding a model call in
#: OpenAI chat form. The web page shows such an env's episodes as the conversation.
MODEL_CALL_CONTENT: dict[str, JsonValue] = {"contentMediaType": "application/json", "x-content": "model_call"}


class ModelCallObservation(Observation):
    """The agent's pending model call, ``{"messages", "tools", "params"}`` as JSON text (``""`` once the
    episode has ended): text, as a tool env's observation is, since Gymnasium has no space for free-form
    JSON; its escapes keep it printable ASCII, so it fits a ``Text`` space."""

    observation: str = Field(default="", json_schema_extra=MODEL_CALL_CONTENT)


class HarnessState(State):
    """The episode's task, the calls answered (``step_count``), and how it ended."""

    task_id: str | None = None
    agent: str = ""
    ended: bool = False
    end: str | None = None


class HarnessEnvironment(Environment[ReplyAction, ModelCallObservation, HarnessState]):
    """Coding or Git tasks solved by a real agent whose model calls are the steps.

    Args:
        agent: the agent to run (see :data:`.agents.AGENTS`): ``"mini-swe-agent"``.
        task_kind: whose tasks and grader (:data:`.task_kinds.TASK_KINDS`): ``"coding"`` (the
            default, openenv/Coding-v0's) or ``"git"`` (openenv/Git-v0's).
        tasks, difficulties, splits, split_seed, split: the task set of that kind (see
            :class:`~envs.coding.CodingEnvironment`, :class:`~envs.git.GitEnvironment`).
        max_calls: replies an episode gives; the agent's next call truncates it.
        time_limit_s: seconds from reset after which the episode is truncated (the policy's time too).
        reply_timeout_s: seconds each of the agent's calls waits for a step before the agent is
            answered with a 504.
        sandbox: the grader's sandbox: ``"bubblewrap"`` (the default) or ``"none"``.
        agent_sandbox: ``"bubblewrap"`` (the default) confines the agent (:mod:`.agent_sandbox`: no
            network but its model endpoint, the task files hidden), ``"none"`` runs it on the
            host as the server's user: only for a trusted agent and policy.
        limits: :class:`~openenv_gym.sandbox.Limits` fields of the grader's runs.

    Raises:
        ValueError: an unknown agent or task kind, or a bad limit or task file.
        SandboxUnavailableError: no sandbox mechanism here, and ``sandbox="none"`` not given.
    """

    action_type = ReplyAction
    observation_type = ModelCallObservation
    state_type = HarnessState
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own agent, endpoint and workspace
    blocking = True
    space_descriptions = SPACES

    def __init__(
        self,
        agent: str = "mini-swe-agent",
        task_kind: str = "coding",
        tasks: TaskSource = None,
        difficulties: list[str] | None = None,
        max_calls: int = DEFAULT_MAX_CALLS,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
        reply_timeout_s: float = DEFAULT_REPLY_TIMEOUT_S,
        sandbox: Literal["bubblewrap", "none"] = "bubblewrap",
        agent_sandbox: Literal["bubblewrap", "none"] = "bubblewrap",
        limits: dict[str, Any] | None = None,
        splits: dict[str, float] | None = None,
        split_seed: int = 0,
        split: str | None = None,
    ) -> None:
        if max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {max_calls}")
        if time_limit_s <= 0 or reply_timeout_s <= 0:
            raise ValueError("time_limit_s and reply_timeout_s must be positive")
        self.launch = agent_launch(agent)
        self.max_calls = max_calls
        self.time_limit_s = float(time_limit_s)
        self.reply_timeout_s = float(reply_timeout_s)
        self.limits = Limits(**(limits or {}))
        if task_kind not in TASK_KINDS:
            raise choice_error("task_kind", task_kind, tuple(TASK_KINDS))
        if agent_sandbox not in ("bubblewrap", "none"):
            raise choice_error("agent_sandbox", agent_sandbox, ("bubblewrap", "none"))
        self._bwrap = find_bwrap() if agent_sandbox == "bubblewrap" else None
        if agent_sandbox == "bubblewrap" and self._bwrap is None:
            raise SandboxUnavailableError(
                "no bubblewrap here to confine the agent: install it, or pass agent_sandbox='none'"
            )
        # The grader's sandbox starts here: it raises if there is no sandbox mechanism.
        self.kind = TASK_KINDS[task_kind](
            tasks, difficulties, self.limits, sandbox, splits=splits, split_seed=split_seed, split=split
        )
        self.task_set: TaskSet[Any] = self.kind.task_set
        self._rng = random.Random()
        self._task: Any = None
        self._run: AgentRun | None = None
        self._pending: PendingCall | None = None
        self._deadline = 0.0
        self._state = HarnessState()

    # --- Environment API ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ModelCallObservation:
        self._stop_run()
        if seed is not None:
            self._rng = random.Random(seed)
        task = self.task_set.pick(kwargs.get("options"), self._rng)
        self._task = task
        self._state = HarnessState(
            episode_id=episode_id or str(uuid.uuid4()), task_id=task.task_id, agent=self.launch.name
        )
        self._deadline = time.monotonic() + self.time_limit_s
        self._run = AgentRun(
            self.launch,
            self.kind.prompt(task),
            self.reply_timeout_s,
            self._bwrap,
            self.kind.hidden_paths,
            variables=self.kind.variables,
            prepare=lambda workspace: self.kind.prepare(task, workspace),
        )
        return self._next_observation()

    def step(self, action: ReplyAction) -> ModelCallObservation:
        if self._state.ended or self._run is None or self._pending is None:
            raise RuntimeError("the episode has ended (the agent exited, or a limit was reached): reset for a new one")
        self._run.endpoint.reply(self._pending, action.reply())  # a reply that cannot be written raises here
        self._pending = None
        self._state.step_count += 1
        return self._next_observation()

    @property
    def state(self) -> HarnessState:
        return self._state

    # --- OpenEnv's turn-based harness (/harness) -----------------------------------------------

    @property
    def harness_name(self) -> str:
        """The agent, as ``/harness``'s ``session_started`` names it."""
        return self.launch.name

    def run_turn(self, prompt: str, model: Model) -> Iterator[dict[str, Any]]:
        """One turn of OpenEnv's ``/harness`` socket (:mod:`.turns`): the agent works on ``prompt`` in a
        copy of the workspace the last turn left (an empty one at first), each of its calls answered by
        ``model``; the turn's events as they happen, ``turn_complete`` last. Nothing is graded. It ends
        the episode in progress, if any."""
        previous = self._run
        carry = None if previous is None else functools.partial(_carry_workspace, previous.workspace)
        run = AgentRun(
            self.launch,
            prompt,
            self.reply_timeout_s,
            self._bwrap,
            self.kind.hidden_paths,
            variables=self.kind.variables,
            prepare=carry,
        )
        self._stop_run()
        self._run, self._task = run, None
        self._state = HarnessState(episode_id=str(uuid.uuid4()), agent=self.launch.name)
        return turn_events(run, model, time.monotonic() + self.time_limit_s, self.max_calls)

    @property
    def agent_run(self) -> AgentRun | None:
        """The episode's agent, its workspace and endpoint (``None`` before the first reset and after close)."""
        return self._run

    def close(self) -> None:
        self._stop_run()
        self.kind.close()

    def parse_action(self, data: dict[str, Any]) -> ReplyAction:
        """Accept the reply's fields (an OpenEnv client's step), and the Gymnasium wire form
        ``{"action": text}``: the assistant message as JSON text, or else the reply's plain text."""
        if set(data) - {"metadata"} == {"action"}:
            data = _message_of_text(data["action"])
        return ReplyAction.model_validate({key: value for key, value in data.items() if key != "role"})

    def task_catalog(self) -> dict[str, Any] | None:
        return self.task_set.describe()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="harness_env",
            description=f"Coding or Git tasks solved by {self.launch.name}; each of its model calls is a step",
            version="0.1.0",
        )

    # --- the episode ---------------------------------------------------------------------------

    def _next_observation(self) -> ModelCallObservation:
        """The agent's next call, or the episode's end (the agent exited, or a limit ran out)."""
        assert self._run is not None and self._task is not None
        try:
            pending = self._run.next_call(self._deadline)
        except TimeoutError:
            return self._end("time_limit")
        if pending is None:
            return self._end("agent_exited")
        if self._state.step_count >= self.max_calls:
            return self._end("call_limit")
        if time.monotonic() >= self._deadline:  # the policy's own time ran it out
            return self._end("time_limit")
        self._pending = pending
        return ModelCallObservation(
            observation=json.dumps(pending.call.observation, separators=(",", ":")),
            reward=0.0,
            info={**pending.call.info(), "task_id": self._task.task_id, "agent": self.launch.name},
        )

    def _end(self, end: Literal["agent_exited", "call_limit", "time_limit"]) -> ModelCallObservation:
        """End the episode: grade the workspace if the agent exited, then stop everything it left running."""
        assert self._run is not None and self._task is not None
        run = self._run
        exit_code = run.exit_code
        left_running = exit_code is not None and run.left_running()
        run.stop_agent()
        info: dict[str, Any] = {"task_id": self._task.task_id, "agent": self.launch.name, "end": end}
        info["agent_exit_code"] = exit_code
        info["left_processes_running"] = left_running
        reward = 0.0
        if end == "agent_exited":
            graded, facts = self.kind.grade(self._task, run.workspace)
            info.update(facts)
            reward = 0.0 if left_running else graded
        info["agent_log"] = run.log_tail()
        self._state.ended, self._state.end = True, end
        return ModelCallObservation(
            reward=reward, done=end == "agent_exited", truncated=end != "agent_exited", info=info
        )

    def _stop_run(self) -> None:
        if self._run is not None:
            self._run.close()
        self._run, self._pending = None, None


def _carry_workspace(previous: Path, workspace: Path) -> None:
    """Fill ``workspace`` with what the last turn's agent left in ``previous``: its files, directories
    and symbolic links (as links); a pipe or device it made is left out (opening one would block)."""

    def special(directory: str, names: list[str]) -> list[str]:
        return [name for name in names if _is_special(Path(directory, name))]

    shutil.copytree(previous, workspace, symlinks=True, dirs_exist_ok=True, ignore=special)


def _is_special(path: Path) -> bool:
    return not (path.is_symlink() or path.is_file() or path.is_dir())


def _message_of_text(text: Any) -> dict[str, Any]:
    """The reply a Text action holds: an assistant message's JSON, or plain text."""
    if not isinstance(text, str):
        raise ModelCallError(f"a Text action is a string, got {type(text).__name__}")
    if text.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            message = json.loads(text)
            if isinstance(message, dict) and message.keys() & {"content", "tool_calls"}:
                return message
    return {"content": text}
