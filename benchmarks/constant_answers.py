"""What an answer that ignores the question earns: the best constant answer's mean reward, task by task.

An optimiser finds the one answer that scores on most questions long before it learns the task:
this measures, for a task author, where that answer pays. Every answer below is paid through the
env itself (in this process, with its real sandbox and scoring), as the first answer of a fresh
episode:

* ``Coding-v0``, every shipped task, in the default reward mode (``binary``) and in ``fraction``:
  programs returning a constant (``None``, ``0``, ``1``, ``-1``, ``True``, ``False``, ``""``,
  ``[]``, ``{}``, the answer of each example the prompt shows) and degenerate ones (the first
  argument, all of them, its length, it sorted, an empty one of its type; raising ``ValueError``
  or ``TypeError``). Beside the measured best, ``any constant`` is the bound over *every* constant
  value, read from the task's expected values: the share of tests its commonest answer takes.
* ``Git-v0``, every shipped task: doing nothing, and the obvious one-command moves (commit
  everything, stage everything, throw every change away, abort whatever is in progress).
* ``ReasoningGym-v0``, every served generator (its default set): the answers ``0``, ``1``, ``-1``,
  ``2``, ``Yes``, ``No``, ``True``, ``False``, ``A``, ``""``, ``nan``, ``inf``, ``None`` and the
  question echoed; a generator's row is the best answer's mean over its items.

It prints each env's rows with the worst first, a summary per env and mode (the mean of the best
constant over the units, and the largest) and names every unit where a constant scores above
:data:`THRESHOLD`. Run from the repository root::

    .venv/bin/python benchmarks/constant_answers.py                # everything (a few minutes)
    .venv/bin/python benchmarks/constant_answers.py --env coding   # one env (coding, git, reasoning)
    .venv/bin/python benchmarks/constant_answers.py --quick        # a few tasks of each

The suite calls :func:`measure_coding`, :func:`measure_git` and :func:`measure_reasoning` on a few
tasks (``tests/test_constant_answers_benchmark.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from openenv_gym.envs.coding import CodeAction, CodingEnvironment
from openenv_gym.envs.coding.harness import RewardMode
from openenv_gym.envs.coding.scoring import same_value
from openenv_gym.envs.coding.tasks import Task
from openenv_gym.envs.git import GitEnvironment

#: A constant scoring above this on a task is named: the task (or the reward) needs a look.
THRESHOLD = 0.2
#: Coding-v0's modes measured: the default, and the one that pays a share of the tests.
CODING_MODES: tuple[RewardMode, ...] = ("binary", "fraction")
_LIMITS = {"wall_time": 5, "cpu_time": 5}

#: Values a Coding program returns whatever it is asked.
CONSTANTS: dict[str, Any] = {
    "None": None,
    "0": 0,
    "1": 1,
    "-1": -1,
    "True": True,
    "False": False,
    '""': "",
    "[]": [],
    "{}": {},
}
#: Bodies of Coding programs that do not compute the answer, by name (``args``: the call's arguments).
DEGENERATE: dict[str, str] = {
    "the first argument": "return args[0] if args else None",
    "the arguments": "return list(args)",
    "the first argument's length": "return len(args[0])",
    "the first argument, sorted": "return sorted(args[0])",
    "an empty one of the first argument's type": "return type(args[0])()",
    "raise ValueError": "raise ValueError('no')",
    "raise TypeError": "raise TypeError('no')",
}
#: What a Git agent that does not do the task might do before it submits (``None``: nothing).
GIT_MOVES: dict[str, str | None] = {
    "nothing": None,
    "commit everything": "git add -A && git commit -q -m 'Update' || true",
    "stage everything": "git add -A || true",
    "throw every change away": "git reset -q --hard && git clean -fdq || true",
    "abort what is in progress": "for op in merge rebase cherry-pick revert am; do git $op --abort 2>/dev/null; done; true",
}
#: Answers a ReasoningGym agent gives whatever the question; ``ECHO`` stands for the question.
ECHO = "the question echoed"
REASONING_ANSWERS = ("0", "1", "-1", "2", "Yes", "No", "True", "False", "A", "", "nan", "inf", "None", ECHO)


@dataclasses.dataclass(frozen=True)
class Row:
    """The best constant answer on one unit (a task, or a ReasoningGym generator) of one env and mode.

    Attributes:
        env: the env's id.
        mode: the reward mode (``"-"`` for an env that has one).
        unit: the task's id, or the generator's name.
        best: the best answer's name.
        reward: its mean reward over the unit's tasks.
        tasks: how many tasks the mean is over.
        bound: the best any constant could score, where the task's data says (Coding), else ``None``.
    """

    env: str
    mode: str
    unit: str
    best: str
    reward: float
    tasks: int = 1
    bound: float | None = None


def coding_programs(task: Task) -> dict[str, str]:
    """The constant and degenerate programs for ``task``, by name."""
    head = f"def {task.entry_point}(*args, **kwargs):\n    "
    programs = {f"return {name}": head + f"return {value!r}\n" for name, value in CONSTANTS.items()}
    for index in task.visible_tests:
        test = task.tests[index]
        body = f"raise {test.raises}('no')" if test.raises is not None else f"return {test.expected!r}"
        programs[f"the example's answer: {body}"[:80]] = head + body + "\n"
    programs.update({name: head + body + "\n" for name, body in DEGENERATE.items()})
    return programs


def any_constant(task: Task) -> float:
    """The largest share of ``task``'s tests one constant can pass: the commonest expected value's, or
    the commonest exception's (a program that always raises it)."""
    shares = [
        sum(t.raises is None and same_value(test.expected, t.expected) for t in task.tests)
        for test in task.tests
        if test.raises is None
    ]
    shares += [sum(t.raises == test.raises for t in task.tests) for test in task.tests if test.raises is not None]
    return max(shares) / len(task.tests)


