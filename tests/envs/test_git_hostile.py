"""Hostile agents in openenv/Git-v0: every command is contained, the verifier's git runs nothing the repository names.

One server (a short wall-clock limit), one session. Each command case runs in a fresh episode of
a small task and checks the output's clear error, that nothing was written on the host, that no
process of the run is left and the sandbox is the same one (no worker was replaced), and then
that the same episode still solves its task. The verifier cases plant, as the agent's last act,
config (``core.useReplaceRefs``, config hooks, tar filters among it), hooks, includes, replace
refs and a fake ``git`` that would run code (or fake a check) when git runs in the repository;
the checks then run git every way that would trigger them, and one check asserts none of it ran.
A repository that leads git outside the verifier's copy (a ``.git`` file, alternates, the work
tree a link) fails every check.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_gym.client import EnvClient
from openenv_gym.envs.git import GitEnvironment
from openenv_gym.envs.git.tasks import BUILTIN_TASKS
from openenv_gym.protocol import ObservationFrame
from tests.envs.git_cases import TAG, TASKS, TASKS_BY_ID, WALL_TIME, replay, run_processes, sandbox_processes
from tests.envs.hostile_cases import MARKER, OUTPUT_LIMIT, SERVER_PORT, SERVICE_PORT, run_case
from tests.utils import REPO_ROOT, UNIT, running_server, wait_until

HOST_MARKERS = [REPO_ROOT / MARKER, Path("/") / MARKER, Path("/usr") / MARKER, Path("/tmp") / MARKER]


@dataclasses.dataclass(frozen=True)
class Case:
    """A command, text its stdout + stderr must hold, and its exit code (``None``: any) and time-out flag."""

    code: str
    expected: str
    exit_code: int | None
    timed_out: bool = False


HOSTILE = {
    "connect to the env server's port": Case(
        f"exec 3<>/dev/tcp/127.0.0.1/{SERVER_PORT}", "connect: Connection refused", 1
    ),
    "connect to another loopback service": Case(
        f"exec 3<>/dev/tcp/127.0.0.1/{SERVICE_PORT}", "connect: Connection refused", 1
    ),
    "clone from the host's loopback": Case(
        f"git clone -q http://127.0.0.1:{SERVICE_PORT}/x.git", "Failed to connect to 127.0.0.1", 128
    ),
    "fetch from the internet": Case(
        "git ls-remote https://github.com/git/git", "Could not resolve host: github.com", 128
    ),
    "read /etc/shadow": Case("cat /etc/shadow", "cat: /etc/shadow: No such file or directory", 1),
    "read the server's own files": Case(
        f"cat {REPO_ROOT / 'openenv_gym' / 'server' / 'env_server.py'}", "No such file or directory", 1
    ),
    "read the task file (the checks)": Case(f"cat {BUILTIN_TASKS.resolve()}", "No such file or directory", 1),
    "read the server's environment": Case(f"cat /proc/{os.getpid()}/environ", "No such file or directory", 1),
    "write outside the work tree": Case(
        f"echo x > /usr/{MARKER}; echo x > /{MARKER}; echo x > {REPO_ROOT / MARKER}",
        "Read-only file system",
        1,
    ),
    "write to /dev": Case("{ echo x > /dev/x; } 2> /dev/null || echo refused; ls /dev/x 2>&1 || true", "refused", 0),
    "signal the sandbox's init": Case("kill -9 1", "kill: (1) - Operation not permitted", 1),
    "fork bomb": Case(":(){ :|:& };:", "fork: retry: Resource temporarily unavailable", None),
    "a 1 GB file": Case(
        "head -c 1G /dev/zero > big; stat -c %s big", "head: error writing 'standard output': File too large", 0
    ),
    "fill the workspace": Case(
        "for i in 1 2 3 4 5 6; do head -c 15M /dev/zero > fill$i || break; done; rm -f fill*",
        "No space left on device",
        0,
    ),
    "print 100 MB": Case(
        "head -c 100M /dev/zero | tr '\\0' y", f"[... output truncated: {100 * 2**20 - OUTPUT_LIMIT} more bytes]", 0
    ),
    "run past the wall-clock limit": Case(
        "echo started; sleep 60", f"wall-clock limit of {WALL_TIME:g} s", -9, timed_out=True
    ),
    "leave daemons behind": Case(
        "setsid nohup sleep 600 > /dev/null 2>&1 < /dev/null & (sleep 600 &) ; echo left", "left", 0
    ),
}


class Factory:
    """Makes the server's envs and keeps them, so the tests can watch a session's sandbox."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks
        self.envs: list[GitEnvironment] = []

    def __call__(self) -> GitEnvironment:
        env = GitEnvironment(tasks=self.tasks, limits={"wall_time": WALL_TIME})
        self.envs.append(env)
        return env


