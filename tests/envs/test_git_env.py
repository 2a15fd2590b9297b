"""openenv/Git-v0 over a real server and real sandboxes: the tools, the episode, the verifier, the clients, cleanup.

Most tests drive an in-process :class:`~openenv_gym.server.EnvServer` with a real client and the
test tasks of ``git_cases.py``; the tool results are read as the client receives them. The last
ones go through ``gym.make`` (the tool face, ``check_env``) and OpenEnv's own ``MCPToolClient``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.client import EnvClient, http_get_json
from openenv_gym.envs.git import GitEnvironment
from openenv_gym.envs.git.environment import AUTHOR_EMAIL, AUTHOR_NAME, MAX_CONTENT_LENGTH, path_problem
from openenv_gym.errors import EpisodeEndedError, RemoteEpisodeEndedError
from openenv_gym.protocol import ObservationFrame, SessionState
from openenv_gym.providers import ProcessProvider
from openenv_gym.sandbox import spares
from openenv_gym.server import EnvServer
from tests.envs.git_cases import (
    MERGE,
    RECOVER,
    TAG,
    TASKS,
    TASKS_BY_ID,
    WALL_TIME,
    descendants,
    replay,
    run_processes,
    sandbox_processes,
)
from tests.utils import REPO_ROOT, UNIT, own_server_pids, pid_alive, running_server, sandbox_pids, wait_until

TOOLS = ["read_file", "run", "submit", "write_file"]


class Served:
    """A server's factory that keeps every env it makes, so a test can look at the session's sandbox."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = {"tasks": TASKS, "limits": {"wall_time": WALL_TIME}, **kwargs}
        self.envs: list[GitEnvironment] = []

    def __call__(self) -> GitEnvironment:
        env = GitEnvironment(**self.kwargs)
        self.envs.append(env)
        return env


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[EnvServer, Served]]:
    factory = Served()
    with running_server(factory, max_sessions=4) as server:
        yield server, factory


@pytest.fixture
def client(served: tuple[EnvServer, Served]) -> Iterator[EnvClient]:
    client = EnvClient(served[0].url).connect()
    yield client
    client.close()


def call(client: EnvClient, name: str, **arguments: Any) -> ObservationFrame:
    """One tool call as a step action (OpenEnv's ``call_tool``)."""
    return client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})


def value(frame: ObservationFrame, *, error: bool = False) -> Any:
    """What a call that ran returned (``error``: that it reported a failure, MCP's ``isError``)."""
    observation = frame.observation
    assert observation["error"] is None, observation["error"]
    assert observation["result"]["is_error"] is error, observation["result"]
    return observation["result"]["data"]


def run(client: EnvClient, command: str) -> dict[str, Any]:
    output = value(call(client, "run", command=command))
    assert set(output) == {"stdout", "stderr", "exit_code", "timed_out"}
    return output


def submit(client: EnvClient) -> ObservationFrame:
    frame = call(client, "submit")
    assert (frame.done, frame.truncated) == (True, False)
    return frame


def play(client: EnvClient, task_id: str, calls: str) -> ObservationFrame:
    """Reset to ``task_id``, make its ``solution`` or ``near_miss`` calls, and submit."""
    client.reset(options={"task_id": task_id})
    replay(lambda tool, arguments: call(client, tool, **arguments), TASKS_BY_ID[task_id][calls])
    return submit(client)


# --- tools and prompt --------------------------------------------------------------------------


def test_list_tools_shows_the_four_tools_with_descriptions_and_schemas(client):
    """The four tools, each with its description and a JSON schema of its arguments (submit takes none)."""
    client.reset(options={"task_id": TAG})
    tools = {tool["name"]: tool for tool in client.step({"type": "list_tools"}).observation["tools"]}
    assert sorted(tools) == TOOLS
    descriptions = {name: " ".join(tool["description"].split()) for name, tool in tools.items()}
    assert descriptions["run"].startswith("Run a bash command in the repository and return its stdout")
    assert descriptions["read_file"] == "Return the text of a file of the repository."
    assert descriptions["write_file"].startswith("Write a file of the repository (replacing it if it exists")
    assert descriptions["submit"].startswith("Submit the repository as it is: the task's checks run on it")
    assert tools["submit"]["input_schema"] == {"type": "object", "additionalProperties": False, "properties": {}}
    schema = tools["write_file"]["input_schema"]
    assert schema["required"] == ["path", "content"]
    assert schema["properties"]["content"]["maxLength"] == MAX_CONTENT_LENGTH
    assert schema["properties"]["path"]["description"].startswith("the file's path relative to the repository")


