"""A local runner of openenv/Git-v0 tasks, for the tests of the task data only.

It does what the environment's sandbox does, minus the confinement: build the repository with the
task's setup in an empty directory, apply an agent's tool calls there, then run every check. The real
environment runs the same data through its sandbox; this runner is only a fast check that each
task's solution, near miss and do-nothing submit score what they should.

    >>> import json
    >>> task = {
    ...     "setup": "git init -q -b main\\necho hi > a.txt\\ngit add a.txt\\ngit commit -q -m 'Add a'",
    ...     "checks": [{"name": "tagged", "run": "git rev-parse -q --verify refs/tags/v1"}],
    ... }
    >>> run_task(task, []).score
    0.0
    >>> run_task(task, [{"tool": "run", "arguments": {"command": "git tag v1"}}]).score
    1.0
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CheckResult",
    "TaskRun",
    "git_env",
    "repository_fingerprint",
    "run_calls",
    "run_checks",
    "run_setup",
    "run_task",
]

AUTHOR_NAME = "Ada Lovelace"
AUTHOR_EMAIL = "ada@example.com"
FIXED_DATE = "2024-01-01T12:00:00Z"
STANDARD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CALL_TIMEOUT = 30.0
CHECK_TIMEOUT = 15.0
STRICT_BASH = ("bash", "-euo", "pipefail", "-c")


@dataclass
class CheckResult:
    name: str
    passed: bool
    output: str


@dataclass
class TaskRun:
    """The outcome of one episode: the reward, each check's result and each tool call's output."""

    score: float
    checks: list[CheckResult]
    outputs: list[str] = field(default_factory=list)

    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]


def git_env(home: Path) -> dict[str, str]:
    """The environment the harness gives setups, tool calls and checks: a fixed identity and date, no user config."""
    return {
        "PATH": STANDARD_PATH,
        "HOME": str(home),
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }


def _bash(script: str, cwd: Path, env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STRICT_BASH, script],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_setup(task: Mapping[str, Any], work: Path, env: Mapping[str, str]) -> None:
    """Build the task's repository in the empty directory ``work``; a failing setup is an error of the task."""
    result = _bash(task["setup"], work, env, CALL_TIMEOUT)
    if result.returncode != 0:
        raise RuntimeError(f"setup failed with status {result.returncode}:\n{result.stdout}{result.stderr}")


def _inside(work: Path, path: str) -> Path:
    target = (work / path).resolve()
    if not target.is_relative_to(work.resolve()):
        raise ValueError(f"{path!r} is outside the work tree")
    return target


def run_calls(calls: Iterable[Mapping[str, Any]], work: Path, env: Mapping[str, str]) -> list[str]:
    """Apply tool calls in order, as an agent would; returns each call's output. ``submit`` ends the episode."""
    outputs = []
    for call in calls:
        tool, arguments = call["tool"], call.get("arguments", {})
        if tool == "run":
            try:
                result = subprocess.run(
                    ["bash", "-c", arguments["command"]],
                    cwd=work,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=CALL_TIMEOUT,
                    check=False,
                )
                outputs.append(f"{result.stdout}{result.stderr}[exit {result.returncode}]")
            except subprocess.TimeoutExpired:
                outputs.append("[timed out]")
        elif tool == "write_file":
            target = _inside(work, arguments["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(arguments["content"])
            outputs.append(f"wrote {arguments['path']}")
        elif tool == "read_file":
            outputs.append(_inside(work, arguments["path"]).read_text())
        elif tool == "submit":
            break
        else:
            raise ValueError(f"unknown tool {tool!r}")
    return outputs


def run_checks(task: Mapping[str, Any], work: Path, env: Mapping[str, str]) -> list[CheckResult]:
    results = []
    for check in task["checks"]:
        try:
            result = _bash(check["run"], work, env, CHECK_TIMEOUT)
            results.append(CheckResult(check["name"], result.returncode == 0, result.stdout + result.stderr))
        except subprocess.TimeoutExpired:
            results.append(CheckResult(check["name"], False, "[timed out]"))
    return results


# What two builds of a task's repository must agree on: refs, every reachable commit, the stash, the reflog
# of HEAD, unreachable objects (a task may hide work there), where HEAD is and the state of the work tree.
FINGERPRINT_COMMANDS = {
    "refs": "git for-each-ref --format='%(objectname) %(refname)'",
    "commits": "git log --all --format=%H",
    "stash": "git stash list --format=%H",
    "reflog": "git reflog --format='%H %gs' || true",
    "unreachable": "git fsck --unreachable --no-reflogs --no-progress 2>/dev/null | sort",
    "head": "git symbolic-ref -q HEAD || git rev-parse HEAD",
    "status": "git status --porcelain --ignored --untracked-files=all",
    "index": "git ls-files --stage",
}


def repository_fingerprint(work: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Facts about a built repository that must not change from one build to the next, and its files' digests."""
    facts = {}
    for name, command in FINGERPRINT_COMMANDS.items():
        result = _bash(command, work, env, CALL_TIMEOUT)
        facts[name] = f"{result.returncode}\n{result.stdout}"
    files = sorted(path for path in work.rglob("*") if path.is_file() and path.relative_to(work).parts[0] != ".git")
    facts["files"] = "\n".join(
        f"{path.relative_to(work)} {hashlib.sha256(path.read_bytes()).hexdigest()}" for path in files
    )
    return facts


def run_task(task: Mapping[str, Any], calls: Iterable[Mapping[str, Any]]) -> TaskRun:
    """One episode in a fresh temporary directory: setup, the calls, then the checks; the score is the fraction passed."""
    with tempfile.TemporaryDirectory(prefix="git-task-") as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        env = git_env(home)
        run_setup(task, work, env)
        outputs = run_calls(calls, work, env)
        checks = run_checks(task, work, env)
    score = sum(check.passed for check in checks) / len(checks)
    return TaskRun(score, checks, outputs)
