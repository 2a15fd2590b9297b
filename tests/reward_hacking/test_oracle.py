"""The oracle class of the reward-hacking catalogue: an agent that reads pass information across
submissions, to answer the hidden tests without computing anything, scores no more than an honest
constant program; and no env tells which hidden test (or check) passed, only how many.

Two oracles, on tasks whose answers come from a small set (Coding-v0 and CodingTools-v0, in a real
bubblewrap sandbox):

- *reading the bits*: submissions of constant programs read which tests passed (a list of booleans
  anywhere in what the client is sent); the last answers call k of the hidden run from them, as if
  the hidden calls ran in the same order every time.
- *counting calls*: with only a count to go on, one submission per hidden call changes that call's
  answer and watches the count move; the last answers call k from what moved.

The honest program they are held to answers the examples the prompt shows (the prompt gives their
answers) and the same constant to every other call.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_gym.envs.coding import CodeAction
from openenv_gym.envs.git import GitEnvironment
from openenv_gym.sandbox import Sandbox
from openenv_gym.server.tools import ToolResult
from tests.reward_hacking.coding_submitter import KINDS, TASK, Submitter


@dataclasses.dataclass(frozen=True)
class Target:
    """A task to answer without computing: its function, the calls its prompt shows with their answers,
    and the constants the bit reader submits."""

    entry_point: str
    examples: dict[tuple[Any, ...], Any]
    constants: tuple[Any, ...]


TARGETS = {
    "digit-square-sum": Target("digit_square_sum", {(123,): 14}, (0, 1)),
    "is-leap-year": Target("is_leap_year", {(2000,): True, (1900,): False}, (True, False)),
    "glob-match": Target("glob_match", {("*.py", "main.py"): True, ("[!bc]at", "bat"): False}, (True, False)),
}
#: Episodes the call counter's program is paid over: a run's order is drawn afresh, so one run's
#: score varies, but the mean of RUNS stays within MARGIN of the constant's but with odds below 1e-6.
RUNS = 20
MARGIN = 0.1  # less than one test of the 8 or 12 of these tasks


def answering(target: Target, *, otherwise: Any, by_call: list[Any] | None = None, examples: bool = True) -> str:
    """A program that answers the prompt's examples as the prompt does (``examples=False``: wrongly,
    with ``None``), its k-th other call with ``by_call[k]``, and any other call with ``otherwise``."""
    known = {args: (answer if examples else None) for args, answer in target.examples.items()}
    return (
        f"KNOWN = {known!r}\nBY_CALL = {list(by_call or [])!r}\nOTHERWISE = {otherwise!r}\ncalls = []\n"
        f"def {target.entry_point}(*args):\n"
        "    if args in KNOWN:\n        return KNOWN[args]\n"
        "    calls.append(args)\n"
        "    return BY_CALL[len(calls) - 1] if len(calls) <= len(BY_CALL) else OTHERWISE\n"
    )


class Agent(Submitter):
    """A Coding env on any task: ``attempt(code)`` is the first submission of a fresh episode: its
    reward, and everything the client is sent of it (info and metadata too)."""

    task_id = TASK

    def reset(self) -> None:
        self.env.reset(options={"task_id": self.task_id})

    def attempt(self, code: str) -> tuple[float, dict[str, Any]]:
        self.reset()
        if self.kind == "Coding-v0":
            observation = self.env.step(CodeAction(code=code))
            return float(observation.reward), observation.model_dump(exclude={"prompt"})
        result = self.env.submit(code)
        return float(result.reward), everything_sent(result)


def everything_sent(result: ToolResult) -> dict[str, Any]:
    """All of a tool call's result that goes to the client."""
    return {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}


def find(seen: Any, key: str) -> Any:
    """The first value named ``key`` anywhere in ``seen``."""
    if isinstance(seen, dict):
        if key in seen:
            return seen[key]
        seen = list(seen.values())
    if isinstance(seen, list):
        for item in seen:
            found = find(item, key)
            if found is not None:
                return found
    return None


