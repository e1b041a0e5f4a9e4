"""The order a question's choices are shown in, drawn afresh for every attempt.

A quiz file lists the key wherever its author put it (in the course as first written, the
second choice in half the questions): shown in that order, "always pick 2" would pass. So
every attempt draws a seed, and each question's choices are shown in the order
:func:`choice_order` derives from (seed, chapter, question id): uniform over all orders, the
same on every run with the same seed (``torchcourse quiz --seed N``), and the same when a quiz
left half-way is resumed (the attempt stores its seed). The answer stored is still the file's
indexes; the order shown is stored next to it (``answers.shown``).
"""

from __future__ import annotations

import random
import secrets

from torchcourse.quiz.bank import Question

SEED_LIMIT = 2**31  # seeds are stored in SQLite INTEGER and typed on a command line


def new_seed() -> int:
    """A seed for a fresh attempt."""
    return secrets.randbelow(SEED_LIMIT)


def choice_order(seed: int, chapter_id: str, question: Question) -> list[int]:
    """The file indexes of ``question``'s choices in the order they are shown (first shown
    first). Empty for a question without choices."""
    order = list(range(len(question.choices)))
    if len(order) > 1:
        # a str seed is hashed with SHA-512 by random.seed: independent of PYTHONHASHSEED
        random.Random(f"{int(seed)}:{chapter_id}:{question.id}").shuffle(order)
    return order


def to_file(order: list[int], shown_indexes) -> list[int]:
    """Shown positions (from 0) → the file's indexes, sorted."""
    return sorted(order[i] for i in shown_indexes)


def shown_numbers(order: list[int] | None, file_indexes) -> list[int]:
    """The numbers (from 1, as on screen) the learner saw for the given file indexes, ascending."""
    if not order:
        return sorted(i + 1 for i in file_indexes)
    where = {f: pos for pos, f in enumerate(order)}
    return sorted(where[i] + 1 for i in file_indexes if i in where)


__all__ = ["SEED_LIMIT", "new_seed", "choice_order", "to_file", "shown_numbers"]
