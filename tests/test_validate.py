"""`openenv-gym validate`: its table on shipped envs, a new scaffold and an openenv-core server; each check on broken envs."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from openenv_gym.scaffold import init_env
from openenv_gym.validation import CHECK_NAMES, CheckResult, OpenEnvProbe, Status, Subject, resolve_target, run_checks
from openenv_gym.validation.checks import (
    check_capacity,
    check_determinism,
    check_gymnasium,
    check_idle_timeout,
    check_manifest,
    check_openenv_client,
    check_reset_step_contract,
    check_snapshot,
    check_spaces_round_trip,
)
from tests import validate_broken_envs as broken
from tests.utils import REPO_ROOT, UNIT, free_port, openenv_core_servers, running_server, stop_process

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))
# The idle timeout of the servers run_checks starts here: the idle check waits it out.
IDLE = 0.5 * UNIT


@pytest.fixture(scope="module", autouse=True)
def broken_cli() -> Iterator[subprocess.Popen[str]]:
    """`openenv-gym validate` of a broken env in a fresh process, started with the module so that its
    import of openenv-core (seconds) overlaps the other tests; its test reads the output."""
    process = subprocess.Popen(
        [CONSOLE_SCRIPT, "validate", "tests.validate_broken_envs:ResetIgnoresSeed", "--idle-timeout", str(IDLE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    yield process
    stop_process(process)
    process.stdout.close()
    process.stderr.close()


@pytest.fixture(scope="module")
def probe() -> Iterator[OpenEnvProbe]:
    """One child process holding openenv-core's client for every validation of the module (its import takes seconds)."""
    with OpenEnvProbe() as started:
        yield started


def lines(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.name: result for result in results}


def statuses(results: list[CheckResult]) -> dict[str, str]:
    return {result.name: result.status.value for result in results}


def validate(target: str, probe: OpenEnvProbe, **options) -> list[CheckResult]:
    """Every check of ``target``, run here (with the module's probe), the servers it starts stopped afterwards."""
    return list(run_checks(target, probe=probe, idle_timeout=IDLE, **options))


# --- whole runs --------------------------------------------------------------------------------


class SharedProbe:
    """Stands in for a new OpenEnvProbe: hands out the module's, and leaves it open when "closed"."""

    def __init__(self, probe: OpenEnvProbe) -> None:
        self.probe = probe

    def __call__(self) -> SharedProbe:
        return self

    def run(self, *args, **kwargs):
        return self.probe.run(*args, **kwargs)

    def close(self) -> None:
        pass


ROW = re.compile(r"^(?P<name>.+?) +(?P<status>PASS|FAIL|SKIP)  +(?P<reason>.*)$")


@pytest.fixture
def cli(probe, monkeypatch, capsys):
    """Runs `openenv-gym validate TARGET ARGS` here (with the module's probe); gives its exit code,
    its table's rows as CheckResults by name, and its output lines."""
    import openenv_gym.validation
    from openenv_gym.cli import main

    monkeypatch.setattr(openenv_gym.validation, "OpenEnvProbe", SharedProbe(probe))

    def run(target: str, *args: str) -> tuple[int, dict[str, CheckResult], list[str]]:
        with pytest.raises(SystemExit) as exited:
            main(["validate", target, "--idle-timeout", str(IDLE), *args])
        output = capsys.readouterr().out.splitlines()
        assert output[1] == "CHECK                RESULT  REASON", output
        rows = {}
        for line in output[2:-1]:
            match = ROW.match(line)
            assert match, line
            rows[match["name"]] = CheckResult(match["name"], Status(match["status"]), match["reason"])
        counts = [sum(row.status is status for row in rows.values()) for status in Status]
        assert output[-1] == f"{len(rows)} checks: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped"
        assert exited.value.code == (1 if counts[1] else 0)
        return exited.value.code, rows, output

    return run


def by_status(rows: dict[str, CheckResult]) -> dict[str, str]:
    return {name: row.status.value for name, row in rows.items()}