def find_bits(seen: Any, count: int) -> list[bool] | None:
    """The first list of ``count`` booleans anywhere in ``seen``: which tests passed, if it is told."""
    if isinstance(seen, list) and len(seen) == count and all(isinstance(item, bool) for item in seen):
        return seen
    items = seen.values() if isinstance(seen, dict) else seen if isinstance(seen, list) else ()
    for item in items:
        found = find_bits(item, count)
        if found is not None:
            return found
    return None


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[tuple[str, str], Agent]]:
    made: dict[tuple[str, str], Agent] = {}
    yield made
    for agent in made.values():
        agent.close()


def agent_for(agents: dict[tuple[str, str], Agent], kind: str, mode: str, task_id: str) -> Agent:
    if (kind, mode) not in agents:
        agents[kind, mode] = Agent(kind, reward=mode)
    agent = agents[kind, mode]
    agent.task_id = task_id
    return agent


def read_bits_then_answer(agent: Agent, target: Target) -> tuple[str, str]:
    """The bit reader's last program, and the honest one it is held to (the best constant it probed).

    It submits each constant (the examples answered), then the first constant with the examples
    answered wrongly: the tests whose bit changed are the examples, the rest are the hidden calls in
    the order they were told. Told nothing per test, it can do no better than its best constant.
    """
    counts: dict[Any, int] = {}
    bits: dict[Any, list[bool]] = {}
    for constant in target.constants:
        _, seen = agent.attempt(answering(target, otherwise=constant))
        counts[constant] = find(seen, "tests_passed")
        told = find_bits(seen, find(seen, "tests_total"))
        if told is not None:
            bits[constant] = told
    best = max(target.constants, key=lambda constant: counts[constant])
    honest = answering(target, otherwise=best)
    _, seen = agent.attempt(answering(target, otherwise=target.constants[0], examples=False))
    blind = find_bits(seen, find(seen, "tests_total"))
    if blind is None or len(bits) < len(target.constants):
        return honest, honest
    hidden = [index for index, bit in enumerate(bits[target.constants[0]]) if bit == blind[index]]
    by_call = [next((c for c in target.constants if bits[c][index]), best) for index in hidden]
    return answering(target, otherwise=best, by_call=by_call), honest


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("task_id", "mode"),
    [
        ("digit-square-sum", "fraction"),
        ("is-leap-year", "fraction"),
        ("glob-match", "fraction"),
        # Not digit-square-sum in the binary mode: its bits, read in a fixed order, did not solve it either.
        ("is-leap-year", "binary"),
        ("glob-match", "binary"),
    ],
)
def test_reading_which_tests_passed_pays_no_more_than_a_constant(agents, kind, task_id, mode):
    """Constants, then a program answering each hidden call from the bits they were told: it earns
    what the best constant with the examples right earns, no more."""
    agent = agent_for(agents, kind, mode, task_id)
    last, honest = read_bits_then_answer(agent, TARGETS[task_id])
    attack, _ = agent.attempt(last)
    baseline, _ = agent.attempt(honest)
    assert attack <= baseline < 1.0, (attack, baseline)


def count_calls_then_answer(agent: Agent, target: Target) -> str:
    """The call counter's last program: ``False`` to every hidden call, then ``True`` to call k alone
    for each k; where the count rose, call k's answer is ``True``."""
    _, seen = agent.attempt(answering(target, otherwise=False))
    base, hidden = find(seen, "tests_passed"), find(seen, "tests_total") - len(target.examples)
    by_call = []
    for k in range(hidden):
        _, seen = agent.attempt(answering(target, otherwise=False, by_call=[False] * k + [True]))
        by_call.append(find(seen, "tests_passed") > base)
    return answering(target, otherwise=False, by_call=by_call)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task_id", ["is-leap-year", "glob-match"])
def test_counting_calls_pays_no_more_than_a_constant(agents, kind, task_id):
    """In the fraction mode, where a count pays: what the call counter learns from how the count moves
    does not answer call k of a later run, whose order is drawn afresh; over RUNS episodes its program
    earns what the best constant earns, give or take MARGIN (in a fixed order it solved the task)."""
    agent = agent_for(agents, kind, "fraction", task_id)
    target = TARGETS[task_id]
    last = count_calls_then_answer(agent, target)
    honest = max(agent.attempt(answering(target, otherwise=constant))[0] for constant in (True, False))
    paid = statistics.fmean(agent.attempt(last)[0] for _ in range(RUNS))
    assert paid <= honest + MARGIN < 1.0, (paid, honest)