def measure_coding(
    task_ids: Sequence[str] | None = None, modes: Sequence[RewardMode] = CODING_MODES, **env_kwargs: Any
) -> list[Row]:
    """One row per task and mode: the best of :func:`coding_programs` as a first submission."""
    rows = []
    for mode in modes:
        env = CodingEnvironment(reward=mode, limits=_LIMITS, **env_kwargs)
        try:
            assert env.task_set is not None
            tasks = [env.task_set.by_id[task_id] for task_id in task_ids] if task_ids else env.task_set.tasks
            for task in tasks:
                paid = {}
                for name, code in coding_programs(task).items():
                    env.reset(options={"task_id": task.task_id})
                    paid[name] = float(env.step(CodeAction(code=code)).reward or 0.0)
                best = _best(paid)
                rows.append(Row("Coding-v0", mode, task.task_id, best, max(paid.values()), bound=any_constant(task)))
        finally:
            env.close()
    return rows


def measure_git(task_ids: Sequence[str] | None = None, **env_kwargs: Any) -> list[Row]:
    """One row per task: the best of :data:`GIT_MOVES`, each an episode of its own, then ``submit``."""
    env = GitEnvironment(**{"limits": _LIMITS, **env_kwargs})
    rows = []
    try:
        tasks = [env.task_set.by_id[task_id] for task_id in task_ids] if task_ids else env.task_set.tasks
        for task in tasks:
            paid = {}
            for name, command in GIT_MOVES.items():
                env.reset(options={"task_id": task.task_id})
                if command is not None:
                    env.run(command)
                paid[name] = float(env.submit().reward or 0.0)
            best = _best(paid)
            rows.append(Row("Git-v0", "-", task.task_id, best, max(paid.values())))
    finally:
        env.close()
    return rows


