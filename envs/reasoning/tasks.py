"""ReasoningGym tasks: questions made by the ``reasoning-gym`` package's procedural generators.

Each generator makes items from a seed (a question, its answer, and metadata its verifier reads).
A task is one item: ``task_id`` is ``GENERATOR/SPLIT/INDEX``, and each split of each generator is
made from its own seed (derived from the env's ``data_seed``, the generator and the split), so a
split is the same on every server and in every process. A split takes the generator's items in
order, skipping any whose question an item taken before asks (the same question in train and test
would leak one into the other) and any that would let a constant answer earn more on the split
than :func:`~.constant_answers.split_limit` allows (answers that repeat, hedges, partial credit).

Not every generator is served. :data:`CODE_SCORERS` are refused: their verifiers read an answer
with ``eval`` or SymPy's parser, which would run the agent's text as Python outside a sandbox; so
are :data:`~.constant_answers.UNSOUND`, whose verifiers score a constant answer 1.
:data:`DEFAULT_GENERATORS` are the others whose items are made in milliseconds, score their own
answer 1 and a wrong one less, and come out the same under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field

from openenv_gym.server.task_sets import BaseTask, Difficulty, choice_error

from .constant_answers import PROBE_ANSWERS, UNSOUND, split_limit
from .scoring import score_answer

__all__ = [
    "CODE_SCORERS",
    "DEFAULT_GENERATORS",
    "DEFAULT_SIZES",
    "DIFFICULTY",
    "ReasoningTask",
    "constant_answer_bounds",
    "make_tasks",
    "refusal",
]

#: Items per generator and split, unless the env is given ``sizes``.
DEFAULT_SIZES: Mapping[str, int] = {"train": 20, "test": 5}
# Items a split may draw to find its own: answers repeat (four of self_reference's 20 train items
# answer 5, which one item in 23 does) and questions repeat (tower_of_hanoi: more than half).
_DRAWS_PER_ITEM = 20
_EXTRA_DRAWS = 100
# A split's own answers up to this long are tried as constants; longer ones (grids, move lists,
# sentences), which seldom repeat and never hedge, once they repeat (game_of_life's all-dead grid).
_SHORT_ANSWER = 40

#: Generators whose verifiers evaluate the answer as code (``eval``, ``sympy.parse_expr``).
CODE_SCORERS = frozenset(
    {
        "advanced_geometry",
        "basic_arithmetic",
        "binary_matrix",
        "bitwise_arithmetic",
        "codeio",
        "countdown",
        "intermediate_integration",
        "n_queens",
        "number_sorting",
        "polynomial_equations",
        "polynomial_multiplication",
        "propositional_logic",
        "puzzle24",
        "simple_equations",
        "simple_integration",
        "spiral_matrix",
        "string_insertion",
    }
)

# Our judgement of each default generator's difficulty at its default configuration (the package
# gives none): easy ones take one operation, hard ones a search or a long deduction.
_EASY = (
    "base_conversion",
    "binary_alternation",
    "caesar_cipher",
    "chain_sum",
    "count_bits",
    "decimal_chain_sum",
    "fraction_simplification",
    "gcd",
    "lcm",
    "leg_counting",
    "letter_counting",
    "letter_jumble",
    "number_filtering",
    "number_format",
    "power_function",
    "products",
    "rotate_matrix",
    "sentence_reordering",
    "spell_backward",
    "string_splitting",
    "word_sequence_reversal",
    "word_sorting",
)
_MEDIUM = (
    "acre",
    "aiw",
    "calendar_arithmetic",
    "complex_arithmetic",
    "count_primes",
    "course_schedule",
    "decimal_arithmetic",
    "dice",
    "game_of_life",
    "group_anagrams",
    "gsm_symbolic",
    "largest_island",
    "manipulate_matrix",
    "maze",
    "modulo_grid",
    "needle_haystack",
    "number_sequence",
    "palindrome_generation",
    "palindrome_partitioning",
    "path_star",
    "pool_matrix",
    "rectangle_count",
    "rotten_oranges",
    "shortest_path",
    "simple_geometry",
    "string_manipulation",
    "string_synthesis",
    "syllogism",
    "time_intervals",
)
_HARD = (
    "ab",
    "arc_1d",
    "bf",
    "circuit_logic",
    "color_cube_rotation",
    "cryptarithm",
    "emoji_mystery",
    "family_relationships",
    "figlet_font",
    "jugs",
    "kakurasu",
    "knights_knaves",
    "mahjong_puzzle",
    "mini_sudoku",
    "rearc",
    "self_reference",
    "sokoban",
    "survo",
    "tower_of_hanoi",
    "tsumego",
)
#: Each default generator's difficulty; a generator named beyond them counts as ``"medium"``.
DIFFICULTY: Mapping[str, Difficulty] = {
    **dict.fromkeys(_EASY, "easy"),
    **dict.fromkeys(_MEDIUM, "medium"),
    **dict.fromkeys(_HARD, "hard"),
}
#: The generators served unless the env is given ``generators`` (71 of the package's 106).
DEFAULT_GENERATORS: tuple[str, ...] = tuple(sorted(DIFFICULTY))


def constant_answer_bounds(sizes: Mapping[str, int] | None = None) -> dict[str, float]:
    """The most one answer, the same for every question, may average over each default generator's
    items (``sizes`` per split, default :data:`DEFAULT_SIZES`), as the splits are drawn.

    0.2 with the default sizes (a share of 0.15, rounded up to whole items per split, and room for
    what verifiers pay wrong answers); for a generator whose answers are one of k values
    (:data:`~.constant_answers.FEW_ANSWERS`), chance rounded the same way: 0.52 for a yes/no
    question with 25 items (13 of one answer, 12 of the other), 0.36 for three answers.
    """
    split_sizes = (DEFAULT_SIZES if sizes is None else sizes).values()
    items = sum(split_sizes)
    return {name: sum(split_limit(name, size) for size in split_sizes) / items for name in DEFAULT_GENERATORS}


def refusal(generator: str) -> str | None:
    """Why ``generator`` is not served (its verifier runs the answer as code, or pays a constant
    answer 1), or None."""
    if generator in CODE_SCORERS:
        return (
            f"generator {generator!r} is not served: its verifier evaluates the answer as Python code "
            "(eval or SymPy's parser), which would run the agent's text outside a sandbox"
        )
    if generator in UNSOUND:
        return f"generator {generator!r} is not served: {UNSOUND[generator]}"
    return None


class ReasoningTask(BaseTask):
    """One generated item: the question the agent sees; the answer and metadata its verifier reads."""

    hidden_fields = ("answer", "metadata")

    generator: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def entry(self) -> dict[str, Any]:
        """The item as the package's verifiers take it."""
        return {"question": self.question, "answer": self.answer, "metadata": self.metadata}