def test_the_reset_observation_carries_the_prompt_and_a_seed_picks_the_same_task(client):
    """The prompt: the task, the tools and the turn limit (the task's, else the env's); seeds repeat, and vary."""
    first = client.reset(options={"task_id": TAG})
    prompt = first.observation["prompt"]
    assert prompt.startswith(TASKS_BY_ID[TAG]["prompt"] + "\n\nYou are in the repository")
    assert all(f"{name}(" in prompt for name in TOOLS) and prompt.endswith("You have 10 tool calls.")
    assert client.reset(options={"task_id": MERGE}).observation["prompt"].endswith("You have 30 tool calls.")
    assert first.info == {"task_id": TAG, "difficulty": "easy"}
    assert (first.reward, first.done, first.truncated) == (0.0, False, False)
    seeded = [client.reset(seed=5).info["task_id"] for _ in range(2)]
    assert seeded[0] == seeded[1]
    assert len({client.reset(seed=seed).info["task_id"] for seed in range(10)}) > 1
    assert client.state()["task_id"] in TASKS_BY_ID and client.state()["max_turns"] in (10, 30)


# --- the episode: solution, empty submit, near miss ---------------------------------------------


@pytest.mark.parametrize("task_id", list(TASKS_BY_ID))
def test_the_solution_scores_1_an_empty_submit_0_and_the_near_miss_less(served, client, task_id):
    """Through the real sandbox: the reference solution passes every check; the near miss fails one. The
    client is told how many passed; which, and what each printed, stay with the server's env."""
    solved = play(client, task_id, "solution")
    env = served[1].envs[-1]
    assert solved.reward == 1.0 and value(solved) == {"checks_passed": 3, "checks_total": 3}, env.last_verdict
    assert solved.metadata == {"task_id": task_id, "reward_components": {"checks": 1.0}}
    assert env.last_verdict.names == tuple(check["name"] for check in TASKS_BY_ID[task_id]["checks"])
    assert env.last_verdict.task_id == task_id and env.last_verdict.passed == (True,) * 3
    client.reset(options={"task_id": task_id})
    empty = submit(client)
    assert empty.reward == 0.0 and value(empty)["checks_passed"] == 0
    assert any(output for output in env.last_verdict.outputs)  # what the failing checks said
    near = play(client, task_id, "near_miss")
    assert near.reward < 1.0 and not all(env.last_verdict.passed)


def test_the_repository_stays_from_call_to_call_and_the_shell_does_not(client):
    """Files, commits and branches persist between calls; a call's working directory and variables do not."""
    client.reset(options={"task_id": TAG})
    assert run(client, "mkdir -p docs && cd docs && export X=1 && echo note > n.txt && pwd")["stdout"] == (
        "/workspace/repo/docs\n"
    )
    assert run(client, 'pwd; echo "[$X]"; cat docs/n.txt')["stdout"] == "/workspace/repo\n[]\nnote\n"
    committed = run(client, "git add docs && git commit -q -m 'Add a note' && git log --format='%an <%ae> %s' -1")
    assert committed == {
        "stdout": f"{AUTHOR_NAME} <{AUTHOR_EMAIL}> Add a note\n",
        "stderr": "",
        "exit_code": 0,
        "timed_out": False,
    }
    assert run(client, "git switch -q -c side && git branch --show-current")["stdout"] == "side\n"
    assert run(client, "git branch --show-current; ls ..")["stdout"] == "side\nrepo\n"
    failing = run(client, "echo out; echo err >&2; exit 3")
    assert (failing["stdout"], failing["stderr"], failing["exit_code"]) == ("out\n", "err\n", 3)


def test_commit_ids_are_the_same_every_episode(client):
    """Fixed identity and dates: the setup's commits, and the agent's, have the same ids in every episode."""
    ids = []
    for _ in range(2):
        client.reset(options={"task_id": MERGE})
        ids.append(run(client, "git commit -q --allow-empty -m mine && git rev-parse HEAD HEAD~1 feature")["stdout"])
    assert ids[0] == ids[1] and len(ids[0].split()) == 3


