"""``benchmarks/constant_answers.py`` on a few tasks: the best constant answer of each env, as the env pays it,
and the tasks it names."""

from __future__ import annotations

import pytest

from benchmarks.constant_answers import THRESHOLD, above, measure_coding, measure_git, measure_reasoning, report


def test_coding_pays_a_constant_nothing_by_default_and_its_share_in_the_fraction_mode():
    """glob-match's tests expect True 8 times in 12, digit-square-sum's 1 twice in 7: ``return True`` and
    ``return 1`` are the best constants, paid that share in the fraction mode and 0 by default."""
    rows = {(row.mode, row.unit): row for row in measure_coding(["glob-match", "digit-square-sum"])}
    assert rows["fraction", "glob-match"].best == "return True"
    assert rows["fraction", "glob-match"].reward == pytest.approx(8 / 12) == rows["fraction", "glob-match"].bound
    assert rows["fraction", "digit-square-sum"].best == "return 1"
    assert rows["fraction", "digit-square-sum"].reward == pytest.approx(2 / 7)
    assert rows["binary", "glob-match"].reward == rows["binary", "digit-square-sum"].reward == 0.0
    named = [(row.mode, row.unit) for row in above(rows.values())]
    assert named == [("fraction", "glob-match"), ("fraction", "digit-square-sum")]


UNTOUCHED_PASSES = {
    "task_id": "half-done",
    "difficulty": "easy",
    "prompt": "Commit a new file b.txt, and keep a.txt committed.",
    "setup": "git init -q -b main\necho a > a.txt\ngit add a.txt\ngit commit -q -m a\n",
    "checks": [
        {"name": "a.txt is committed", "run": "git cat-file -e HEAD:a.txt"},
        {"name": "b.txt is committed", "run": "git cat-file -e HEAD:b.txt"},
    ],
    "solution": [{"tool": "run", "arguments": {"command": "echo b > b.txt && git add b.txt && git commit -q -m b"}}],
    "near_miss": [{"tool": "run", "arguments": {"command": "echo b > b.txt"}}],
}


def test_git_names_a_task_whose_untouched_repository_passes_a_check():
    (row,) = measure_git(tasks=[UNTOUCHED_PASSES])
    assert (row.unit, row.best, row.reward) == ("half-done", "nothing", 0.5)
    assert above([row]) == [row]


GCD = [
    {
        "task_id": f"gcd/train/{index}",
        "difficulty": "easy",
        "split": "train",
        "generator": "gcd",
        "question": f"Find the greatest common divisor of {a} and {b}. Give only the number.",
        "answer": answer,
    }
    for index, (a, b, answer) in enumerate([(3, 4, "1"), (5, 7, "1"), (4, 6, "2"), (6, 9, "3")])
]


def test_reasoning_gym_finds_the_answer_most_items_share(capsys):
    """Two of four gcds are 1: the answer "1" scores 0.5 over the generator, and the report names it."""
    (row,) = measure_reasoning(tasks=GCD)
    assert (row.unit, row.best, row.reward, row.tasks) == ("gcd", "'1'", 0.5, 4)
    report([row])
    printed = capsys.readouterr().out
    assert f"above {THRESHOLD}: 1 of 1: gcd 0.50" in printed
