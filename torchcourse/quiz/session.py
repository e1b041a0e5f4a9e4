"""One quiz being taken: the questions in order, the answers given, what is stored.

Shared by the plain-terminal quiz (``torchcourse quiz``) and the Textual screens; it never
imports textual or torch. Every answer is stored the moment it is given, so quitting half-way
(EOF, Escape, a crash) keeps what was answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import threading
from datetime import date, datetime, timezone

from torchcourse.course.model import Course, Snippet
from torchcourse.progress.store import StoreError
from torchcourse.quiz.bank import Question, checkpoint_for
from torchcourse.quiz.completion import update_completion
from torchcourse.quiz.grading import Grade, grade
from torchcourse.quiz.review import due_questions


class QuizError(Exception):
    """A quiz that cannot start; the message is for the learner (Chinese)."""


@dataclass(frozen=True)
class QuizOutcome:
    """What a finished (or abandoned) quiz screen hands back to the app.

    ``goto`` is (chapter id, section anchor) when the learner picked a missed question to
    go back and read its section; None otherwise. ``chapter_id`` is None for a review."""

    chapter_id: str | None
    score: int
    total: int
    goto: tuple[str, str] | None = None


@dataclass
class Result:
    chapter_id: str
    question: Question
    grade: Grade
    save_error: str = ""  # why this answer is not stored yet (it stays in memory, retried)


def chapter_label(course: Course, chapter_id: str) -> str:
    return course.chapter_label(chapter_id)


def section_label(course: Course, chapter_id: str, anchor: str | None) -> str:
    """``第 01 章 §标题`` — where a question's topic is taught."""
    label = chapter_label(course, chapter_id)
    chapter = course.chapter(chapter_id)
    if anchor and chapter is not None:
        section = chapter.section(anchor)
        if section is not None:
            return f"{label} §{section.title}"
    return label


class QuizSession:
    def __init__(
        self,
        course: Course,
        store,
        items: list[tuple[str, Question]],
        chapter_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ):
        self.course = course
        self.store = store
        self.items = items
        self.chapter_id = chapter_id  # None in review mode
        self.clock = clock
        self.index = 0
        self.results: list[Result] = []
        self.completed: list[str] = []
        # answers graded but not stored yet: (chapter_id, question_id, answer, correct, at),
        # oldest first. A failed write (locked, full disk, read-only file) keeps them here and
        # every later save() tries them again.
        self.unsaved: list[tuple] = []
        self.autosave = True  # False: the caller runs save() itself (the app, off the UI thread)
        self.writer = None  # a store for writes (the app gives one of its own); default self.store
        self._save_lock = threading.Lock()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def for_chapter(cls, course: Course, store, chapter_text: str, clock=None) -> "QuizSession":
        chapter = course.find_chapter(chapter_text)
        if chapter is None:
            known = "、".join(c.id for c in course.chapters)
            raise QuizError(f"没有这一章：{chapter_text!r}。已有的章节：{known}")
        cid = chapter.id
        if not chapter.available:
            raise QuizError(f"{chapter_label(course, cid)}「{chapter.title}」还没有写好，暂时没有检查点。")
        cp = checkpoint_for(course, cid)
        if cp is None or not cp.path.is_file():
            raise QuizError(f"{chapter_label(course, cid)}「{chapter.title}」没有检查点测验。")
        if not cp.questions:
            detail = f"\n{cp.problems[0]}" if cp.problems else ""
            raise QuizError(f"{chapter_label(course, cid)}的检查点文件里没有可用的题目。{detail}")
        return cls(course, store, [(cid, q) for q in cp.questions], chapter_id=cid, clock=clock)

    @classmethod
    def for_review(cls, course: Course, store, today: date | None = None, clock=None) -> "QuizSession":
        return cls(course, store, due_questions(course, store, today), chapter_id=None, clock=clock)

    # -- state --------------------------------------------------------------------------

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def done(self) -> bool:
        return self.index >= len(self.items)

    @property
    def current(self) -> tuple[str, Question] | None:
        return None if self.done else self.items[self.index]

    @property
    def score(self) -> int:
        return sum(1 for r in self.results if r.grade.correct)

    @property
    def answered(self) -> int:
        return len(self.results)

    @property
    def missed(self) -> list[Result]:
        return [r for r in self.results if not r.grade.correct]

    def snippet_for(self, chapter_id: str, question: Question) -> Snippet | None:
        if question.kind != "predict" or not question.snippet:
            return None
        chapter = self.course.chapter(chapter_id)
        return chapter.snippet(question.snippet) if chapter is not None else None

    def where(self, result: Result) -> str:
        return section_label(self.course, result.chapter_id, result.question.section)

    # -- actions ------------------------------------------------------------------------

    def answer(self, response) -> Result:
        """Grade ``response`` for the current question (see ``grading.grade``), store it, move on."""
        item = self.current
        if item is None:
            raise IndexError("the quiz is over")
        chapter_id, question = item
        g = grade(question, response)
        at = self.clock() if self.clock is not None else datetime.now(timezone.utc)
        with self._save_lock:
            self.unsaved.append((chapter_id, question.id, g.answer, g.correct, at))
        result = Result(chapter_id, question, g)
        self.results.append(result)
        self.index += 1
        if self.autosave:
            try:
                self.save()
            except StoreError as exc:
                result.save_error = str(exc)
        return result

    def save(self) -> None:
        """Store the answers not stored yet, oldest first. Raises StoreError when a write fails;
        the answers not written stay in memory for the next try."""
        store = self.writer or self.store
        with self._save_lock:
            while self.unsaved:
                cid, qid, answer, correct, at = self.unsaved[0]
                store.record_answer(cid, qid, answer, correct, at=at)
                self.unsaved.pop(0)

    def finish(self) -> list[str]:
        """Update completion of the chapters involved; return the ids now completed."""
        self.save()  # raises StoreError: completion is never computed without every answer
        chapter_ids = sorted({cid for cid, _ in self.items[: max(self.index, 0)]} | ({self.chapter_id} if self.chapter_id else set()))
        store = self.writer or self.store
        self.completed = [cid for cid in chapter_ids if update_completion(self.course, store, cid)]
        return self.completed

    def outcome(self, goto: tuple[str, str] | None = None) -> QuizOutcome:
        return QuizOutcome(self.chapter_id, self.score, self.total, goto)


__all__ = ["QuizSession", "QuizOutcome", "QuizError", "Result", "section_label", "chapter_label", "run_output"]


def run_output(result) -> tuple[str, str | None]:
    """(text to show, note) for a ``RunResult``: the real output, and a note when the run did
    not finish normally (error, timeout, skipped) or came from the cache."""
    status = str(getattr(result, "status", ""))
    actual = getattr(result, "actual", "") or ""
    message = getattr(result, "message", "") or ""
    if status in ("match", "mismatch"):
        note = "（来自本机上一次的真实运行）" if getattr(result, "cached", False) else None
        return actual, note
    if not actual and getattr(result, "expected", None):
        return result.expected, f"（{message or status}；下面是书中记录的输出）"
    return actual, f"（{message or status}）"