@dataclasses.dataclass
class Served:
    client: EnvClient
    port: int
    factory: Factory

    @property
    def env(self) -> GitEnvironment:
        return self.factory.envs[-1]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    factory = Factory([*TASKS, CANARY])
    with running_server(factory) as server, EnvClient(server.url) as client:
        port = urllib.parse.urlsplit(server.url).port
        assert port is not None
        yield Served(client, port, factory)


def call(served: Served, name: str, **arguments: Any) -> ObservationFrame:
    return served.client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})


def run(served: Served, command: str) -> dict[str, Any]:
    frame = call(served, "run", command=command)
    assert frame.observation["error"] is None, frame.observation["error"]
    output: dict[str, Any] = frame.observation["result"]["data"]
    return output


def assert_nothing_on_the_host() -> None:
    for marker in HOST_MARKERS:
        assert not marker.exists(), f"a run wrote {marker} on the host"


def assert_solves_the_task(served: Served) -> None:
    """The episode goes on: its task is solved with the reference calls, for the whole reward."""
    replay(lambda tool, arguments: call(served, tool, **arguments), TASKS_BY_ID[TAG]["solution"])
    solved = call(served, "submit")
    assert (solved.reward, solved.done) == (1.0, True), solved.metadata


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_commands_are_contained_and_the_episode_goes_on(served, name):
    """The command's clear error, nothing on the host, no process left, the same sandbox, and the task still solved."""
    case = HOSTILE[name]
    served.client.reset(options={"task_id": TAG})
    sandbox = sandbox_processes(served.env)
    frame = run_case(case, served.port, lambda command: call(served, "run", command=command))
    output = frame.observation["result"]["data"]
    text = output["stdout"] + output["stderr"]
    assert case.expected in text, text[-2000:]
    assert case.exit_code is None or output["exit_code"] == case.exit_code, text[-2000:]
    assert output["timed_out"] is case.timed_out
    assert len(output["stdout"]) <= OUTPUT_LIMIT + 256 and len(output["stderr"]) <= OUTPUT_LIMIT + 256
    assert (frame.reward, frame.done, frame.truncated) == (None, False, False)
    assert_nothing_on_the_host()
    assert wait_until(lambda: not run_processes(served.env, sandbox), 2 * UNIT), "a process of the run outlived it"
    assert sandbox_processes(served.env) == sandbox, "the sandbox was replaced"
    assert_solves_the_task(served)


def test_the_host_s_home_is_not_visible():
    """Only the directories leading to the interpreter show under the host's home; none of its files."""
    home = Path.home()
    prefix = Path(os.path.realpath(sys.base_prefix))
    visible = {prefix.relative_to(home).parts[0]} if prefix.is_relative_to(home) else set()
    hidden = sorted(set(os.listdir(home)) - visible)
    if not hidden:
        pytest.skip(f"{home} holds nothing but the interpreter's directory")
    env = GitEnvironment(tasks=TASKS)
    try:
        env.reset(options={"task_id": TAG})
        listed = env.run(f"ls -A {home}; cat {home / hidden[0]}").value
    finally:
        env.close()
    assert set(listed["stdout"].split()) <= visible
    assert "No such file or directory" in listed["stderr"]


def test_a_workspace_filled_up_still_submits_with_a_score(served):
    """A full workspace: the verifier's copy may come out short, but the score is computed and the episode ends."""
    served.client.reset(options={"task_id": TAG})
    run(served, "git tag -a v1.0 -m 'Release 1.0'")
    full = run(served, "for i in 1 2 3 4 5 6; do head -c 15M /dev/zero > fill$i || break; done; df -k . | tail -1")
    assert full["stdout"].split()[4] == "100%"
    submitted = call(served, "submit")
    # The tag is in the copy whatever else is cut short, and the copy's note is kept with each check's output.
    assert submitted.done and served.env.last_verdict.passed == (True, True, True), served.env.last_verdict
    assert submitted.reward == 1.0
    served.client.reset(options={"task_id": TAG})  # a fresh workspace
    assert run(served, "df -k . | tail -1")["stdout"].split()[4] != "100%"
    assert_solves_the_task(served)


