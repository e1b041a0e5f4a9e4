"""The quiz screen's persistence: answers and completion written on a worker thread through a
connection of their own, and the half-done attempt a chapter quiz can resume.

A locked, full or read-only database must never freeze the screen: a failed write is a
notification saying what was not saved and why, and the answers stay in the session for the
next try (:class:`torchcourse.quiz.session.QuizSession` keeps them).
"""

from __future__ import annotations

import threading

from torchcourse.progress.store import StoreError
from torchcourse.quiz.session import QuizSession, Resumable, resumable

SAVE_GROUP = "quiz-save"
_WRITER_LOCK = threading.Lock()


def refresh_below(app) -> None:
    """After a closed quiz's completion is stored: the screen now on top shows it again."""
    screen = app.screen
    if not getattr(screen, "is_quiz", False) and hasattr(screen, "refresh_data"):
        screen.refresh_data()


# chapter quizzes left half-way in this process, by (database, course, chapter): Esc and
# reopening at once must not depend on the background write having landed yet
_LEFT: dict[tuple[str, str, str], QuizSession] = {}


def _key(store, chapter_id: str) -> tuple[str, str, str]:
    return (str(getattr(store, "path", "")), str(getattr(store, "course_id", "")), chapter_id)


def remember_left(store, session: QuizSession | None) -> None:
    """Note the chapter quiz being closed: kept while half-done, forgotten once finished."""
    if session is None or session.chapter_id is None:
        return
    key = _key(store, session.chapter_id)
    if session.answered and not session.done:
        _LEFT[key] = session
    else:
        _LEFT.pop(key, None)


def forget_left(store, chapter_id: str | None) -> None:
    if chapter_id is not None:
        _LEFT.pop(_key(store, chapter_id), None)


def resume_offer(course, store, chapter_id: str | None) -> Resumable | None:
    """The attempt at this chapter's quiz that was left half-way, or None. A store that cannot
    be read offers nothing: the quiz starts afresh and the answers are still stored as given."""
    if chapter_id is None:
        return None
    left = _LEFT.get(_key(store, chapter_id))
    if left is not None and left.answered and not left.done and left.course is course:
        return Resumable(None, left.answered, left.total, left.index + 1, session=left)
    try:
        return resumable(course, store, chapter_id)
    except StoreError:
        return None


def retake_offer(course, store, session) -> tuple[int, int, int] | None:
    """(right, total, wrong) of this chapter's latest checkpoint attempt when it failed and some
    of it was right (a retake may ask only the wrong ones), else None."""
    if session is None or session.chapter_id is None:
        return None
    try:
        if not store.answers(chapter_id=session.chapter_id):
            return None
        from torchcourse.quiz.completion import latest_attempt, passed
        from torchcourse.quiz.session import wrong_items

        right, total = latest_attempt(course, store, session.chapter_id)
        wrong = len(wrong_items(store, session))
    except Exception:  # a store that cannot be read: the quiz starts whole, as before
        return None
    if not total or passed(right, total) or not 0 < wrong < len(session.items):
        return None
    return right, total, wrong


def save_in_background(screen, finish: bool = False, on_completed=None) -> None:
    """Store the answers ``screen.session`` holds (``finish``: and the chapter's completion) on a
    thread. ``on_completed(ids)`` runs on the UI thread with the chapters now completed, while
    the screen is still shown; once it is closed, the screen below refreshes instead."""
    s = screen.session
    if s is None:
        return
    app, store = screen.app, screen.store

    def job():
        try:
            with _WRITER_LOCK:
                if s.writer is None:  # its own connection: UI reads never queue behind it
                    from torchcourse.progress import open_store

                    s.writer, _ = open_store(store.path, course_id=store.course_id)
            if not finish:
                s.save()
                return
            completed = s.finish()
            if screen.is_attached and on_completed is not None:
                app.call_from_thread(on_completed, completed)
            else:  # the quiz is closed: the screen below (home) shows the stored state again
                app.call_from_thread(refresh_below, app)
        except Exception as exc:  # noqa: BLE001 - StoreError or an OS error: say it, keep going
            n = len(s.unsaved)
            what = f"{n} 题的作答" if n else "本章的完成状态"
            app.call_from_thread(
                app.notify, f"{what}没有保存：{exc}。答案先留在内存里，下次作答或结束测验时会再试。",
                title="进度没有保存", severity="error", timeout=15,
            )

    app.run_worker(job, thread=True, group=SAVE_GROUP, exit_on_error=False)


__all__ = ["SAVE_GROUP", "refresh_below", "resume_offer", "remember_left", "forget_left", "save_in_background"]
