"""Spaced review (Leitner boxes) derived from the stored answer history — no table of its own.

Rule, replayed over each question's answers, oldest first:

- a question enters review the first time it is answered wrong;
- a wrong answer puts it in box 1; a right answer moves it one box up;
- box ``b`` is due ``INTERVALS[b - 1]`` days after the day of its latest answer
  (1, 2, 4, 8, 16 days for boxes 1..5);
- a right answer while in box 5 retires it: it is learned and never due again
  (a later wrong answer brings it back to box 1).

History is keyed by (chapter id, question id), so it survives edits to a question's wording
and to other questions; a question removed from its checkpoint file simply stops appearing.
Days are local calendar days of the answer time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from torchcourse.course.model import Course
from torchcourse.quiz.bank import Question, questions_for

INTERVALS = (1, 2, 4, 8, 16)
RETIRED = len(INTERVALS) + 1


def review_rule() -> str:
    """The rule in the learner's words, where a quiz ends (app and CLI): a question fixed the
    same day it was missed comes back once more (walk L11: it surprised a learner)."""
    days = "、".join(str(d) for d in INTERVALS)
    return (f"答错的题会进入复习，按 {days} 天的间隔再出现；当天重做改对的，隔两天也会再问一次"
            "（刚看过解析就答对还不算记住）。")


def local_day(at: datetime) -> date:
    if at.tzinfo is None:
        return at.date()
    return at.astimezone().date()


@dataclass(frozen=True)
class ReviewState:
    chapter_id: str
    question_id: str
    box: int  # 1..5, or RETIRED (6); 0 when never answered wrong
    last_day: date | None
    due: date | None  # None when not scheduled (never wrong, or retired)

    def is_due(self, today: date) -> bool:
        return self.due is not None and self.due <= today


def replay(chapter_id: str, question_id: str, answers) -> ReviewState:
    """The Leitner state after the given answers (``.correct`` and ``.at``), oldest first."""
    box = 0
    last: date | None = None
    for a in sorted(answers, key=lambda a: a.at):
        last = local_day(a.at)
        if not a.correct:
            box = 1
        elif box:
            box = min(box + 1, RETIRED)
    if box == 0 or box == RETIRED or last is None:
        return ReviewState(chapter_id, question_id, box, last, None)
    return ReviewState(chapter_id, question_id, box, last, last + timedelta(days=INTERVALS[box - 1]))


def review_states(course: Course, store) -> dict[tuple[str, str], ReviewState]:
    """Every question (of the current checkpoint files) that was ever answered, by (chapter, id)."""
    by_key: dict[tuple[str, str], list] = {}
    for a in store.answers():
        by_key.setdefault((a.chapter_id, a.question_id), []).append(a)
    out: dict[tuple[str, str], ReviewState] = {}
    for chapter in course.chapters:
        for q in questions_for(course, chapter.id):
            history = by_key.get((chapter.id, q.id))
            if history:
                out[(chapter.id, q.id)] = replay(chapter.id, q.id, history)
    return out


def due_questions(course: Course, store, today: date | None = None) -> list[tuple[str, Question]]:
    """Questions answered wrong at least once and due on ``today`` (default: the local date),
    most overdue first, then in course order."""
    today = today or date.today()
    from torchcourse.quiz.bank import adopt_renamed_questions

    adopt_renamed_questions(course, store)
    states = review_states(course, store)
    due: list[tuple[date, int, str, Question]] = []
    order = 0
    for chapter in course.chapters:
        for q in questions_for(course, chapter.id):
            order += 1
            st = states.get((chapter.id, q.id))
            if st is not None and st.is_due(today):
                due.append((st.due, order, chapter.id, q))  # type: ignore[arg-type]
    due.sort(key=lambda t: (t[0], t[1]))
    return [(cid, q) for _, _, cid, q in due]


def next_review_day(course: Course, store, after: date | None = None) -> date | None:
    """The first day after ``after`` (default today) on which some question falls due."""
    after = after or date.today()
    days = [st.due for st in review_states(course, store).values() if st.due is not None and st.due > after]
    return min(days) if days else None


__all__ = ["review_rule", "INTERVALS", "RETIRED", "ReviewState", "replay", "review_states", "due_questions", "next_review_day", "local_day"]
