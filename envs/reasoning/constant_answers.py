"""What an answer that ignores the question can earn, generator by generator, and what we do about it.

An optimiser that finds one answer scoring well on most questions of a generator learns that
answer, not the task. Two things let a constant score: answers that repeat (a yes/no question
whose answer is "Yes" two times in three; a gcd that is 1 or 2 half the time), and verifiers that
pay a fixed answer something on every question (a cell of a grid right by default, a number close
to the middle of a range, the first digit of a probability). So:

- each split is drawn so that no constant answer earns more on it than :func:`split_limit`
  allows, as the env scores it: the answers an optimiser tries first (:data:`PROBE_ANSWERS`) and
  every short answer of the split itself (its most common answer, and hedges such as "12", which
  earns part of 1 and of 2 and all of 12). The limit is a share of the items,
  :data:`MAX_ANSWER_SHARE` for most and one in k for a generator whose answers are one of k values
  (:data:`FEW_ANSWERS`, where a constant scores chance and no less), and for the former a little
  room (:data:`PARTIAL_CREDIT_ROOM`) for what verifiers pay wrong answers;
- the generators in :data:`EXACT_ONLY` are paid 1 for a right answer and 0 for anything else: their
  verifiers' partial credit pays a constant answer well above chance;
- the generators in :data:`UNSOUND` are not served: their verifiers score a constant 1.

:func:`~.tasks.constant_answer_bounds` gives the resulting bound for each served generator. The
figures in the reasons are a constant's mean score over 50 items, before these rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = [
    "EXACT_ONLY",
    "FEW_ANSWERS",
    "MAX_ANSWER_SHARE",
    "PARTIAL_CREDIT_ROOM",
    "PROBE_ANSWERS",
    "UNSOUND",
    "split_limit",
]

#: Constant answers every split is checked against, besides its own answers.
PROBE_ANSWERS = ("0", "1", "-1", "2", "Yes", "No", "yes", "no", "True", "False", "A", "None", "YesNo", "0 1", "1 2")

#: The largest share of a split one answer may take, unless the generator is in :data:`FEW_ANSWERS`.
MAX_ANSWER_SHARE = 0.15
#: What a constant may earn beyond its share on a generator not in :data:`FEW_ANSWERS`: most
#: verifiers pay a wrong answer a little (0.01 for any answer of the right form, 0.05 for a move on
#: tsumego, 0.1 for any weekday on calendar_arithmetic, ``len(right) / len(answer)`` for one that
#: contains the right answer: "12" on gcd gets half of 1 and of 2). A share of 0.15 leaves room for
#: it under 0.2.
PARTIAL_CREDIT_ROOM = 0.04

#: Generators whose answers are one of a few values, by how many: no value may take more than its
#: equal share, so a constant answer scores chance, which no balancing can lower.
FEW_ANSWERS: Mapping[str, int] = {
    "acre": 3,  # on, off, undetermined
    "aiw": 6,  # 2 to 7
    "circuit_logic": 2,  # 0, 1
    "course_schedule": 2,  # True, False
    "game_of_life_halting": 2,  # True, False
    "isomorphic_strings": 2,  # True, False
    "mahjong_puzzle": 3,  # Chi, Peng, Pass
    "maze": 6,  # 5 to 10 steps
    "ransom_note": 2,  # True, False
    "self_reference": 5,  # 1 to 5 (0 and 6 in fewer than one in 300)
    "syllogism": 2,  # Yes, No
    "zebra_puzzles": 4,  # one of four names
}

#: Generators paid 1 for a right answer and 0 for any other, and why: what their verifiers'
#: partial credit pays a constant.
EXACT_ONLY: Mapping[str, str] = {
    "game_of_life": "each cell is credited: the all-dead grid scores 0.96",
    "mini_sudoku": "each cell is credited: a fixed solved grid scores 0.265",
    "rectangle_count": "a count off by up to 4 earns up to 0.64: '7' scores 0.47",
    "time_intervals": "credit falls linearly with the distance: a fixed time of day scores 0.43",
}

#: Generators not served, and why: their verifiers pay a constant answer 1, a right answer's score.
UNSOUND: Mapping[str, str] = {
    "coin_flip": "its verifier scores 1 any answer whose digits begin the right probability's: '0' scores 1 "
    "on every probability below 1 (0.94 over 50 items)",
}


def split_limit(generator: str, size: int) -> float:
    """The most one constant answer may earn in total over a split of ``generator`` of ``size``
    items: its share of the items, rounded up to a whole item, and the room for partial credit."""
    classes = FEW_ANSWERS.get(generator)
    if classes is not None:
        return math.ceil(size / classes)
    return math.ceil(size * MAX_ANSWER_SHARE) + size * PARTIAL_CREDIT_ROOM