def measure_reasoning(**env_kwargs: Any) -> list[Row]:
    """One row per generator: the answer of :data:`REASONING_ANSWERS` with the best mean over its items.

    ``env_kwargs`` go to ``ReasoningGymEnvironment`` (default: its served generators and sizes).
    """
    from openenv_gym.envs.reasoning import ReasoningGymEnvironment
    from openenv_gym.envs.reasoning.environment import AnswerAction

    env = ReasoningGymEnvironment(**env_kwargs)
    paid: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for task in env.task_set.tasks:
        for answer in REASONING_ANSWERS:
            env.reset(options={"task_id": task.task_id})
            try:
                action = AnswerAction(answer=task.question if answer == ECHO else answer)
            except ValueError:  # longer than an answer may be: refused, so it earns nothing
                paid[task.generator][answer].append(0.0)
                continue
            paid[task.generator][answer].append(float(env.step(action).reward or 0.0))
    rows = []
    for generator, by_answer in paid.items():
        means = {answer: statistics.fmean(rewards) for answer, rewards in by_answer.items()}
        best = _best(means)
        name = best if best in (ECHO, _NONE) else repr(best)
        items = len(by_answer[REASONING_ANSWERS[0]])
        rows.append(Row("ReasoningGym-v0", "-", generator, name, max(means.values()), tasks=items))
    return rows


def above(rows: Iterable[Row], threshold: float = THRESHOLD) -> list[Row]:
    """The rows whose best constant scores above ``threshold``, the worst first."""
    return sorted((row for row in rows if row.reward > threshold), key=lambda row: -row.reward)


def report(rows: Sequence[Row], worst: int = 15, out: Callable[[str], Any] = print) -> None:
    """Print each env and mode's worst rows, its summary, and every unit above :data:`THRESHOLD`."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[row.env, row.mode].append(row)
    for (env, mode), group in groups.items():
        title = env if mode == "-" else f"{env}, reward={mode!r}"
        ranked = sorted(group, key=lambda row: (-row.reward, row.unit))
        out(f"\n{title}: {len(group)} {'generators' if env.startswith('Reasoning') else 'tasks'}, the worst first")
        out(f"  {'unit':34} {'best constant answer':44} {'mean':>6} {'items':>5}" + ("  any const" * _bounded(group)))
        for row in ranked[:worst]:
            bound = f"  {row.bound:9.2f}" if row.bound is not None else ""
            out(f"  {row.unit[:34]:34} {row.best[:44]:44} {row.reward:6.2f} {row.tasks:5d}{bound}")
        named = above(group)
        mean = statistics.fmean(row.reward for row in group)
        out(f"  summary: mean of the best constant {mean:.3f}, largest {ranked[0].reward:.2f} ({ranked[0].unit})")
        if _bounded(group):
            out(
                f"  summary: mean of the bound over any constant {statistics.fmean(row.bound or 0 for row in group):.3f}"
            )
        listed = ", ".join(f"{row.unit} {row.reward:.2f}" for row in named) or "none"
        out(f"  above {THRESHOLD}: {len(named)} of {len(group)}: {listed}")


_NONE = "(none scores)"


def _best(paid: dict[str, float]) -> str:
    """The name of the answer paid most (the first on a tie), or :data:`_NONE` if none earns anything."""
    best = max(paid, key=lambda name: paid[name])
    return best if paid[best] > 0 else _NONE


def _bounded(group: Sequence[Row]) -> bool:
    return any(row.bound is not None for row in group)


MEASURES: dict[str, Callable[..., list[Row]]] = {
    "coding": measure_coding,
    "git": measure_git,
    "reasoning": measure_reasoning,
}
_QUICK: dict[str, dict[str, Any]] = {
    "coding": {"task_ids": ["digit-square-sum", "is-leap-year", "glob-match"]},
    "git": {"task_ids": ["resolve-conflict-keep-both", "fix-detached-head"]},
    "reasoning": {"generators": ["coin_flip", "syllogism", "complex_arithmetic"], "sizes": {"train": 10}},
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", choices=sorted(MEASURES), action="append", help="only these envs (repeatable)")
    parser.add_argument("--quick", action="store_true", help="a few tasks of each env")
    parser.add_argument("--worst", type=int, default=15, help="rows printed per env and mode (default 15)")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for name in args.env or list(MEASURES):
        started = time.perf_counter()
        rows = MEASURES[name](**(_QUICK[name] if args.quick else {}))
        report(rows, worst=args.worst)
        print(f"  ({name}: {time.perf_counter() - started:.0f} s)")
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
