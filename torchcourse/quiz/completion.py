"""When is a chapter completed?

A chapter is completed when

1. all its break points are passed: the store's ``furthest_break >= chapter.break_points``; and
2. its latest checkpoint attempt scored at least 80 %. The *attempt* is the latest stored
   answer to each question of the chapter's current checkpoint file (answers given in review
   count too); a question never answered counts as wrong. A chapter without a checkpoint
   needs only the break points.

Completion is sticky: once recorded it is never taken back by a later wrong answer (saved
progress is never lost); ``torchcourse reset`` is the way to forget it.
"""

from __future__ import annotations

from torchcourse.course.model import Course
from torchcourse.quiz.bank import questions_for

PASS_RATIO = 0.8


def latest_attempt(course: Course, store, chapter_id: str) -> tuple[int, int]:
    """(right, total) over the latest answer to each question of the chapter's checkpoint."""
    questions = questions_for(course, chapter_id)
    latest: dict[str, bool] = {}
    for a in store.answers(chapter_id=chapter_id):  # oldest first: later ones overwrite
        latest[a.question_id] = bool(a.correct)
    right = sum(1 for q in questions if latest.get(q.id, False))
    return right, len(questions)


def passed(right: int, total: int) -> bool:
    return total == 0 or right >= PASS_RATIO * total - 1e-9


def is_complete(course: Course, store, chapter_id: str) -> bool:
    """Whether the rule above holds now (ignores what is recorded)."""
    chapter = course.chapter(chapter_id)
    if chapter is None or not chapter.available:
        return False
    if store.chapter_progress(chapter_id).furthest_break < chapter.break_points:
        return False
    return passed(*latest_attempt(course, store, chapter_id))


def update_completion(course: Course, store, chapter_id: str) -> bool:
    """Record the chapter as completed if it now is; return whether it is completed.
    Call it after a break point is reached and after a quiz."""
    if store.chapter_progress(chapter_id).completed:
        return True
    if is_complete(course, store, chapter_id):
        store.set_completed(chapter_id, True)
        return True
    return False


__all__ = ["PASS_RATIO", "latest_attempt", "passed", "is_complete", "update_completion"]