@pytest.mark.slow
def test_the_cli_prints_a_table_for_cartpole_and_exits_0(cli):
    """`openenv-gym validate openenv/CartPole-v1` serves it, prints one PASS line per check and a summary, exits 0."""
    code, rows, output = cli("openenv/CartPole-v1")
    assert output[0] == "validating openenv/CartPole-v1 (CartPole-v1)"
    assert by_status(rows) == dict.fromkeys(CHECK_NAMES[1:], "PASS")  # no manifest line: a catalog id has none
    assert "determinism          PASS    reset(seed=7) and the same 10 actions gave the same trajectory twice" in output
    assert rows["spaces round trip"].reason == (
        "action Discrete(2), observation Box(shape=(4,), float32): the JSON read back says the same"
    )
    assert (
        rows["snapshot"].reason == "pickle: restored to the snapshot's frame and state and the same 7 step(s) replayed"
    )
    assert output[-1] == "13 checks: 13 passed, 0 failed, 0 skipped" and code == 0


def test_the_echo_directory_passes_every_check(cli):
    """envs/echo: its manifest, served from its directory, passes every check but the snapshot's (it has none)."""
    code, found, output = cli("envs/echo", "--max-sessions", "2")
    assert (code, by_status(found)) == (0, {**dict.fromkeys(CHECK_NAMES, "PASS"), "snapshot": "SKIP"}), output
    assert found["snapshot"].reason == (
        "the env does not snapshot: EchoEnvironment does not implement snapshot() and restore()"
    )
    assert output[0] == "validating envs/echo (openenv.yaml's app openenv_gym.envs.echo:EchoEnvironment)"
    assert found["manifest"].reason.startswith(
        "openenv.yaml: echo_env 0.1.0, app openenv_gym.envs.echo:EchoEnvironment"
    )
    assert found["capacity"].reason == (
        "2 session(s) at once; session 3 refused with CAPACITY_REACHED: Server at capacity: 2/2 sessions active. "
        "Cannot accept new connections."
    )
    assert found["idle timeout"].reason.startswith("an idle session was closed after ")
    assert found["openenv client"].reason.startswith("openenv-core 0.3.0's GenericEnvClient: reset, step {")


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])
def test_a_new_scaffold_passes(tools, cli, tmp_path):
    """What `openenv-gym init` writes validates as it is, and exits 0: a tool env has no spaces to round-trip."""
    init_env("demo", tmp_path / "demo", tools=tools)
    code, rows, output = cli(str(tmp_path / "demo"))
    expected = dict.fromkeys(CHECK_NAMES, "PASS")
    if tools:  # no spaces to round-trip (both templates snapshot)
        expected["spaces round trip"] = "SKIP"
    assert (code, by_status(rows)) == (0, expected), output
    assert rows["manifest"].reason.startswith("openenv.yaml: demo 0.1.0, app demo.environment:DemoEnvironment")


def test_the_cli_exits_1_and_names_the_failed_check(broken_cli):
    """A broken env's table says FAIL on the check it breaks, with the reason, and the command exits 1."""
    stdout, stderr = broken_cli.communicate(timeout=180 * UNIT)
    assert broken_cli.returncode == 1, stdout + stderr
    row = next(line for line in stdout.splitlines() if line.startswith("determinism"))
    assert re.match(r"determinism +FAIL +reset\(seed=7\) twice gave different observations, \{", row), row
    assert "reset ignores its seed (or draws from a generator it does not seed)" in row
    # Gymnasium's check_env resets with one seed twice too.
    row = next(line for line in stdout.splitlines() if line.startswith("check_env"))
    assert re.match(r"check_env +FAIL +AssertionError: Using `env.reset\(seed=123\)` is non-deterministic", row), row
    assert stdout.splitlines()[-1] == "13 checks: 11 passed, 2 failed, 0 skipped"


@pytest.mark.slow
def test_an_openenv_core_server_passes_what_it_publishes(cli):
    """openenv-core's own server fails nothing (exit 0); what it does not publish (spaces, seeds, idle timeout) is skipped."""
    with openenv_core_servers(("echo",)) as urls:
        code, found, output = cli(urls["echo"])
    assert code == 0
    assert by_status(found) == {
        **dict.fromkeys(CHECK_NAMES[1:], "PASS"),
        "serve": "SKIP",
        "spaces round trip": "SKIP",
        "determinism": "SKIP",
        "snapshot": "SKIP",
        "idle timeout": "SKIP",
    }, output
    assert found["snapshot"].reason == "/schema says nothing of snapshots (an OpenEnv server, or an older one)"
    assert found["capacity"].reason.startswith("4 session(s) at once; session 5 refused with CAPACITY_REACHED: ")
    assert found["determinism"].reason == (
        "an OpenEnv server (no Gymnasium spaces or tools in /schema) makes no claim about seeds"
    )
    assert found["idle timeout"].reason == "the server publishes no idle timeout"


