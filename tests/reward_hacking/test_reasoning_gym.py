"""The reward-hacking catalogue, as it applies to openenv/ReasoningGym-v0: each way an agent could
be paid for an answer it did not get right, each paying nothing.

Classes here: answering twice (an episode pays once); answers the verifier chokes on (it fails
closed); answers that are code (no served verifier runs the answer as Python); finding the answer
where the agent can look (observation, info, state, /schema, snapshots, the tool result); answers
that hedge (every candidate at once, the question echoed back); test questions met in training.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.envs.reasoning import CODE_SCORERS, DEFAULT_GENERATORS, AnswerAction, ReasoningGymEnvironment

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