# --- the verifier: repository tricks that would run code (or fake a check) when git runs ----------

CANARY = {
    "task_id": "canary",
    "difficulty": "hard",
    "prompt": "Make the last commit's message 'Done'.",
    "setup": textwrap.dedent("""\
        git init -q -b main
        echo a > a.txt
        printf '*.txt filter=canary diff=canary merge=canary\\n' > .gitattributes
        git add a.txt .gitattributes
        git commit -q -m 'Add a'
        git remote add origin ssh://git@example.invalid/canary.git
        git remote add local ../origin.git
    """),
    "checks": [
        {"name": "a.txt is tracked", "run": "git ls-files --error-unmatch a.txt > /dev/null"},
        {"name": "the last commit says Done", "run": '[ "$(git log -1 --format=%s main)" = Done ]'},
        {
            "name": "git runs nothing the repository names",
            "run": textwrap.dedent("""\
                git status > /dev/null
                git diff > /dev/null
                git diff HEAD --stat > /dev/null
                git log -p -1 > /dev/null
                git show HEAD > /dev/null
                git stash list > /dev/null
                git checkout -q -b probe
                git checkout -q main
                git ls-remote origin > /dev/null 2>&1 || true
                git fetch -q origin > /dev/null 2>&1 || true
                git fetch -q local > /dev/null 2>&1 || true
                git st > /dev/null 2>&1 || true
                git archive --format=tar.gz HEAD > /dev/null
                git commit -q --allow-empty -m probe
                [ -z "$(find .. -name 'ran-*' -print)" ]
            """),
        },
    ],
    "solution": [{"tool": "run", "arguments": {"command": "git commit -q --amend -m Done"}}],
    "near_miss": [],
}


def plant(marker: Path) -> str:
    """The agent's last command: a replace ref faking a check, then config, hooks, an include and a fake git.

    Every trick touches ``ran-<name>`` where it runs (so a check can see it did) and ``marker`` on
    the host (which it never can). No git command runs after the config is written.
    """

    def touch(name: str) -> str:
        return f"touch ran-{name}; touch {marker} || true"

    config = "".join(
        f"{line}\n"
        for line in [
            "[core]",
            f'\tfsmonitor = "{touch("fsmonitor")}"',
            f'\tsshCommand = "{touch("ssh")}"',
            f'\tpager = "{touch("pager")}; cat"',
            f'\teditor = "{touch("editor")}"',
            "\thooksPath = .githooks",
            "\tuseReplaceRefs = true",  # before git 2.43, this wins over GIT_NO_REPLACE_OBJECTS
            '[hook "canary"]',  # a config-defined hook (git 2.36 and later)
            f'\tcommand = "{touch("confighook")}"',
            "\tevent = pre-commit",
            '[tar "tar.gz"]',
            f'\tcommand = "{touch("tar")}; cat"',
            "[diff]",
            f'\texternal = "{touch("external")}"',
            '[diff "canary"]',
            f'\ttextconv = "{touch("textconv")}; cat"',
            f'\tcommand = "{touch("diffcommand")}"',
            '[filter "canary"]',
            f'\tclean = "{touch("clean")}; cat"',
            f'\tsmudge = "{touch("smudge")}; cat"',
            "\trequired = true",
            '[merge "canary"]',
            f'\tdriver = "{touch("merge")}"',
            "[alias]",
            f'\tst = "!{touch("alias")}"',
            '[remote "local"]',
            f'\tuploadpack = "{touch("uploadpack")}"',
            "[include]",
            "\tpath = ../../evil.config",
            "[core]",  # a worktree config, honoured from here on
            "\trepositoryformatversion = 1",
            "[extensions]",
            "\tworktreeConfig = true",
        ]
    )
    included = f'[diff "canary"]\n\ttextconv = "{touch("include")}; cat"\n'
    hook = f"#!/bin/sh\n{touch('hook')}\n"
    return (
        "set -e\n"
        "git init -q --bare ../origin.git\n"
        "git replace HEAD \"$(git commit-tree 'HEAD^{tree}' -m Done)\"\n"
        "echo changed >> a.txt\n"
        f"cat >> .git/config <<'CONFIG'\n{config}CONFIG\n"
        f"cat > ../evil.config <<'CONFIG'\n{included}CONFIG\n"
        "mkdir -p .githooks\n"
        "for dir in .git/hooks .githooks; do\n"
        "  for name in post-checkout pre-commit post-commit reference-transaction; do\n"
        f"    cat > $dir/$name <<'HOOK'\n{hook}HOOK\n"
        "    chmod +x $dir/$name\n"
        "  done\n"
        "done\n"
        f"cat > git <<'GIT'\n#!/bin/sh\n{touch('fake-git')}\nGIT\n"
        "chmod +x git\n"
        f"cat > .git/config.worktree <<'CONFIG'\n[core]\n\tfsmonitor = \"{touch('worktree-config')}\"\nCONFIG\n"
        "chmod 500 .git/hooks .git/info .git\n"  # so that nothing can be removed from them, the agent hopes
        "echo planted\n"
    )