def test_a_server_that_does_not_start_fails_serve_and_skips_the_rest(probe):
    """An app that cannot be imported fails the serve line with the server's own reason; every later check is skipped."""
    results = validate("tests.validate_broken_envs:NoSuchEnv", probe)
    assert [result.name for result in results] == list(CHECK_NAMES[1:])
    assert results[0].status is Status.FAIL
    assert results[0].reason.startswith(
        "openenv-gym serve tests.validate_broken_envs:NoSuchEnv: server exited with code 2"
    )
    assert all(result == CheckResult.skipped(result.name, "the server did not start") for result in results[1:])


def test_a_server_gone_fails_health_and_skips_the_rest(probe):
    """A URL where nothing listens fails /health, and the checks after it are skipped."""
    results = validate(f"http://127.0.0.1:{free_port()}", probe)
    assert statuses(results)["health"] == "FAIL"
    assert "/health: " in lines(results)["health"].reason
    assert {result.status for result in results[2:]} == {Status.SKIP}


def test_a_server_with_a_token_is_checked_with_it(probe):
    """A running server that requires a token passes with --token-env's token; openenv-core's client, which
    cannot send one, is skipped."""
    with running_server(broken.Counter, token="s3cret", idle_timeout=None) as server:
        results = validate(server.url, probe, token="s3cret")
    assert statuses(results) == {
        **dict.fromkeys(CHECK_NAMES[1:], "PASS"),
        "serve": "SKIP",
        "idle timeout": "SKIP",
        "openenv client": "SKIP",
    }, results
    assert lines(results)["openenv client"].reason == (
        "the server requires a token, which openenv-core's client cannot send"
    )
    assert not [result for result in results if "s3cret" in repr(result) or "s3cret" in str(result.reason)]
    assert "s3cret" not in repr(Subject(server.url, token="s3cret"))


@pytest.mark.parametrize("token", [None, "not-the-token"])
def test_a_server_that_needs_a_token_gets_one_failure_with_the_hint(probe, token):
    """Validating a token server without its token (or with another) fails one line, which says
    how to pass it, and skips the checks that would all fail the same way."""
    with running_server(broken.Counter, token="s3cret", idle_timeout=None) as server:
        results = validate(server.url, probe, token=token)
    assert [result.name for result in results if result.status is Status.FAIL] == ["schema"]
    reason = lines(results)["schema"].reason
    assert "HTTP 401" in reason and "--token-env" in reason and "s3cret" not in reason
    assert ("sent none" in reason) == (token is None) and ("not-the-token" not in reason)
    after = CHECK_NAMES[CHECK_NAMES.index("schema") + 1 :]
    assert [(r.name, r.status) for r in results[-len(after) :]] == [(name, Status.SKIP) for name in after]


def test_targets_resolve_by_their_form(tmp_path):
    """A URL, a directory, a catalog id with or without 'openenv/', and any other serve target."""
    assert resolve_target("http://10.0.0.1:8000").kind == "url"
    echo = resolve_target("envs/echo")
    assert (echo.kind, echo.app, echo.cwd) == (
        "directory",
        "openenv_gym.envs.echo:EchoEnvironment",
        REPO_ROOT / "envs/echo",
    )
    assert (echo.nondeterministic, echo.claimed_by) == (False, "openenv.yaml")
    for text in ("openenv/CartPole-v1", "CartPole-v1"):
        cartpole = resolve_target(text)
        assert (cartpole.kind, cartpole.app, cartpole.claimed_by) == (
            "env id", "CartPole-v1", "the catalog entry openenv/CartPole-v1"
        )  # fmt: skip
    assert resolve_target("my_pkg.envs:MyEnv").kind == "app"
    with pytest.raises(ValueError, match=f"^{re.escape(str(tmp_path))} holds no openenv.yaml"):
        resolve_target(str(tmp_path))
    with pytest.raises(ValueError, match="openenv/Remote-v0 starts no server of its own"):
        resolve_target("openenv/Remote-v0")
    with pytest.raises(ValueError, match=re.escape("./my-envv: no such directory")):
        resolve_target("./my-envv")
    assert resolve_target("ALE/Pong-v5").kind == "app"  # a Gymnasium id with a namespace, not a path