def make_tasks(
    generators: Sequence[str] | None = None, sizes: Mapping[str, int] | None = None, data_seed: int = 0
) -> list[ReasoningTask]:
    """The tasks of ``generators`` (default :data:`DEFAULT_GENERATORS`): ``sizes[split]`` items of
    each per split (default :data:`DEFAULT_SIZES`), made from seeds derived from ``data_seed``.

    Made once per process for the same arguments (a server makes one env per session).

    Raises:
        ValueError: an unknown generator (the message names the nearest), a refused one
            (:func:`refusal`), sizes that are not positive counts, or a split whose items the
            draws cannot find (:func:`~.constant_answers.split_limit`).
        ImportError: the ``reasoning-gym`` package is not installed.
    """
    names = tuple(DEFAULT_GENERATORS if generators is None else generators)
    split_sizes = tuple((DEFAULT_SIZES if sizes is None else sizes).items())
    if not names:
        raise ValueError("generators must name at least one generator")
    for split, size in split_sizes:
        if not isinstance(split, str) or not split or not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"sizes must map split names to positive counts, got {dict(split_sizes)!r}")
    return list(_made(names, split_sizes, data_seed))


@functools.lru_cache(maxsize=4)
def _made(names: tuple[str, ...], sizes: tuple[tuple[str, int], ...], data_seed: int) -> tuple[ReasoningTask, ...]:
    try:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS
    except ImportError:
        raise ImportError(
            "openenv/ReasoningGym-v0 needs the reasoning-gym package: pip install 'openenv-gym[reasoning]'"
        ) from None
    tasks: list[ReasoningTask] = []
    for name in names:
        refused = refusal(name)
        if refused is not None:
            raise ValueError(refused)
        if name not in DATASETS:
            raise choice_error("generator", name, sorted(set(DATASETS) - CODE_SCORERS - set(UNSOUND)))
        asked: set[str] = set()
        for split, size in sizes:
            draws = _DRAWS_PER_ITEM * size + _EXTRA_DRAWS
            with contextlib.redirect_stdout(io.StringIO()):  # some generators and verifiers print
                dataset = reasoning_gym.create_dataset(name, size=draws, seed=_seed(data_seed, name, split))
                drawn = _balanced(dataset, size, split_limit(name, size), asked, _task_maker(name, split))
            if len(drawn) < size:
                raise ValueError(
                    f"generator {name!r}: {draws} draws gave {len(drawn)} of the {size} {split} items on which "
                    f"no constant answer earns more than {split_limit(name, size):.4g} in total"
                )
            tasks.extend(drawn)
    return tuple(tasks)


