"""ReasoningGym tasks: questions made by the ``reasoning-gym`` package's procedural generators.

Each generator makes items from a seed (a question, its answer, and metadata its verifier reads).
A task is one item: ``task_id`` is ``GENERATOR/SPLIT/INDEX``, and each split of each generator is
made from its own seed (derived from the env's ``data_seed``, the generator and the split), so a
split is the same on every server and in every process. A test item whose question a train item
of the same generator already asks is dropped.

Not every generator is served. :data:`CODE_SCORERS` are refused: their verifiers read an answer
with ``eval`` or SymPy's parser, which would run the agent's text as Python outside a sandbox.
:data:`DEFAULT_GENERATORS` are the others whose items are made in milliseconds, score their own
answer 1 and a wrong one less, and come out the same under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from openenv_gym.server.task_sets import BaseTask, choice_error

__all__ = [
    "CODE_SCORERS",
    "DEFAULT_GENERATORS",
    "DEFAULT_SIZES",
    "DIFFICULTY",
    "ReasoningTask",
    "make_tasks",
]

#: Items per generator and split, unless the env is given ``sizes``.
DEFAULT_SIZES: Mapping[str, int] = {"train": 20, "test": 5}

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
    "coin_flip",
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
DIFFICULTY: Mapping[str, str] = {
    **dict.fromkeys(_EASY, "easy"),
    **dict.fromkeys(_MEDIUM, "medium"),
    **dict.fromkeys(_HARD, "hard"),
}
#: The generators served unless the env is given ``generators`` (72 of the package's 106).
DEFAULT_GENERATORS: tuple[str, ...] = tuple(sorted(DIFFICULTY))


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
        ValueError: an unknown generator (the message names the nearest), one in
            :data:`CODE_SCORERS`, or sizes that are not positive counts.
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
        if name in CODE_SCORERS:
            raise ValueError(
                f"generator {name!r} is not served: its verifier evaluates the answer as Python code "
                "(eval or SymPy's parser), which would run the agent's text outside a sandbox"
            )
        if name not in DATASETS:
            raise choice_error("generator", name, sorted(set(DATASETS) - CODE_SCORERS))
        asked: set[str] = set()
        for split, size in sizes:
            with contextlib.redirect_stdout(io.StringIO()):  # some generators print progress
                dataset = reasoning_gym.create_dataset(name, size=size, seed=_seed(data_seed, name, split))
                items = [dataset[index] for index in range(size)]
            for index, item in enumerate(items):
                if item["question"] in asked:
                    continue  # the same question in two splits would leak one into the other
                asked.add(item["question"])
                tasks.append(
                    ReasoningTask(
                        task_id=f"{name}/{split}/{index}",
                        difficulty=DIFFICULTY.get(name, "medium"),  # type: ignore[arg-type]
                        split=split,
                        generator=name,
                        question=item["question"],
                        answer=None if item["answer"] is None else str(item["answer"]),
                        metadata=dict(item.get("metadata") or {}),
                    )
                )
    return tuple(tasks)


def _seed(data_seed: int, generator: str, split: str) -> int:
    """A split's seed: the same everywhere (no ``hash()``, which each process salts)."""
    digest = hashlib.sha256(f"{data_seed}/{generator}/{split}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