def test_a_commit_without_a_message_stops_instead_of_waiting_for_an_editor(client):
    """The editor is `true`: a commit without -m ends at once for want of a message, never waits."""
    client.reset(options={"task_id": TAG})
    stopped = run(client, "echo x >> app.py && git commit -qa")
    assert stopped["exit_code"] == 1 and "Aborting commit due to empty commit message" in stopped["stderr"]
    assert not stopped["timed_out"]


def test_read_file_and_write_file_work_in_the_work_tree(client):
    """Files are read and written by paths relative to the work tree, in UTF-8, directories made; .git can be read."""
    client.reset(options={"task_id": TAG})
    assert value(call(client, "read_file", path="VERSION")) == "1.0\n"
    written = value(call(client, "write_file", path="src/new/módulo.py", content="print('héllo')\n"))
    assert written == "wrote 16 bytes to src/new/módulo.py"
    assert value(call(client, "read_file", path="./src/new/módulo.py")) == "print('héllo')\n"
    assert run(client, "git status --porcelain")["stdout"] == "?? src/\n"
    assert value(call(client, "write_file", path="VERSION", content="")) == "wrote 0 bytes to VERSION"
    assert value(call(client, "read_file", path="VERSION")) == ""
    assert value(call(client, "read_file", path=".git/HEAD")) == "ref: refs/heads/main\n"  # reading .git is fine


def test_a_large_file_is_read_capped(served, client):
    """read_file returns the first output_limit bytes and says how many more there were."""
    client.reset(options={"task_id": TAG})
    run(client, "head -c 100000 /dev/zero | tr '\\0' 'a' > big.txt")
    limit = served[1].envs[-1].limits.output_limit
    text = value(call(client, "read_file", path="big.txt"))
    assert text == "a" * limit + f"\n[... truncated: {100000 - limit} more bytes]"


@pytest.mark.parametrize(
    ("tool", "path", "message"),
    [
        ("read_file", "/etc/passwd", "'/etc/passwd' is an absolute path: give a path relative to the repository"),
        ("read_file", "../secret", "'../secret' leaves the repository ('..'): give a path inside it"),
        ("write_file", "docs/../../x", "'docs/../../x' leaves the repository ('..')"),
        ("write_file", ".git/config", "'.git/config' is inside .git: change git's own files with git commands (run)"),
        ("write_file", "sub/.git/hooks/pre-commit", "'sub/.git/hooks/pre-commit' is inside .git"),
        ("read_file", "", "the path is empty"),
        ("write_file", ".", "'.' is the repository itself, not a file in it"),
        ("write_file", "docs/", "'docs/' names a directory, not a file"),
        ("read_file", "out/ld.so.cache", "'out/ld.so.cache' leads outside the repository (through a symbolic link)"),
        ("write_file", "out/x", "'out/x' leads outside the repository (through a symbolic link)"),
        ("write_file", "g/config", "'g/config' leads into .git (through a symbolic link)"),
        ("read_file", "missing.txt", "'missing.txt' does not exist"),
        ("read_file", "docs", "'docs' is a directory; list it with run, e.g. `ls -la 'docs'`"),
        ("read_file", "fifo", "'fifo' is not a regular file"),
        ("read_file", "binary", "'binary' is a binary file (3 bytes); look at it with run, e.g. `xxd`"),
        ("write_file", "docs", "'docs' is a directory"),
        ("write_file", "app.py/x", "a file in the way of 'app.py/x' is not a directory"),
    ],
)
def test_paths_outside_the_work_tree_or_into_git_are_refused_clearly(client, tool, path, message):
    """Each refusal is a tool error (is_error) that names the path and what to do, and counts as a turn."""
    client.reset(options={"task_id": TAG})
    run(client, "mkdir docs && ln -s /etc out && ln -s .git g && mkfifo fifo && printf 'a\\0b' > binary")
    arguments = {"path": path} if tool == "read_file" else {"path": path, "content": "x"}
    frame = call(client, tool, **arguments)
    assert message in value(frame, error=True)
    assert (frame.reward, frame.done, frame.truncated) == (None, False, False)
    assert client.state()["step_count"] == 2
    assert run(client, "git status --porcelain; cat .git/config | head -1")["stdout"].endswith("[core]\n")


