"""`GitEnvironment`: an agent works in a git repository through tools; checks of the repository give the reward.

:meth:`~GitEnvironment.reset` picks a task (``options={"task_id": ...}``, else one drawn by the
seed), starts a fresh sandbox and runs the task's setup there, which builds the repository in the
sandbox's workspace; the observation's ``prompt`` is the task and a word on the tools. Then every
tool call is one turn:

- ``run(command)``: a bash command in the repository (git and the usual tools, no network); its
  stdout, stderr and exit code. Files, commits and branches stay from call to call.
- ``read_file(path)``, ``write_file(path, content)``: a file of the work tree, by a path relative
  to it; a path that leaves the work tree (absolute, ``..``, a symbolic link out of it) is refused,
  and so is writing into ``.git`` (git's files change through git).
- ``submit()``: the task's checks run on a copy of the repository, with git hardened
  (:mod:`.sandbox_program`); the reward is the fraction that pass, and the episode ends. The
  agent is told how many passed, never which nor what they printed (the checks are hidden, as a
  Coding task's tests are); the server keeps that for its operator (:attr:`GitEnvironment.last_verdict`).

The episode is truncated after its task's ``max_turns`` calls, or the env's ``max_turns``. When it
ends, its sandbox is closed, and the repository (which lives only in the sandbox's memory) with
it. Everything touching the repository runs in the sandbox, the verifier too: the server never
runs git, so nothing the agent leaves in the repository (hooks, config) can run outside it.

On the wire (OpenEnv's tool actions)::

    -> {"type":"step","data":{"type":"call_tool","tool_name":"run","arguments":{"command":"git status"}}}
    <- {"type":"observation","data":{"observation":{"tool_name":"run","result":{"content":[...],
        "structured_content":{"stdout":"On branch main\\n...","stderr":"","exit_code":0,"timed_out":false},...},
        "error":null},"reward":null,...}}
"""

from __future__ import annotations

import dataclasses
import functools
import random
import threading
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from openenv_gym.rewards import Composition, RewardPart
from openenv_gym.sandbox import Limits, RunResult, Sandbox
from openenv_gym.server.environment import Action, Environment, EnvironmentMetadata, Observation, State
from openenv_gym.server.task_sets import TaskSet, TaskSource, episode_snapshot, hidden_task_files, restored_episode
from openenv_gym.server.tools import DEFAULT_TOOL_TIMEOUT, MAX_TOOL_RESULT_BYTES, ToolResult, tool

from . import sandbox_program, shell
from .tasks import BUILTIN_TASKS, GitTask, select_tasks

__all__ = [
    "AUTHOR_EMAIL",
    "AUTHOR_NAME",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_TOOL_TIMEOUT_S",
    "FIXED_DATE",
    "SETUP_TIMEOUT_S",
    "GitEnvironment",
    "GitObservation",
    "GitState",
    "Verdict",
    "command_env",
    "path_problem",
]

#: Tool calls an episode may take when its task sets no ``max_turns``, as the manifest says.
DEFAULT_MAX_TURNS = 30
_VERIFIER_ROOM = 16 * 2**20  # bytes of scratch space beyond a full workspace's copy
#: Seconds one tool call may take: the sandbox's default wall-clock limit (10 s) plus room.
DEFAULT_TOOL_TIMEOUT_S = DEFAULT_TOOL_TIMEOUT
#: Seconds a task's setup may take to build its repository.
SETUP_TIMEOUT_S = 30.0
#: The identity and date of every commit, the setup's and the agent's: the same commit ids every run.
AUTHOR_NAME = "Ada Lovelace"
AUTHOR_EMAIL = "ada@example.com"
FIXED_DATE = "2024-01-01T12:00:00Z"
MAX_COMMAND_LENGTH = 65536
MAX_PATH_LENGTH = 4096
MAX_CONTENT_LENGTH = 2**20
_WORK_TREE = "repo"  # the work tree's name in the workspace; its parent is the task's too (a remote may live there)

