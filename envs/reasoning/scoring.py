"""How ReasoningGym-v0 scores an answer: checks that turn a degenerate answer away before any
verifier reads it, the package's verifier, and a guard on what the verifier returns.

The checks exist because verifiers parse numbers and pay for closeness: complex_arithmetic pays
``min(1, exp(-|right - answer|))``, which is 1 for ``nan`` (a comparison with NaN is false, so
``min`` keeps it). An answer scores 0, with the reason in ``info["answer_rejected"]``, when it

- shows nothing (empty, whitespace, invisible characters);
- is longer than :func:`answer_length_limit` allows for its generator;
- holds the whole question (the question echoed back);
- holds a number that Python's ``float``, ``complex`` or ``Decimal`` reads as NaN or an infinity,
  in any spelling (``nan``, ``-Infinity``, ``1e999``, ``nan+nanj``, ``n a n``), unless the right
  answer holds one too (a name such as "Nan" in a text answer).

A verifier that raises scores 0 (``info["grader_error"]`` names the exception), and so does one
that returns anything but a number in [0, 1] (``info["grader_error"]`` says what it returned):
the grader fails closed.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .constant_answers import EXACT_ONLY

if TYPE_CHECKING:  # the tasks are drawn with the scores of this module
    from .tasks import ReasoningTask

__all__ = ["MAX_ANSWER_LENGTH", "answer_length_limit", "non_finite_number", "score_answer"]

#: The longest answer taken (the longest answer of the default generators is about 5,000 characters).
MAX_ANSWER_LENGTH = 16384
# An answer may be this many times as long as its generator's longest right answer, plus the slack
# (a short answer with a sentence around it); beyond that it is padding or a list of guesses.
_LENGTH_FACTOR = 8
_LENGTH_SLACK = 1024

_WORD = re.compile(r"[\w.+\-]+")  # what a number parser could read as one number
_DROPPED = re.compile(r"[\s,]+")  # what verifiers drop before parsing ("1,000"; complex_arithmetic's spaces)
_SIGN = re.compile(r"(?<![eE])[+\-]")  # where a complex number's parts meet ("nan+nanj")
# What a non-finite number holds: NaN or an infinity by name, an exponent, or more digits than a
# float holds (310 overflow).
_MAYBE_NON_FINITE = re.compile(r"nan|inf|[\d.]e|[\d_]{300}", re.IGNORECASE)


def answer_length_limit(longest_right_answer: int) -> int:
    """The longest answer scored for a generator whose longest right answer is this long."""
    return min(MAX_ANSWER_LENGTH, _LENGTH_SLACK + _LENGTH_FACTOR * longest_right_answer)


def score_answer(
    task: ReasoningTask, answer: str, length_limit: int = MAX_ANSWER_LENGTH
) -> tuple[float, dict[str, Any]]:
    """The reward of ``answer`` to ``task`` in [0, 1], and what the step's info says of it beyond
    the score: ``answer_rejected`` or ``grader_error`` when it scores 0 for those reasons."""
    rejected = _rejection(task, answer, length_limit)
    if rejected is not None:
        return 0.0, {"answer_rejected": rejected}
    try:
        raw: object = _verifier(task.generator)(answer, task.entry)
    except Exception as exc:  # a verifier that breaks on odd input pays nothing
        return 0.0, {"grader_error": type(exc).__name__}
    if isinstance(raw, bool) or not isinstance(raw, numbers.Real) or not 0.0 <= float(raw) <= 1.0:
        return 0.0, {"grader_error": f"the verifier returned {raw!r}, not a score in [0, 1]"}
    score = float(raw)
    if task.generator in EXACT_ONLY and score < 1.0:
        return 0.0, {}  # partial credit a constant answer collects: see EXACT_ONLY
    return score, {}


def non_finite_number(text: str) -> str | None:
    """The first word of ``text`` a number parser reads as NaN or an infinity, or None.

    Words are read as they are and with the spaces and commas taken out (verifiers drop them), as
    a whole and part by part at a sign, and with ``i`` for ``j`` (``nani`` is ``nanj``)."""
    compact = _DROPPED.sub("", text)
    for source in (text,) if compact == text else (text, compact):
        for word in _WORD.findall(source):
            if not _MAYBE_NON_FINITE.search(word):
                continue
            parts = {word, *_SIGN.split(word)}
            if any(_non_finite(part) for part in parts | {part.lower().replace("i", "j") for part in parts}):
                return word
    return None


@functools.cache
def _verifier(generator: str) -> Callable[[str, dict[str, Any]], object]:
    """The generator's verifier, made once: the package makes a dataset each time it is asked for
    one, and some load fonts or word lists (figlet_font: a tenth of a second)."""
    from reasoning_gym import get_score_answer_fn

    return get_score_answer_fn(generator)


def _rejection(task: ReasoningTask, answer: str, length_limit: int) -> str | None:
    if not any(char.isprintable() and not char.isspace() for char in answer):
        return "no answer: nothing but spaces or invisible characters"
    if len(answer) > length_limit:
        return f"longer than {length_limit} characters, the most an answer to this generator may be"
    if _plain_question(task.question) in _plain(answer):
        return "the question echoed back"
    number = non_finite_number(answer)
    if number is not None and (task.answer is None or non_finite_number(task.answer) is None):
        return f"{number[:40]!r} is not a finite number"
    return None


def _non_finite(word: str) -> bool:
    """Whether ``float``, ``complex`` or ``Decimal`` reads ``word`` as NaN or an infinity."""
    for parse in (float, complex):
        try:
            if not math.isfinite(abs(parse(word))):
                return True
        except ValueError:
            pass
    try:
        return not Decimal(word).is_finite()  # also "sNaN" and "NaN123", which float refuses
    except ArithmeticError:
        return False


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


@functools.lru_cache(maxsize=4096)
def _plain_question(question: str) -> str:
    """A question made plain once: the task set's questions are few, and the check runs per answer."""
    return _plain(question)