def test_path_problem_is_the_first_check_and_a_pure_function():
    """The server's own check of a path: no sandbox run for a path it refuses."""
    assert path_problem("a/b.txt", writing=True) is None and path_problem(".git/x", writing=False) is None
    assert path_problem("a\0b", writing=False) == "the path holds a NUL character"


# --- the episode's end ------------------------------------------------------------------------


def test_submit_ends_the_episode_and_later_calls_are_refused(client):
    """After a submit every call is refused until the next reset: by the client before it is sent, and
    (for a client that sends it anyway) by the server; the env refuses it too (tests/reward_hacking)."""
    frame = play(client, TAG, "solution")
    assert frame.reward == 1.0 and client.state()["score"] == 1.0
    for name, arguments in (("run", {"command": "git status"}), ("submit", {})):
        with pytest.raises(EpisodeEndedError):
            call(client, name, **arguments)
    client.kind.session.state = SessionState.READY  # as a client without the rule would be
    with pytest.raises(RemoteEpisodeEndedError):
        call(client, "submit")
    assert client.reset(options={"task_id": TAG}).info["task_id"] == TAG


def test_the_turn_limit_truncates_the_task_s_own_or_the_env_s():
    """A task's max_turns (10) wins over the env's (2); the last turn's result comes with truncated, then nothing more."""
    with running_server(Served(max_turns=2)) as server, EnvClient(server.url) as client:
        client.reset(options={"task_id": MERGE})
        flags = [(frame.done, frame.truncated) for frame in (call(client, "run", command="true") for _ in range(2))]
        assert flags == [(False, False), (False, True)]
        with pytest.raises(EpisodeEndedError):  # truncated: no more calls until a reset
            call(client, "run", command="true")
        client.reset(options={"task_id": TAG})
        frames = [call(client, "read_file", path="VERSION") for _ in range(10)]
        assert [frame.truncated for frame in frames] == [False] * 9 + [True]
        client.reset(options={"task_id": TAG})
        for _ in range(9):
            call(client, "run", command="true")
        solved = call(client, "submit")  # the last turn, and a submit: terminated, not truncated
        assert (solved.done, solved.truncated) == (True, False) and solved.reward == 0.0


def test_a_failing_setup_is_a_clear_error_at_reset():
    """A setup that exits non-zero fails the reset with its output; the session has no episode then."""
    broken = {
        **TASKS_BY_ID[TAG],
        "task_id": "broken",
        "setup": "git init -q -b main\necho building\nfalse\necho never\n",
    }
    with running_server(Served(tasks=[broken])) as server, EnvClient(server.url) as client:
        with pytest.raises(
            openenv_gym.RemoteError, match=re.escape("the setup of task 'broken' failed (exit status 1)")
        ) as failed:
            client.reset()
        assert "building" in failed.value.message and "never" not in failed.value.message
        with pytest.raises(openenv_gym.RemoteError, match="step before reset"):
            call(client, "run", command="true")


def test_a_sandbox_lost_mid_episode_ends_it_cleanly(served, client):
    """The worker killed between calls: the next call says the repository is lost, and the episode ends truncated."""
    client.reset(options={"task_id": TAG})
    env = served[1].envs[-1]
    os.killpg(env._sandbox.pid, signal.SIGKILL)
    frame = call(client, "run", command="git status")
    assert "The sandbox stopped and was replaced, and the repository with it" in value(frame, error=True)
    assert (frame.done, frame.truncated) == (False, True)
    assert env._sandbox.pid is None  # closed with the episode
    assert play(client, TAG, "solution").reward == 1.0
    client.reset(options={"task_id": TAG})
    run(client, "git tag -a v1.0 -m 'Release 1.0'")
    os.killpg(env._sandbox.pid, signal.SIGKILL)  # the repository is lost before the submit: no check can pass
    lost = submit(client)
    assert lost.reward == 0.0 and set(env.last_verdict.outputs) == {
        "The sandbox stopped and was replaced, and the repository with it: the episode ends."
    }