Command = Annotated[str, Field(max_length=MAX_COMMAND_LENGTH)]
FilePath = Annotated[str, Field(max_length=MAX_PATH_LENGTH)]
Content = Annotated[str, Field(max_length=MAX_CONTENT_LENGTH)]


class GitObservation(Observation):
    """What a reset shows: the task and the tools (tool calls answer with their results)."""

    prompt: str = ""


class GitState(State):
    """The episode's task, its turn limit, and its score once submitted."""

    task_id: str | None = None
    max_turns: int | None = None
    score: float | None = None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A submission's checks as the server saw them: for the operator (logs, debugging a task set),
    never sent to the client, whose result says only how many passed.

    Attributes:
        task_id: the episode's task.
        names: each check's name, in the task's order.
        passed: whether each passed.
        outputs: the end of what each printed (a failing check's reason, the verifier's notes).
    """

    task_id: str
    names: tuple[str, ...]
    passed: tuple[bool, ...]
    outputs: tuple[str, ...]


@functools.cache
def _source(module: Any) -> str:
    """A module run in the sandbox: its source, read once."""
    return Path(module.__file__).read_text(encoding="utf-8")


class GitEnvironment(Environment[Action, GitObservation, GitState]):
    """Tasks in a git repository (resolve a conflict, split a commit, recover a branch) for a tool-calling agent.

    Args:
        tasks: the task set: ``None`` for the shipped tasks, a JSONL path, or
            ``hf://datasets/ORG/NAME[@REVISION]/PATH.jsonl`` (see :func:`~.tasks.load_tasks`).
        difficulties: only tasks of these difficulties (``"easy"``, ``"medium"``, ``"hard"``).
        splits, split_seed, split: how the set is split, and the split resets draw from
            (``None``: all tasks); see :class:`~openenv_gym.server.TaskSet`.
        max_turns: tool calls after which an episode whose task sets no ``max_turns`` is
            truncated (``None``: never); a task's own ``max_turns`` wins.
        tool_timeout_s: seconds a tool call may take before it is answered with a ``timeout``
            error (a call's own ``timeout_s`` overrides it); more than ``limits``' ``wall_time``,
            which stops each command inside the sandbox.
        sandbox: ``"bubblewrap"`` (the default), or ``"none"`` to run the agent's commands
            without a sandbox; only for trusted agents, or when the server runs in a container.
        limits: :class:`~openenv_gym.sandbox.Limits` fields of each command, such as
            ``{"wall_time": 5}``; ``workspace_size`` bounds the repository and its files.
        spare_sandboxes: sandboxes the server keeps started and idle, ready for a reset or a
            restore to take instead of starting one (about 60 ms each, on 2 cores; a fork(8)
            restores 8 at once): ``gym.make("openenv/Git-v0", spare_sandboxes=8)``. Shared by
            every session of the server with the same sandbox settings (the largest number asked
            for wins), refilled in the background; each is an idle bubblewrap and Python worker
            (about 11 MB). ``0`` (the default): none.

    Raises:
        SandboxUnavailableError: no sandbox mechanism here, and ``sandbox="none"`` not given.
        ValueError: a bad argument or task file.
    """

    observation_type = GitObservation
    state_type = GitState
    reward_composition = Composition(
        (RewardPart("checks", 1.0, description="the fraction of the task's checks the submitted repository passes"),)
    )
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own sandbox
    blocking = True

    def __init__(
        self,
        tasks: TaskSource = None,
        difficulties: list[str] | None = None,
        max_turns: int | None = DEFAULT_MAX_TURNS,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        sandbox: Literal["bubblewrap", "none"] = "bubblewrap",
        limits: dict[str, Any] | None = None,
        spare_sandboxes: int = 0,
        splits: dict[str, float] | None = None,
        split_seed: int = 0,
        split: str | None = None,
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if spare_sandboxes < 0:
            raise ValueError(f"spare_sandboxes must be 0 or more, got {spare_sandboxes}")
        limits = dict(limits or {})
        workspace_size = limits.get("workspace_size", Limits.workspace_size)
        # The verifier copies the whole workspace into the scratch directory, and fails closed when
        # the copy is short: so the scratch directory holds a full workspace and then some.
        limits.setdefault("scratch_size", max(Limits.scratch_size, workspace_size + _VERIFIER_ROOM))
        self.limits = Limits(**limits)
        if not tool_timeout_s > self.limits.wall_time:
            # A call cut off before its run ends leaves the sandbox busy: the next call would wait.
            raise ValueError(
                f"tool_timeout_s ({tool_timeout_s:g} s) must be more than the sandbox's wall_time "
                f"({self.limits.wall_time:g} s), which ends each command inside a call"
            )
        self.tool_timeout_s = float(tool_timeout_s)
        # Two capped streams, each at most sextupled by JSON's escapes, and room for the rest.
        self.max_tool_result_bytes = max(MAX_TOOL_RESULT_BYTES, 8 * self.limits.output_limit)
        self.max_turns = max_turns
        self.task_set = TaskSet(select_tasks(tasks, difficulties), splits=splits, split_seed=split_seed, split=split)
        self._sandbox = Sandbox(
            self.limits,
            mechanism=sandbox,
            hidden_paths=hidden_task_files(tasks, BUILTIN_TASKS),
            workspace=True,
            spares=spare_sandboxes,
        )
        self._rng = random.Random()
        self._task: GitTask | None = None
        self._state = GitState()
        #: The checks of this episode's submission, one by one (``None`` before it): the server's alone.
        self.last_verdict: Verdict | None = None
        self._ended = True  # no episode yet
        self._restarts = 0  # the sandbox's restarts when the episode began: another means the repository is lost
        # One call at a time, including one the session gave up on at its time limit: its
        # effects land before the next call's.
        self._lock = threading.Lock()

    # --- Environment API ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GitObservation:
        """Pick a task (by ``options``, else one drawn by ``seed``: see :meth:`TaskSet.pick`), build its repository, and show it.

        Raises:
            RuntimeError: the task's setup failed (a fault of the task set; its output says why).
        """
        with self._lock:
            if seed is not None:
                self._rng = random.Random(seed)
            task = self.task_set.pick(kwargs.get("options"), self._rng)
            # A fresh sandbox per episode: a new, empty workspace, and nothing of the last episode left.
            self._sandbox.close()
            self._sandbox.start()
            self._restarts = self._sandbox.restarts
            built = self._call(
                "run_bash", task.setup, self._work_tree(), self._base_env(), True, timeout=SETUP_TIMEOUT_S
            )
            if built.exit_code != 0 or self._lost():
                self._sandbox.close()
                self._ended, self._task = True, None
                raise RuntimeError(
                    f"the setup of task {task.task_id!r} failed (exit status {built.exit_code}):\n"
                    f"{(built.stdout + built.stderr)[-2000:]}"
                )
            self._task, self._ended, self.last_verdict = task, False, None
            self._state = GitState(
                episode_id=episode_id or str(uuid.uuid4()), task_id=task.task_id, max_turns=self._turn_limit(task)
            )
        return GitObservation(
            prompt=self._prompt(task), reward=0.0, info={"task_id": task.task_id, "difficulty": task.difficulty}
        )

    def step(self, action: Action) -> GitObservation:
        """Not used: the agent acts through the tools."""
        raise NotImplementedError(_TOOLS_ONLY)

    @property
    def state(self) -> GitState:
        return self._state

    def close(self) -> None:
        self._ended = True
        self._sandbox.close()

    def snapshot(self) -> bytes:
        """The episode (task by id, turns, score, task draws) and, while it runs, its workspace: the
        repository and every file beside it, as the sandbox's worker copies its tmpfs (a tar in
        memory, made between calls: :meth:`Sandbox.save_workspace`)."""
        with self._lock:
            running = not self._ended and self._task is not None
            try:
                workspace = self._sandbox.save_workspace() if running else b""
            except RuntimeError as exc:
                if self._sandbox.pid is None or self._lost():  # the worker was stopped, and the repository with it
                    self._end()
                    raise NotImplementedError(
                        f"the episode's workspace was lost while it was copied ({exc}): the episode has ended"
                    ) from exc
                raise NotImplementedError(f"the episode's workspace cannot be copied now: {exc}") from exc
            header = episode_snapshot(self._rng, self._state, {"ended": self._ended, "workspace": running})
            return header + b"\n" + workspace

    def restore(self, state: bytes) -> None:
        """Back into a snapshot's episode: a fresh sandbox, its workspace unpacked into it."""
        header, _, workspace = state.partition(b"\n")
        rng, episode, task, extra = restored_episode(header, GitState, self.task_set.by_id)
        with self._lock:
            self._ended, self._task, self.last_verdict = True, None, None  # until the workspace is back
            self._sandbox.close()
            if extra.get("workspace"):
                self._sandbox.start()
                self._sandbox.load_workspace(workspace)
                self._restarts = self._sandbox.restarts
            self._rng, self._state, self._task = rng, episode, task
            self._ended = bool(extra.get("ended"))

    def parse_action(self, data: dict[str, Any]) -> Action:
        """Refuse any action that is not a tool call (those never reach here)."""
        raise ValueError(_TOOLS_ONLY)

    def task_catalog(self) -> dict[str, Any]:
        return self.task_set.describe()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="git_env",
            description="Work in a git repository with tools (run, read_file, write_file, submit); "
            "checks of the final repository give the reward; commands run in a bubblewrap sandbox",
            version="0.1.0",
        )

    # --- Tools -------------------------------------------------------------------------------

    @tool
    def run(self, command: Command) -> ToolResult:
        """Run a bash command in the repository and return its stdout, stderr and exit code.

        The repository is the command's working directory; git and the usual command-line tools
        are there, the network is not. Files, commits and branches stay from one call to the
        next (the shell's variables and working directory do not). A command that takes too long
        is killed (timed_out is then true).

        Args:
            command: the bash command (or script) to run, such as "git status".
        """
        with self._lock:
            last = self._turn()
            result = self._call("run_bash", command, self._work_tree(), self._base_env(), False)
            return self._answer(_output(result), last)

    @tool
    def read_file(self, path: FilePath) -> ToolResult:
        """Return the text of a file of the repository.

        Args:
            path: the file's path relative to the repository, such as "src/app.py".
        """
        with self._lock:
            last = self._turn()
            problem = path_problem(path, writing=False)
            if problem is not None:
                return self._answer(problem, last, is_error=True)
            result = self._call("read_file", self._work_tree(), path, self.limits.output_limit)
            reply = _reply(result)
            if "content" in reply and isinstance(reply["content"], str):
                return self._answer(reply["content"], last)
            return self._answer(str(reply.get("error", "the file could not be read")), last, is_error=True)

    @tool
    def write_file(self, path: FilePath, content: Content) -> ToolResult:
        """Write a file of the repository (replacing it if it exists; its directories are made).

        Git's own files (under .git) are not written this way: change them with git commands.

        Args:
            path: the file's path relative to the repository, such as "src/app.py".
            content: the file's whole new text.
        """
        with self._lock:
            last = self._turn()
            problem = path_problem(path, writing=True)
            if problem is not None:
                return self._answer(problem, last, is_error=True)
            result = self._call("write_file", self._work_tree(), path, content)
            reply = _reply(result)
            if isinstance(reply.get("bytes"), int):
                return self._answer(f"wrote {reply['bytes']} bytes to {path}", last)
            return self._answer(str(reply.get("error", "the file could not be written")), last, is_error=True)

    @tool
    def submit(self) -> ToolResult:
        """Submit the repository as it is: the task's checks run on it, and the episode ends.

        The reward is the fraction of the checks that pass; the result says how many passed.
        """
        with self._lock:
            task = self._task
            self._turn()
            assert task is not None  # _turn raises before a reset
            checks = [check.run for check in task.checks]
            workspace, scratch = self._sandbox.workspace_dir, self._sandbox.scratch_dir
            assert workspace is not None and scratch is not None  # the sandbox runs while an episode does
            budget = 0.9 * self.limits.wall_time  # the rest: room for the copy and the reply
            # The worker copies the workspace first, as root where the server is: the checks then
            # see every file the agent's commands left, whatever modes they gave them.
            snapshot = (workspace, f"{scratch}/{sandbox_program.VERIFY_COPY}")
            args = (workspace, self._work_tree(), scratch, checks, self._base_env(), budget)
            result = self._call("verify", *args, snapshot=snapshot)
            outcomes = _outcomes(result, len(checks))
            if self._lost():  # the worker was replaced: the checks saw a new, empty workspace
                outcomes = [{"passed": False, "output": _LOST}] * len(checks)
            passed = [outcome["passed"] for outcome in outcomes]
            score = sum(passed) / len(passed)
            self._state.score = score
            self._end()
            self.last_verdict = Verdict(
                task_id=task.task_id,
                names=tuple(check.name for check in task.checks),
                passed=tuple(passed),
                outputs=tuple(outcome["output"] for outcome in outcomes),
            )
            return ToolResult(
                {"checks_passed": sum(passed), "checks_total": len(passed)},
                reward=score,
                done=True,
                info={"reward_components": {"checks": score}},
                metadata={"task_id": task.task_id},
            )

    # --- internals ---------------------------------------------------------------------------

    def _turn(self) -> bool:
        """Count a tool call; return whether it is the episode's last turn."""
        if self._task is None:
            raise RuntimeError("reset before the first tool call")
        if self._ended:
            raise RuntimeError("the episode has ended (submitted, or out of turns): reset for a new one")
        self._state.step_count += 1
        limit = self._state.max_turns
        return limit is not None and self._state.step_count >= limit

    def _call(
        self, entry_point: str, *args: Any, timeout: float | None = None, snapshot: tuple[str, str] | None = None
    ) -> RunResult:
        """Run a function of :mod:`.shell` (``run_bash``) or :mod:`.sandbox_program` in the sandbox, on ``args``
        (``snapshot``: see :meth:`Sandbox.run <openenv_gym.sandbox.Sandbox.run>`)."""
        program = shell if entry_point == "run_bash" else sandbox_program
        return self._sandbox.run(
            _source(program), entry_point=entry_point, cases=[list(args)], timeout=timeout, snapshot=snapshot
        )

    def _lost(self) -> bool:
        """Whether the sandbox had to be replaced during the episode: its workspace, the repository, is gone."""
        return self._sandbox.restarts != self._restarts

    def _answer(self, value: Any, last: bool, *, is_error: bool = False) -> ToolResult:
        """A tool call's result: the episode ends on its last turn, or when the sandbox (and the repository) was lost."""
        if self._lost():
            self._end()
            return ToolResult(_LOST, truncated=True, is_error=True)
        if last:
            self._end()
        return ToolResult(value, truncated=last, is_error=is_error)

    def _end(self) -> None:
        self._ended = True
        self._sandbox.close()  # the workspace, and the repository in it, go with the sandbox

    def _work_tree(self) -> str:
        workspace = self._sandbox.workspace_dir
        assert workspace is not None  # the sandbox runs while an episode does
        return f"{workspace}/{_WORK_TREE}"

    def _base_env(self) -> dict[str, str]:
        scratch = self._sandbox.scratch_dir
        assert scratch is not None  # the sandbox runs while an episode does
        return command_env(scratch)

    def _turn_limit(self, task: GitTask) -> int | None:
        return task.max_turns if task.max_turns is not None else self.max_turns

    def _prompt(self, task: GitTask) -> str:
        limit = self._turn_limit(task)
        turns = f" You have {limit} tool calls." if limit is not None else ""
        return (
            f"{task.prompt}\n\n"
            "You are in the repository: it is the working directory of every command. Use the tools: "
            "run(command) runs a bash command there (git and the usual tools; no network); "
            "read_file(path) and write_file(path, content) read and write a file, its path relative to the "
            "repository; submit() checks the repository as you leave it and ends the episode." + turns
        )