def test_the_cli_refuses_a_target_that_is_no_env_in_one_line(tmp_path, capsys):
    """A directory without openenv.yaml exits 2 with one line, before anything starts."""
    from openenv_gym.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["validate", str(tmp_path)])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"openenv-gym validate: error: {tmp_path} holds no openenv.yaml: give a directory of an env "
        "(openenv-gym init makes one)\n"
    )


# --- one check at a time, on envs with one mistake each -----------------------------------------


def subject(server, **fields) -> Subject:
    """The subject of an in-process server: what its /metadata publishes, unless ``fields`` say otherwise."""
    return Subject.of(server.url, timeout=5 * UNIT, **fields)


def test_a_string_reward_fails_the_reset_step_contract():
    """A reward sent as a string fails the contract line, which names the step, the field and the rule."""
    with running_server(broken.RewardAsString) as server:
        result = check_reset_step_contract(subject(server))
        gymnasium = check_gymnasium(subject(server))
    assert result.status is Status.FAIL
    assert re.fullmatch(
        r'step 1 \(\{"action": \d\}\): its reward is a str \("\d"\): a reward must be a number \(int or float\) or null',
        result.reason,
    ), result.reason
    assert gymnasium.status is Status.FAIL and "reward must be a number or null, got '" in gymnasium.reason


def test_a_space_that_does_not_round_trip_fails_its_line():
    """An int Box bounded by 1.5 reads back bounded by 1: the spaces line names the field and both values."""
    with running_server(broken.SpaceThatDoesNotRoundTrip) as server:
        result = check_spaces_round_trip(subject(server))
    assert result == CheckResult.failed("spaces round trip", "spaces.action.high: published 1.5, read back as 1")


def test_a_description_in_another_form_round_trips():
    """Form is not meaning: bounds written out item by item and a default left out still pass."""

    class WrittenOut(broken.Counter):
        space_descriptions: ClassVar[dict[str, Any]] = {
            "action": {"type": "Box", "shape": [2], "dtype": "float32", "low": [0.0, 0.0], "high": [1, "inf"]},
            "observation": {"type": "Discrete", "n": 100},
        }

    with running_server(WrittenOut) as server:
        result = check_spaces_round_trip(subject(server))
    assert result.status is Status.PASS, result
    lost = {**broken.COUNTER_SPACES, "action": {**broken.COUNTER_SPACES["action"], "mask": [1, 1, 0]}}

    class LostKey(broken.Counter):
        space_descriptions: ClassVar[dict[str, Any]] = lost

    with running_server(LostKey) as server:
        result = check_spaces_round_trip(subject(server))
    assert result == CheckResult.failed(
        "spaces round trip", "spaces.action.mask: not part of a Discrete description, lost in the round trip"
    )


def test_a_reset_that_ignores_the_seed_fails_determinism():
    """Two resets with the same seed that start apart fail the determinism line, which says what that means."""
    with running_server(broken.ResetIgnoresSeed) as server:
        result = check_determinism(subject(server, nondeterministic=False))
        claimed = check_determinism(subject(server, nondeterministic=True, claimed_by="openenv.yaml"))
    assert result == CheckResult.failed(
        "determinism",
        'reset(seed=7) twice gave different observations, {"observation": 1} and {"observation": 2}: '
        "reset ignores its seed (or draws from a generator it does not seed)",
    )
    assert claimed == CheckResult.skipped("determinism", "openenv.yaml says nondeterministic: true")


def test_a_snapshot_that_misses_part_of_the_state_fails_its_line():
    """A restore that answers with the right frame but goes on from elsewhere fails, naming the step."""
    with running_server(broken.SnapshotMissesTheCount) as server:
        result = check_snapshot(subject(server, nondeterministic=False))
    assert result.status is Status.FAIL, result
    assert result.reason.startswith("step 1 after the restore gave another observation than after the snapshot: ")
    assert result.reason.endswith("(the snapshot misses part of the env's state)")