def _task_maker(name: str, split: str) -> Callable[[int, dict[str, Any]], ReasoningTask]:
    def task(index: int, item: dict[str, Any]) -> ReasoningTask:
        return ReasoningTask(
            task_id=f"{name}/{split}/{index}",
            difficulty=DIFFICULTY.get(name, "medium"),
            split=split,
            generator=name,
            question=item["question"],
            answer=None if item["answer"] is None else str(item["answer"]),
            metadata=dict(item.get("metadata") or {}),
        )

    return task


def _balanced(
    dataset: Sequence[dict[str, Any]],
    size: int,
    limit: float,
    asked: set[str],
    task_of: Callable[[int, dict[str, Any]], ReasoningTask],
) -> list[ReasoningTask]:
    """The first ``size`` items of ``dataset`` whose question no item before asks (``asked`` gains
    them) and that leave every constant answer (:data:`~.constant_answers.PROBE_ANSWERS`, and each
    answer of the items taken that is short or repeats) earning at most ``limit`` over the split.

    What a constant earns on every item it does not answer right (0.01 for any answer of the right
    form; the least of those scores so far) is counted for the items still to come, or the last of
    them would find the limit spent."""
    taken: list[ReasoningTask] = []
    # Each constant's total over the items taken, and its least score below 1 (1: none yet).
    earned = dict.fromkeys(PROBE_ANSWERS, (0.0, 1.0))
    answers: set[str | None] = set()  # of the items taken
    for index in range(len(dataset)):
        if len(taken) == size:
            break
        item = dataset[index]
        if item["question"] in asked:
            continue
        task = task_of(index, item)
        after = {}
        for answer, (total, least) in earned.items():
            score = score_answer(task, answer)[0]
            after[answer] = (total + score, least if score >= 1.0 else min(least, score))
        own = task.answer
        if own is not None and own not in after and (len(own) <= _SHORT_ANSWER or own in answers):
            scores = [score_answer(other, own)[0] for other in (*taken, task)]
            after[own] = (sum(scores), min([score for score in scores if score < 1.0], default=1.0))
        to_come = size - len(taken) - 1
        if any(total + (to_come * least if least < 1.0 else 0.0) > limit + 1e-9 for total, least in after.values()):
            continue  # this item's answer (or what a constant earns on it) would repeat too often
        asked.add(item["question"])
        answers.add(own)
        taken.append(task)
        earned = after
    return taken


def _seed(data_seed: int, generator: str, split: str) -> int:
    """A split's seed: the same everywhere (no ``hash()``, which each process salts)."""
    digest = hashlib.sha256(f"{data_seed}/{generator}/{split}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