def test_a_plain_step_and_unknown_options_are_refused(client):
    """A step that is not a tool call, an unknown task id (naming no other) and unknown options are refused."""
    client.reset(options={"task_id": TAG})
    with pytest.raises(openenv_gym.RemoteError, match="driven by its tools") as refused:
        client.step({"command": "git status"})
    assert refused.value.code == "VALIDATION_ERROR"
    with pytest.raises(openenv_gym.RemoteError, match=re.escape("unknown task_id 'tag-the-releases': ")) as unknown:
        client.reset(options={"task_id": "tag-the-releases"})
    assert repr(TAG) not in str(unknown.value)
    with pytest.raises(openenv_gym.RemoteError, match=re.escape("unknown reset options ['level']")):
        client.reset(options={"level": 1})


def test_the_constructor_refuses_bad_limits():
    """A call limit within the sandbox's, a turn limit below 1 and a task without checks are refused at once."""
    with pytest.raises(
        ValueError, match=re.escape("tool_timeout_s (5 s) must be more than the sandbox's wall_time (10 s)")
    ):
        GitEnvironment(tool_timeout_s=5)
    with pytest.raises(ValueError, match=re.escape("max_turns must be at least 1, got 0")):
        GitEnvironment(max_turns=0)
    with pytest.raises(ValueError, match=re.escape("task 0: checks: List should have at least 1 item")):
        GitEnvironment(tasks=[{**TASKS[0], "checks": []}])


# --- cleanup ------------------------------------------------------------------------------------


def test_an_episode_s_sandbox_ends_with_it_and_close_leaves_nothing(served, client):
    """The sandbox (and the repository in its memory) goes when the episode ends, and when the env closes."""
    client.reset(options={"task_id": TAG})
    env = served[1].envs[-1]
    processes = sandbox_processes(env)
    assert len(processes) == 2, processes  # bubblewrap and the worker
    submit(client)
    assert wait_until(lambda: not any(pid_alive(pid) for pid in processes), 5 * UNIT)
    client.reset(options={"task_id": TAG})
    processes = sandbox_processes(env)
    run(client, "sleep 60 > /dev/null 2>&1 &")
    env.close()
    assert wait_until(lambda: not any(pid_alive(pid) for pid in processes), 5 * UNIT)


def test_without_a_sandbox_the_workspace_is_a_private_directory_removed_when_the_episode_ends():
    """sandbox='none': the workspace is a private host directory, removed when the episode ends and at close."""
    factory = Served(sandbox="none")
    with running_server(factory) as server, EnvClient(server.url) as client:
        client.reset(options={"task_id": TAG})
        env = factory.envs[-1]
        workspace = env._sandbox.workspace_dir
        assert workspace is not None and os.path.isdir(os.path.join(workspace, "repo", ".git"))
        assert run(client, "pwd")["stdout"] == f"{workspace}/repo\n"
        assert submit(client).reward == 0.0
        assert not os.path.exists(workspace) and not os.path.exists(os.path.dirname(workspace))
        client.reset(options={"task_id": TAG})
        workspace = env._sandbox.workspace_dir
        assert workspace is not None
    assert not os.path.exists(os.path.dirname(workspace))  # closed with the server