def test_an_observation_outside_its_space_fails_the_contract():
    """A reset whose observation is not in the published observation space fails, naming the value and the space."""
    with running_server(broken.ObservationOutsideItsSpace) as server:
        result = check_reset_step_contract(subject(server))
    assert result == CheckResult.failed(
        "reset/step contract",
        'reset: its observation {"observation": 5} is not in the observation space Discrete(5): expected an integer '
        "in [0, 5)",
    )


def test_capacity_is_checked_against_the_published_limit():
    """At a small published limit the next session is refused with CAPACITY_REACHED; a limit the server
    does not keep fails; a limit over the cap is opened up to the cap only."""
    with running_server(broken.Counter, max_sessions=2) as server:
        kept = check_capacity(subject(server))
        broken_promise = check_capacity(subject(server, max_sessions=1))
        unknown = check_capacity(subject(server, max_sessions=None, capacity_cap=3))
    assert kept == CheckResult.passed(
        "capacity",
        "2 session(s) at once; session 3 refused with CAPACITY_REACHED: Server at capacity: 2/2 sessions active. "
        "Cannot accept new connections.",
    )
    assert broken_promise == CheckResult.failed("capacity", "max_sessions is 1, and session 2 was accepted too")
    assert unknown.reason.startswith("2 session(s) at once; session 3 refused with CAPACITY_REACHED: ")
    with running_server(broken.Counter) as server:
        assert check_capacity(subject(server)) == CheckResult.passed(
            "capacity", "4 sessions at once (max_sessions 64: a refusal past it is not checked, over the cap of 4)"
        )


def test_the_idle_timeout_is_waited_out_when_published_and_short():
    """A short published idle timeout closes an idle session (PASS); a long one is skipped; one not kept fails."""
    with running_server(broken.Counter, idle_timeout=0.3 * UNIT) as server:
        closed = check_idle_timeout(subject(server))
    assert closed.status is Status.PASS and "(close code 1001: session idle for more than" in closed.reason
    with running_server(broken.Counter) as server:  # 300 s
        assert check_idle_timeout(subject(server)) == CheckResult.skipped(
            "idle timeout", "the server closes idle sessions after 300 s, longer than this check waits (10 s)"
        )
        not_kept = check_idle_timeout(subject(server, idle_timeout=0.2 * UNIT))
    assert not_kept.status is Status.FAIL and not_kept.reason.startswith("a session idle for ")
    with running_server(broken.Counter, idle_timeout=None) as server:
        assert check_idle_timeout(subject(server)) == CheckResult.skipped(
            "idle timeout", "idle sessions are never closed (/metadata: idle_timeout null)"
        )


def test_openenv_core_client_steps_an_env_of_ours(probe):
    """openenv-core's GenericEnvClient resets and steps our counter, in the probe's process."""
    with running_server(broken.Counter) as server:
        result = check_openenv_client(subject(server), probe)
    assert result.status is Status.PASS, result
    assert re.fullmatch(
        r"openenv-core 0\.3\.0's GenericEnvClient: reset, step \{\"action\": \d\} \(reward \d\.0, done False, "
        r"observation observation\), state",
        result.reason,
    ), result.reason


def test_the_manifest_line_names_what_is_wrong(tmp_path):
    """A manifest field that does not validate, or a Dockerfile serving another app, fails the manifest line."""
    manifest = tmp_path / "openenv.yaml"
    manifest.write_text("name: mine\napp: mine.env:Env\nmax_episode_steps: 0\n")
    assert check_manifest(manifest) == CheckResult.failed(
        "manifest", "openenv.yaml: max_episode_steps: Input should be greater than 0"
    )
    manifest.write_text("name: mine\napp: mine.env:Env\n")
    (tmp_path / "Dockerfile").write_text('FROM x\nCMD ["other.env:Env", "--port", "8000"]\n')
    assert check_manifest(manifest) == CheckResult.failed(
        "manifest",
        "the Dockerfile's CMD ['other.env:Env', '--port', '8000'] does not serve the manifest's app 'mine.env:Env'",
    )
    # The app is a whole argument, in either form of CMD: a longer name that contains it is not it.
    (tmp_path / "Dockerfile").write_text("FROM x\ncmd mine.env:EnvTwo \\\n  --port 8000\n")
    assert check_manifest(manifest).status is Status.FAIL
    (tmp_path / "Dockerfile").write_text("FROM x\ncmd mine.env:Env \\\n  --port 8000\n")
    assert check_manifest(manifest).status is Status.PASS