def test_repository_tricks_run_in_the_agent_s_own_commands_inside_the_sandbox_only(served):
    """The tricks are live: the agent's own git runs them, in the sandbox (which is fine), never on the host."""
    served.client.reset(options={"task_id": "canary"})
    assert run(served, plant(REPO_ROOT / MARKER))["stdout"].endswith("planted\n")
    fired = run(
        served,
        "chmod 700 .git .git/hooks .git/info; git status > /dev/null; git diff > /dev/null; "
        "git checkout -q -b other; git log -1 --format=%s; ls ran-*",
    )
    assert fired["stdout"].startswith("Done\n"), fired  # the replace ref fools the agent's own git
    ran = set(fired["stdout"].split()[1:])
    assert {"ran-worktree-config", "ran-hook", "ran-clean"} <= ran, fired  # config.worktree's fsmonitor wins
    assert_nothing_on_the_host()


def test_the_verifier_runs_none_of_the_tricks_and_computes_the_score(served):
    """fsmonitor, filters, diff drivers, hooks, aliases, ssh, includes, tar filters never run; the replace ref fakes nothing."""
    served.client.reset(options={"task_id": "canary"})
    assert run(served, plant(REPO_ROOT / MARKER))["stdout"].endswith("planted\n")
    submitted = call(served, "submit")
    assert submitted.done and served.env.last_verdict.passed == (True, False, True), served.env.last_verdict
    assert submitted.reward == pytest.approx(2 / 3)
    assert_nothing_on_the_host()


def test_the_verifier_checks_a_copy_the_agent_cannot_reach(served):
    """A run's leftover processes are gone before the verifier starts, so none can change the repository under it."""
    served.client.reset(options={"task_id": "canary"})
    baseline = sandbox_processes(served.env)
    # A daemon that would make the check pass at any moment after the submit, if it could outlive its call
    # (it waits first: an amend made while its own call still ran would be the agent's, fairly).
    run(
        served,
        "setsid sh -c 'sleep 1; while :; do git commit -q --amend -m Done; sleep 0.05; done' > /dev/null 2>&1 "
        "< /dev/null & echo started",
    )
    assert wait_until(lambda: not run_processes(served.env, baseline), 2 * UNIT)
    submitted = call(served, "submit")
    assert submitted.done and served.env.last_verdict.passed[1] is False  # the last commit says Done


@pytest.mark.parametrize(
    "command",
    [
        "mkdir -p sub && printf 'gitdir: /dev/shm/x\\n' > sub/.git",
        "mkdir -p sub && printf 'gitdir: /tmp/elsewhere\\n' > sub/.git",
        "echo /tmp/objects > .git/objects/info/alternates",
        "cd .. && mv repo kept && ln -s /dev/shm repo",
    ],
)
def test_the_verifier_fails_closed_when_the_copy_leads_git_outside_it(served, command):
    """A .git file, alternates or a work tree that leads outside the copy: no check runs, each fails with a clear note."""
    served.client.reset(options={"task_id": TAG})
    run(served, "git tag -a v1.0 -m 'Release 1.0'")
    assert run(served, command)["exit_code"] == 0
    submitted = call(served, "submit")
    verdict = served.env.last_verdict
    assert submitted.done and submitted.reward == 0.0 and verdict.passed == (False,) * 3
    assert all("outside the copy" in output for output in verdict.outputs), verdict
