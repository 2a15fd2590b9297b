"""The reward-hacking catalogue, as it applies to openenv/ReasoningGym-v0: each way an agent could
be paid for an answer it did not get right, each paying nothing.

Classes here: answering twice (an episode pays once); answers the verifier chokes on (it fails
closed); answers that are code (no served verifier runs the answer as Python); finding the answer
where the agent can look (observation, info, state, /schema, snapshots, the tool result); answers
that hedge (every candidate at once, the question echoed back); test questions met in training;
degenerate answers (NaN and infinities in every spelling, nothing, the question, padding) and
verifier results that are not scores; constant answers (one answer for every question of a
generator earns no more than its documented bound).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import random
import re
import statistics
from collections import Counter
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.envs.reasoning import CODE_SCORERS, DEFAULT_GENERATORS, AnswerAction, ReasoningGymEnvironment
from openenv_gym.envs.reasoning.constant_answers import EXACT_ONLY, PROBE_ANSWERS, UNSOUND
from openenv_gym.envs.reasoning.scoring import score_answer
from openenv_gym.envs.reasoning.tasks import constant_answer_bounds, make_tasks

reasoning_gym = pytest.importorskip("reasoning_gym")


@pytest.fixture(scope="module")
def env() -> ReasoningGymEnvironment:
    return ReasoningGymEnvironment(generators=["gcd", "word_sorting", "maze", "knights_knaves", "prime_factorization"])


def first(env: ReasoningGymEnvironment, generator: str):
    return next(task for task in env.task_set.splits["test"] if task.generator == generator)


def test_an_episode_pays_once(env):
    task = first(env, "gcd")
    env.reset(options={"task_id": task.task_id})
    assert env.step(AnswerAction(answer=task.answer)).reward == 1.0
    with pytest.raises(RuntimeError, match="answered: the episode has ended"):
        env.step(AnswerAction(answer=task.answer))
    with pytest.raises(RuntimeError, match="answered"):
        env.answer(task.answer)
    assert env.state.step_count == 1


@pytest.mark.parametrize("answer", ["", " ", "\x00", "9" * 16384, "[" * 5000, "None", "NaN", "inf", "-1e999", "🙂"])
def test_answers_a_verifier_chokes_on_pay_nothing(env, answer):
    """Odd answers earn nothing but the 0.01 some verifiers give any wrong answer of the right
    form; no answer at all earns 0; a verifier that raises on one (prime_factorization's int())
    fails closed."""
    for generator in ("gcd", "word_sorting", "prime_factorization"):
        task = first(env, generator)
        env.reset(options={"task_id": task.task_id})
        observation = env.step(AnswerAction(answer=answer))
        assert observation.reward <= 0.01, (generator, answer)
        assert observation.info["score"] == observation.reward
        if not answer.strip():
            assert observation.reward == 0.0


def test_a_raising_verifier_scores_zero_and_says_so(env):
    task = first(env, "prime_factorization")
    env.reset(options={"task_id": task.task_id})
    observation = env.step(AnswerAction(answer="two times three"))
    assert (observation.reward, observation.info["grader_error"]) == (0.0, "ValueError")
    assert observation.done


def test_no_served_verifier_runs_the_answer_as_code():
    """Every generator whose module evaluates text (eval, exec, SymPy's parser) is refused; the
    scan covers the package's whole catalogue, so a new version's new eval fails this test."""
    from reasoning_gym.factory import DATASETS

    evaluates = re.compile(r"\beval\(|\bexec\(|sympy|parse_expr|sympify|pickle\.loads|yaml\.load|subprocess")
    found = set()
    for name, (dataset_class, *_) in DATASETS.items():
        if evaluates.search(inspect.getsource(importlib.import_module(dataset_class.__module__))):
            found.add(name)
    assert found <= CODE_SCORERS, f"generators that evaluate text and are not refused: {sorted(found - CODE_SCORERS)}"
    assert not found & set(DEFAULT_GENERATORS)
    for name in sorted(CODE_SCORERS)[:3]:
        with pytest.raises(ValueError, match="evaluates the answer as Python code"):
            ReasoningGymEnvironment(generators=[name])


def test_the_answer_is_nowhere_the_agent_can_look():
    """Not in the reset's observation or info, the state, /schema, a snapshot, or what an answer
    returns. (word_sorting's answers are long lists of words: no number that could turn up by chance.)"""
    env = gym.make("openenv/ReasoningGym-v0", generators=["word_sorting"])
    try:
        catalog = openenv_gym.tasks(env)
        local = ReasoningGymEnvironment(generators=["word_sorting"])
        for task_id in catalog.ids(split="test"):
            task = local.task_set.by_id[task_id]
            assert task.answer is not None and ", " in task.answer
            question, info = env.reset(options={"task_id": task_id})
            assert question == task.question
            assert task.answer not in json.dumps([info, env.unwrapped.state()])
            local.reset(options={"task_id": task_id})
            snapshot = json.loads(local.snapshot())
            assert snapshot["state"]["task_id"] == task_id and task.answer not in json.dumps(snapshot)
            text, _, _, _, info = env.step("a wrong answer")
            assert task.answer not in text + json.dumps(info)
        schema = json.dumps(openenv_gym.client.http_get_json(env.unwrapped.base_url, "/schema"))
        assert not [task.task_id for task in local.task_set.tasks if task.answer in schema]
    finally:
        env.close()


def test_hedging_answers_pay_less_than_the_answer(env):
    """Every candidate at once, or the question echoed back, is not the answer."""
    task = first(env, "knights_knaves")
    env.reset(options={"task_id": task.task_id})
    assert env.step(AnswerAction(answer=task.question)).reward < 1.0
    gcd = first(env, "gcd")
    env.reset(options={"task_id": gcd.task_id})
    assert env.step(AnswerAction(answer=" ".join(str(number) for number in range(1, 200)))).reward < 1.0
    words = first(env, "word_sorting")
    env.reset(options={"task_id": words.task_id})
    shuffled = ", ".join(reversed(words.answer.split(", ")))
    assert shuffled == words.answer or env.step(AnswerAction(answer=shuffled)).reward < 1.0


@pytest.fixture(scope="module")
def numeric() -> ReasoningGymEnvironment:
    return ReasoningGymEnvironment(generators=["complex_arithmetic", "decimal_arithmetic", "power_function", "gcd"])


def answered(env: ReasoningGymEnvironment, task_id: str, answer: str):
    env.reset(options={"task_id": task_id})
    return env.step(AnswerAction(answer=answer))


def test_nan_scores_nothing_on_complex_arithmetic(numeric):
    """complex_arithmetic's verifier pays min(1, exp(-|right - answer|)), which is 1 for NaN."""
    tasks = [task for task in numeric.task_set.tasks if task.generator == "complex_arithmetic"]
    for task in tasks:
        observation = answered(numeric, task.task_id, "nan")
        assert observation.reward == 0.0, task.task_id
        assert observation.info["answer_rejected"] == "'nan' is not a finite number"


NON_FINITE = ["nan", "NaN", "-nan", "inf", "-inf", "+Infinity", "infinity", "1e999", "-1e999", "1E+999"]
NON_FINITE += ["nan+nanj", "nanj", "3+nani", "1e999j", "(nan)", "n a n", "[1, nan]", "sNaN", "NaN12", "9" * 400]


@pytest.mark.parametrize("answer", NON_FINITE)
def test_every_spelling_of_a_non_finite_number_scores_nothing(numeric, answer):
    for generator in ("complex_arithmetic", "decimal_arithmetic", "power_function", "gcd"):
        task = first(numeric, generator)
        observation = answered(numeric, task.task_id, answer)
        assert (observation.reward, observation.info["score"]) == (0.0, 0.0), (generator, answer)
        assert observation.info["answer_rejected"].endswith("is not a finite number")


@pytest.mark.parametrize(
    ("degenerate", "reason"),
    [
        (lambda task: "", "no answer"),
        (lambda task: " \t\n", "no answer"),
        (lambda task: "\u200b\u200b", "no answer"),  # invisible
        (lambda task: task.question, "the question echoed back"),
        (lambda task: f"{task.answer} {task.question.upper()}", "the question echoed back"),
        (lambda task: f"{task.answer} " + "x" * 2000, "longer than"),
    ],
    ids=["empty", "whitespace", "invisible", "the question", "answer and question", "padded"],
)
def test_degenerate_answers_score_nothing_and_say_why(numeric, degenerate, reason):
    """Even with the right answer inside: the verifier never reads it."""
    for generator in ("gcd", "complex_arithmetic"):
        task = first(numeric, generator)
        observation = answered(numeric, task.task_id, degenerate(task))
        assert observation.reward == 0.0
        assert observation.info["answer_rejected"].startswith(reason)


@dataclasses.dataclass
class _Config:
    seed: int | None = None
    size: int = 500


def _fake_generator(monkeypatch, name: str, answers, score=None) -> None:
    """A generator under ``name`` whose item ``idx`` answers ``answers(random.Random(seed + idx))``
    and whose verifier returns ``score(answer, entry)`` (default: 1 for the answer, else 0)."""
    from reasoning_gym.dataset import ProceduralDataset
    from reasoning_gym.factory import DATASETS

    class Fake(ProceduralDataset):
        def __init__(self, config: _Config) -> None:
            super().__init__(config=config, seed=config.seed, size=config.size)

        def __getitem__(self, idx: int) -> dict[str, Any]:
            return {"question": f"question {idx}?", "answer": answers(random.Random(self.seed + idx)), "metadata": {}}

        def score_answer(self, answer, entry):
            return float(answer == entry["answer"]) if score is None else score(answer, entry)

    monkeypatch.setitem(DATASETS, name, (Fake, _Config))


@pytest.mark.parametrize("returned", [math.nan, math.inf, -math.inf, 1.5, -0.25, True, "1", None, [1.0]])
def test_a_verifier_result_that_is_not_a_score_scores_nothing(monkeypatch, returned):
    name = f"returns {returned!r}"  # each its own verifier
    _fake_generator(monkeypatch, name, lambda rng: "7", lambda answer, entry: returned)
    task = {"task_id": "t", "difficulty": "easy", "generator": name, "question": "Seven?", "answer": "7"}
    env = ReasoningGymEnvironment(tasks=[task])
    observation = answered(env, "t", "7")
    assert observation.reward == 0.0
    assert observation.info["grader_error"] == f"the verifier returned {returned!r}, not a score in [0, 1]"


def test_a_split_takes_no_answer_more_often_than_its_share(monkeypatch):
    """A generator answering 7 three times in five: each split takes 7 at most 15% of the time
    (3 of 20, 1 of 5), so "7" for every question earns 0.16."""
    _fake_generator(monkeypatch, "mostly_seven", lambda rng: "7" if rng.random() < 0.6 else str(rng.randrange(100)))
    tasks = make_tasks(["mostly_seven"], {"train": 20, "test": 5})
    sevens = Counter(task.split for task in tasks if task.answer == "7")
    assert (sevens["train"], sevens["test"]) == (3, 1)
    assert len(tasks) == 25
    assert statistics.mean(score_answer(task, "7")[0] for task in tasks) == 0.16


def test_a_verifier_that_pays_a_constant_in_full_is_not_served():
    assert set(UNSOUND) == {"coin_flip"} and not set(UNSOUND) & set(DEFAULT_GENERATORS)
    with pytest.raises(ValueError, match="'0' scores 1 on every probability below 1"):
        ReasoningGymEnvironment(generators=["coin_flip"])
    made = {"task_id": "c", "difficulty": "easy", "generator": "coin_flip", "question": "P?", "answer": "0.25"}
    with pytest.raises(ValueError, match="not served"):
        ReasoningGymEnvironment(tasks=[made])


def test_partial_credit_a_constant_collects_is_not_paid():
    """game_of_life credits each right cell and rectangle_count a count off by one: the all-dead
    grid and a near count would earn most of 1. Only a right answer pays."""
    env = ReasoningGymEnvironment(generators=sorted(EXACT_ONLY))
    grid = next(task for task in env.task_set.tasks if task.generator == "game_of_life" and "1" in task.answer)
    dead = json.dumps([[0] * len(row) for row in json.loads(grid.answer)]).replace(" ", "")
    assert answered(env, grid.task_id, dead).reward == 0.0
    count = first(env, "rectangle_count")
    assert answered(env, count.task_id, str(int(count.answer) + 1)).reward == 0.0
    assert answered(env, count.task_id, count.answer).reward == 1.0


# What an optimiser tries first, besides PROBE_ANSWERS and each generator's most common answers.
CONSTANT_ANSWERS = ("0", "1", "-1", "Yes", "No", "True", "False", "A", "", "nan", "inf", *PROBE_ANSWERS)


def test_no_constant_answer_beats_its_bound_on_any_served_generator():
    """For each served generator, over its default items: each constant above, its five most
    common answers (and hedges among them, such as gcd's "12") and the question echoed back each
    average at most the generator's bound (0.2, or chance for answers from a few values)."""
    bounds = constant_answer_bounds()
    assert set(bounds) == set(DEFAULT_GENERATORS)
    assert {name: bound for name, bound in bounds.items() if bound > 0.2} == {
        "acre": 0.36,  # on, off or undetermined: chance is 1/3 (9 of 25 items)
        "circuit_logic": 0.52,  # yes/no questions: chance is 1/2 (13 of 25 items)
        "course_schedule": 0.52,
        "mahjong_puzzle": 0.36,
        "syllogism": 0.52,
    }
    by_generator: dict[str, list] = {}
    for task in make_tasks():
        by_generator.setdefault(task.generator, []).append(task)
    above = {}
    for generator, tasks in by_generator.items():
        common = [answer for answer, _ in Counter(task.answer for task in tasks).most_common(5) if answer]
        means = {
            answer: statistics.mean(score_answer(task, answer)[0] for task in tasks)
            for answer in {*CONSTANT_ANSWERS, *common}
        }
        means["<the question>"] = statistics.mean(score_answer(task, task.question)[0] for task in tasks)
        best = max(means, key=means.__getitem__)
        if means[best] > bounds[generator] + 1e-9:
            above[generator] = (best, round(means[best], 3), bounds[generator])
    assert not above