def command_env(scratch: str) -> dict[str, str]:
    """The environment of a setup and of the agent's commands, given the sandbox's scratch directory.

    A fixed identity and date (the same commit ids every run), ``HOME`` empty (the scratch
    directory is emptied after every run), no system config, no prompts, no pager; an editor
    that keeps the text it is given, so `git merge` keeps its message and a `git commit`
    without ``-m`` stops for want of one. The verifier hardens this further
    (:func:`.sandbox_program.hardened_env`).
    """
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HOME": f"{scratch}/home",
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": "true",
    }


def path_problem(path: str, *, writing: bool) -> str | None:
    """Why ``path`` cannot name a file of the work tree for ``read_file`` (or ``write_file``), or ``None``.

    Example:
        >>> path_problem("src/app.py", writing=True) is None
        True
        >>> path_problem("../secret", writing=False)
        "'../secret' leaves the repository ('..'): give a path inside it, relative to it"
    """
    if not path or not path.strip():
        return "the path is empty: give a file's path relative to the repository, such as 'README.md'"
    if "\0" in path:
        return "the path holds a NUL character"
    if path.startswith("/"):
        return f"{path!r} is an absolute path: give a path relative to the repository, such as 'src/app.py'"
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return f"{path!r} leaves the repository ('..'): give a path inside it, relative to it"
    if not parts:
        return f"{path!r} is the repository itself, not a file in it"
    if writing and ".git" in parts:
        return f"{path!r} is inside .git: change git's own files with git commands (run)"
    if writing and path.endswith("/"):
        return f"{path!r} names a directory, not a file"
    return None