@pytest.mark.parametrize("kind", KINDS)
def test_the_hidden_calls_run_in_an_order_drawn_afresh_for_every_run(agents, kind, monkeypatch):
    """The sandbox is asked for the hidden calls of glob-match (ten) in a new order each run, however
    the agent seeds its resets; the examples the prompt shows run on their own, as before."""
    agent = agent_for(agents, kind, "binary", "glob-match")
    agent.reset()
    asked: list[list[tuple[Any, ...]]] = []
    run = Sandbox.run  # every sandbox's: the hidden calls run in a fresh one

    def recording(sandbox: Sandbox, code: str, **kwargs: Any) -> Any:
        asked.append([tuple(args) for args in kwargs.get("cases") or ()])
        return run(sandbox, code, **kwargs)

    monkeypatch.setattr(Sandbox, "run", recording)
    for _ in range(4):
        agent.env.reset(seed=0, options={"task_id": "glob-match"})
        if agent.kind == "Coding-v0":
            agent.env.step(CodeAction(code=answering(TARGETS["glob-match"], otherwise=True)))
        else:
            agent.env.submit(answering(TARGETS["glob-match"], otherwise=True))
    examples = set(TARGETS["glob-match"].examples)
    hidden = [cases for cases in asked if not examples & set(cases)]
    assert [sorted(cases) == sorted(hidden[0]) for cases in hidden] == [True] * 4 and len(hidden[0]) == 10
    assert len({tuple(cases) for cases in hidden}) > 1, hidden


def failing(wrong: int, raising: int) -> str:
    """A right ``digit_square_sum`` but for two hidden calls: one answered wrongly, one raising."""
    return (
        f"def digit_square_sum(n):\n    if n == {wrong}:\n        return -1\n"
        f"    if n == {raising}:\n        raise ValueError()\n    return sum(int(d) ** 2 for d in str(abs(n)))\n"
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["binary", "fraction"])
def test_which_hidden_tests_failed_is_not_told_only_how_many(agents, kind, mode):
    """Two programs failing different hidden tests, each one by a wrong value and one by an exception:
    the client is sent the same of both, to the last field."""
    agent = agent_for(agents, kind, mode, "digit-square-sum")
    one, two = agent.attempt(failing(7, 9999)), agent.attempt(failing(9999, 7))
    assert one == two
    seen = one[1]
    assert find(seen, "tests_passed") == 5 and find(seen, "tests_total") == 7
    feedback = find(seen, "feedback")
    assert "1 returned a wrong value" in feedback and "1 raised an exception" in feedback, feedback


# --- Git-v0: which checks passed stays on the server ---------------------------------------------

TWO_FILES = {
    "task_id": "two-files",
    "difficulty": "easy",
    "prompt": "Create the files a.txt and b.txt.",
    "setup": "git init -q -b main\n",
    "checks": [{"name": "a.txt exists", "run": "[ -e a.txt ]"}, {"name": "b.txt exists", "run": "[ -e b.txt ]"}],
    "solution": [{"tool": "run", "arguments": {"command": "touch a.txt b.txt"}}],
    "near_miss": [{"tool": "run", "arguments": {"command": "touch a.txt"}}],
}


def test_git_tells_how_many_checks_passed_and_keeps_which_for_the_operator():
    """Two episodes that pass a different one of two checks: the client is sent the same of both; the
    server's env keeps each check's verdict and output for whoever runs it."""
    env = GitEnvironment(tasks=[TWO_FILES], limits={"wall_time": 5})
    try:
        sent, verdicts = [], []
        for name in ("a.txt", "b.txt"):
            env.reset(options={"task_id": "two-files"})
            env.run(f"touch {name}")
            sent.append(everything_sent(env.submit()))
            verdicts.append(env.last_verdict)
    finally:
        env.close()
    assert sent[0] == sent[1] and sent[0]["reward"] == 0.5
    assert find(sent[0], "checks_passed") == 1 and find(sent[0], "checks_total") == 2
    assert find_bits(sent[0], 2) is None and "a.txt exists" not in repr(sent[0])
    assert [verdict.passed for verdict in verdicts] == [(True, False), (False, True)]
    assert verdicts[0].names == ("a.txt exists", "b.txt exists") and len(verdicts[0].outputs) == 2
