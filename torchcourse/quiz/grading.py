"""Grade an answer to any kind of question.

Responses, by kind:

- ``single`` / ``predict`` with choices: the chosen index (from 0);
- ``multi``: the chosen indexes (any iterable); right only when the set is exactly the answer;
- ``fill`` / ``predict`` with ``accept``: the typed text, compared after :func:`normalize`;
- ``open``: ``True`` / ``False``, the learner's own verdict after seeing the reference.

What is stored as the answer text (``store.record_answer(..., answer=...)``): choice kinds store
their indexes from 0 joined by ``,`` (``"2"``, ``"0,2"``); fill stores the text as typed;
open stores ``"self:right"`` or ``"self:wrong"``.

Parsing what a learner types (``parse_choices``) accepts numbers from 1 as shown on screen,
separated by spaces, commas (half- or full-width) or ``、``, and letters ``A``/``b``… too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from torchcourse.quiz.bank import Question

from torchcourse.quiz.answertext import normalize  # noqa: F401 (this module's API too)


@dataclass(frozen=True)
class Grade:
    correct: bool
    answer: str  # what is stored for this answer (see the module docstring)


def grade_choices(question: Question, chosen: int | Iterable[int]) -> Grade:
    if isinstance(chosen, int):
        picked = [chosen]
    else:
        picked = sorted(set(int(i) for i in chosen))
    if question.kind == "multi":
        correct = set(picked) == set(question.answer_indexes)
    else:
        correct = len(picked) == 1 and picked[0] == question.answer
    return Grade(correct, ",".join(str(i) for i in picked))


def grade_text(question: Question, text: str) -> Grade:
    given = normalize(text)
    correct = bool(given) and any(given == normalize(a) for a in question.accept)
    return Grade(correct, text.strip())


def grade_open(question: Question, self_correct: bool) -> Grade:
    return Grade(bool(self_correct), "self:right" if self_correct else "self:wrong")


def grade(question: Question, response) -> Grade:
    """Grade ``response`` (see the module docstring for its type per kind)."""
    if question.kind == "open":
        if not isinstance(response, bool):
            raise TypeError("an open question is graded by the learner: pass True or False")
        return grade_open(question, response)
    if question.has_choices:
        if isinstance(response, str):
            parsed = parse_choices(response, len(question.choices), multiple=question.multiple)
            if parsed is None:
                return Grade(False, response.strip())
            response = parsed
        return grade_choices(question, response)
    if not isinstance(response, str):
        raise TypeError(f"a {question.kind} question takes the typed text")
    return grade_text(question, response)


_SPLIT_RE = re.compile(r"[\s,，、;；/]+")


def parse_choices(text: str, n_choices: int, multiple: bool) -> list[int] | None:
    """Turn what the learner typed (``"2"``, ``"1 3"``, ``"1,3"``, ``"A C"``) into indexes from 0.

    None when it is not a valid pick: a number out of 1..n, a repeat, nothing at all, or more
    than one pick for a single-choice question.
    """
    text = unicodedata.normalize("NFKC", text).strip()
    if not text:
        return None
    tokens = [t for t in _SPLIT_RE.split(text) if t]
    # "13" for a multi question with fewer than 10 choices means 1 and 3
    if multiple and len(tokens) == 1 and tokens[0].isdigit() and n_choices < 10 and len(tokens[0]) > 1:
        tokens = list(tokens[0])
    if multiple and len(tokens) == 1 and tokens[0].isalpha() and len(tokens[0]) > 1:
        tokens = list(tokens[0])
    out: list[int] = []
    for tok in tokens:
        if tok.isdigit():
            i = int(tok) - 1
        elif len(tok) == 1 and tok.isascii() and tok.isalpha():
            i = ord(tok.upper()) - ord("A")
        else:
            return None
        if not 0 <= i < n_choices or i in out:
            return None
        out.append(i)
    if not multiple and len(out) != 1:
        return None
    return sorted(out)


def correct_answer_text(question: Question, order: list[int] | None = None) -> str:
    """The right answer as the learner reads it: ``2) 文字`` numbered as shown (``order``: the
    file indexes in the order the choices were shown; None: the file's order), or the first
    accepted spelling."""
    if question.has_choices:
        pos = {f: p for p, f in enumerate(order)} if order else {i: i for i in range(len(question.choices))}
        keys = sorted(question.answer_indexes, key=lambda i: pos.get(i, i))
        return "；".join(f"{pos.get(i, i) + 1}) {question.choices[i]}" for i in keys)
    if question.kind == "open":
        return question.reference or ""
    return question.accept[0] if question.accept else ""


__all__ = ["Grade", "grade", "grade_choices", "grade_text", "grade_open", "normalize", "parse_choices", "correct_answer_text"]