@pytest.mark.serial  # counts every sandbox process on the machine
def test_a_server_killed_with_sigkill_leaves_no_sandbox_behind():
    """bubblewrap dies with its parent, and the repository with the sandbox's memory: nothing is left on the host."""
    before = sandbox_pids()
    script = (
        "import sys\n"
        "from openenv_gym.envs.git import GitEnvironment\n"
        "from tests.envs.git_cases import TASKS\n"
        "env = GitEnvironment(tasks=TASKS)\n"
        "env.reset(options={'task_id': 'tag-the-release'})\n"
        "print(env._sandbox.pid, flush=True)\n"
        "env.run('sleep 60')\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=REPO_ROOT)
    try:
        bwrap = int(owner.stdout.readline())
        assert wait_until(lambda: len(sandbox_pids() - before) >= 2, 5 * UNIT)
        owner.kill()
        owner.wait(10)
        assert wait_until(lambda: not (sandbox_pids() - before), 5 * UNIT), "a sandbox outlived its server"
        assert not pid_alive(bwrap)
    finally:
        owner.kill()
        owner.stdout.close()
        owner.wait(10)


# --- spare sandboxes ------------------------------------------------------------------------------


def test_with_spare_sandboxes_a_reset_and_a_restore_take_one_and_replay_the_same():
    """A restore into a spare sandbox (started ahead, never used) gives back the same repository, call for call."""
    kwargs: dict[str, Any] = {"tasks": TASKS, "limits": {"wall_time": WALL_TIME}, "spare_sandboxes": 2}
    source, restored = GitEnvironment(**kwargs), GitEnvironment(**kwargs)
    pool = source._sandbox._spares
    assert pool is not None and restored._sandbox._spares is pool  # one pool for the process's Git envs

    def ready() -> set[int | None]:
        assert pool is not None
        assert wait_until(lambda: len([s for s in pool.idle() if s.running]) >= 2, 60 * UNIT), "no spares"
        return {spare.pid for spare in pool.idle()}

    commands = ["echo more >> README.md && git commit -qam more && git log --oneline", "git status; ls -la | wc -l"]
    try:
        spare_pids = ready()
        source.reset(options={"task_id": TAG})
        assert source._sandbox.pid in spare_pids
        source.run("git checkout -qb work && echo change >> README.md && git commit -qam change")
        state = source.snapshot()
        spare_pids = ready()
        restored.restore(state)
        assert restored._sandbox.pid in spare_pids and restored._sandbox.pid != source._sandbox.pid
        for command in commands:
            assert restored.run(command) == source.run(command)
        assert restored.submit() == source.submit()
    finally:
        source.close()
        restored.close()
        spares.close_all()


def test_spare_sandboxes_reach_the_server_through_gym_make():
    """``gym.make(..., spare_sandboxes=2)`` is the server's env argument: its process keeps 2 sandboxes
    started and idle, and starts another when a reset takes one."""
    before = own_server_pids()
    env = gym.make("openenv/Git-v0", env_kwargs={"tasks": TASKS, "limits": {"wall_time": WALL_TIME}}, spare_sandboxes=2)
    try:
        (server,) = own_server_pids() - before

        def sandboxes() -> int:  # bubblewrap processes of the server: one per sandbox, idle or not
            return sum(1 for pid in descendants(server) if _name(pid) == "bwrap" and _parent(pid) == server)

        assert wait_until(lambda: sandboxes() == 2, 60 * UNIT), sandboxes()
        env.reset(options={"task_id": TAG})
        assert wait_until(lambda: sandboxes() == 3, 60 * UNIT), sandboxes()  # the episode's, and 2 spares
    finally:
        env.close()


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


# --- the registered id, gym.make and OpenEnv's MCP client ---------------------------------------


def test_the_catalog_entry_has_no_client_side_limit_and_serves_the_env():
    """The server truncates at each task's turn limit, so gym.make adds no TimeLimit; the server string serves it."""
    spec = gym.spec("openenv/Git-v0")
    assert (spec.max_episode_steps, spec.reward_threshold) == (None, 1.0)
    assert spec.kwargs["server"] == "openenv_gym.envs.git:GitEnvironment"
    assert GitEnvironment.space_descriptions is None and GitEnvironment.action_space is None
    with ProcessProvider(spec.kwargs["server"], env_kwargs={"tasks": TASKS}) as url:
        assert "spaces" not in http_get_json(url, "/schema", timeout=10 * UNIT)
        assert http_get_json(url, "/metadata", timeout=10 * UNIT)["name"] == "git_env"


@pytest.fixture(scope="module")
def gym_env() -> Iterator[gym.Env]:
    env = gym.make("openenv/Git-v0", env_kwargs={"tasks": TASKS, "limits": {"wall_time": WALL_TIME}})
    yield env
    env.close()


def test_a_scripted_agent_solves_a_task_through_gym_make(gym_env):
    """Text calls in, result text out: the merge conflict read, resolved, committed and submitted."""
    prompt, info = gym_env.reset(options={"task_id": MERGE})
    assert prompt.startswith("Merge the branch feature into main.") and info["task_id"] == MERGE
    assert sorted(tool["function"]["name"] for tool in info["tools"]) == TOOLS
    merged, reward, terminated, truncated, _ = gym_env.step(
        json.dumps({"name": "run", "arguments": {"command": "git merge feature"}})
    )
    assert "CONFLICT (content): Merge conflict in greeting.txt" in json.loads(merged)["stdout"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    text, *_ = gym_env.step({"name": "read_file", "arguments": {"path": "greeting.txt"}})
    assert text == "<<<<<<< HEAD\nHello from main\n=======\nHello from feature\n>>>>>>> feature\n"
    kept = (
        "\n".join(line for line in text.splitlines() if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))) + "\n"
    )
    gym_env.step({"name": "write_file", "arguments": {"path": "greeting.txt", "content": kept}})
    gym_env.step({"name": "run", "arguments": {"command": "git commit -qam 'Merge feature'"}})
    report, reward, terminated, truncated, info = gym_env.step({"name": "submit", "arguments": {}})
    assert json.loads(report)["checks_passed"] == 3 and (reward, terminated, truncated) == (1.0, True, False)
    assert info["tool_name"] == "submit" and "error" not in info