_LOST = "The sandbox stopped and was replaced, and the repository with it: the episode ends."
_TOOLS_ONLY = (
    'this environment is driven by its tools: send {"type": "call_tool", "tool_name": "run", '
    '"arguments": {"command": "git status"}} (or "read_file", "write_file", "submit"), or {"type": "list_tools"}'
)


def _output(result: RunResult) -> dict[str, Any]:
    """A command's output; the sandbox has capped each stream at ``Limits.output_limit`` bytes."""
    return {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
    }


def _reply(result: RunResult) -> dict[str, Any]:
    """The value one of the program's functions returned, or the error of a run that returned none."""
    if result.results and isinstance(result.results[0].get("value"), dict):
        value: dict[str, Any] = result.results[0]["value"]
        return value
    if result.timed_out:
        return {"error": "the sandbox ran out of time"}
    raised = result.results[0].get("error") if result.results else None
    return {"error": f"the sandbox run failed: {raised or (result.stderr or result.stdout)[-500:]}"}


def _outcomes(result: RunResult, count: int) -> list[dict[str, Any]]:
    """Each check's ``{"passed", "output"}`` from the verifier's run; all failed if it returned no whole list."""
    value = result.results[0].get("value") if result.results else None
    if (
        isinstance(value, list)
        and len(value) == count
        and all(isinstance(item, dict) and isinstance(item.get("passed"), bool) for item in value)
    ):
        return [{"passed": item["passed"], "output": str(item.get("output", ""))} for item in value]
    raised = result.results[0].get("error") if result.results else None
    if result.timed_out:
        why = "it ran out of time"
    else:
        why = "\n".join(str(part)[-1000:] for part in (raised, result.stderr or result.stdout) if part)
    return [{"passed": False, "output": f"[verifier] the checks did not complete: {why}"}] * count