def test_the_model_sees_its_mistakes_through_gym_make(gym_env):
    gym_env.reset(options={"task_id": TAG})
    text, reward, terminated, _, info = gym_env.step('{"name": "run", "arguments": {"cmd": "ls"}}')
    assert info["error"]["error_type"] == "invalid_args" and "command: Field required" in text
    text, *_, info = gym_env.step({"name": "read_file", "arguments": {"path": "/etc/shadow"}})
    assert "is an absolute path" in text and (reward, terminated) == (0.0, False)


def test_check_env_passes_on_git(gym_env):
    """Gymnasium's check_env passes on the tool face of openenv/Git-v0."""
    from gymnasium.utils.env_checker import check_env

    check_env(gym_env.unwrapped)


@pytest.mark.slow  # importing openenv-core's client takes seconds
def test_openenvs_mcp_tool_client_solves_a_task():
    """OpenEnv's own client: list the tools, call them by name, and submit for the reward, over our /ws."""
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    with ProcessProvider("openenv_gym.envs.git:GitEnvironment", env_kwargs={"tasks": TASKS}) as url:
        with MCPToolClient(base_url=url).sync() as env:
            env.reset(options={"task_id": RECOVER})
            assert sorted(tool.name for tool in env.list_tools()) == TOOLS
            reflog = env.call_tool("run", command="git reflog -n 2 --format='%gs'")
            assert reflog["stdout"] == "checkout: moving from experiment to main\ncommit: Try a faster parser\n"
            assert env.call_tool("run", command="git branch experiment 'HEAD@{1}'")["exit_code"] == 0
            assert env.call_tool("read_file", path="parser.py") == "def parse(text): return text.split()\n"
            with pytest.raises(RuntimeError, match="invalid_args"):
                env.call_tool("write_file", path="x")
            submitted = env.step(CallToolAction(tool_name="submit", arguments={}))
    assert (submitted.reward, submitted.done) == (1.0, True)
    assert submitted.observation.result["data"]["checks_passed"] == 3


def test_concurrent_sessions_have_repositories_of_their_own(served):
    """Two sessions on one server: a tag made in one is not in the other's repository."""
    with EnvClient(served[0].url) as first, EnvClient(served[0].url) as second:
        first.reset(options={"task_id": TAG})
        second.reset(options={"task_id": TAG})
        run(first, "git tag -a v1.0 -m 'Release 1.0'")
        assert run(second, "git tag")["stdout"] == ""
        assert submit(first).reward == 1.0 and submit(second).reward == 0.0


def test_no_run_process_outlives_its_call(served, client):
    """Background, nohup'd and setsid'd processes of a command are killed when the call returns."""
    client.reset(options={"task_id": TAG})
    env = served[1].envs[-1]
    baseline = sandbox_processes(env)
    run(client, "(sleep 60 &) ; nohup sleep 60 > /dev/null 2>&1 & setsid sleep 60 > /dev/null 2>&1 < /dev/null &")
    assert wait_until(lambda: not run_processes(env, baseline), 2 * UNIT), run_processes(env, baseline)


def test_a_verifier_that_raises_reports_its_error_in_every_check():
    """The verifier's exception (not only the run's empty stderr) is in each failed check's output."""
    from openenv_gym.envs.git.environment import _outcomes
    from openenv_gym.sandbox import RunResult

    result = RunResult(
        exit_code=0,
        stdout="",
        stderr="",
        results=[{"error": "PermissionError: [Errno 13] Permission denied: 'hooks'", "exception": []}],
        timed_out=False,
        duration=0.1,
    )
    outcomes = _outcomes(result, 2)
    assert [outcome["passed"] for outcome in outcomes] == [False, False]
    assert all("PermissionError: [Errno 13] Permission denied: 'hooks'" in outcome["output"] for outcome in outcomes)
