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
from torchcourse.quiz.grading import Grade, correct_answer_text, grade, grade_choices, parse_choices
from torchcourse.quiz.order import choice_order, new_seed, to_file
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
    order: list[int] | None = None  # the file indexes of its choices in the order shown
    earlier: bool = False  # answered before this session, in the attempt it resumed

    @property
    def correct_text(self) -> str:
        """The right answer, numbered as the learner saw the choices."""
        return correct_answer_text(self.question, self.order)


@dataclass(frozen=True)
class Resumable:
    """A chapter quiz left before its end: where it stopped."""

    attempt: object  # torchcourse.progress.store.Attempt (None when ``session`` is given)
    answered: int  # questions of the current file answered in it
    total: int
    next_number: int  # 1-based number of the first question not answered
    session: "QuizSession | None" = None  # the very session left, still in memory (the app)


def resumable(course: Course, store, chapter_id: str) -> Resumable | None:
    """The unfinished attempt at this chapter's quiz that can be resumed, or None (none left
    half-way, nothing of the current file answered in it, or nothing left to answer)."""
    cp = checkpoint_for(course, chapter_id)
    if cp is None or not cp.questions:
        return None
    attempt = store.open_attempt(chapter_id)
    if attempt is None:
        return None
    done = {a.question_id for a in attempt.answers}
    flags = [q.id in done for q in cp.questions]
    if not any(flags) or all(flags):
        return None
    return Resumable(attempt, sum(flags), len(flags), flags.index(False) + 1)


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


def wrong_items(store, session: "QuizSession") -> list[tuple[str, Question]]:
    """The session's questions whose latest stored answer is wrong or missing: what a retake of
    the missed ones asks (``torchcourse quiz --wrong`` and the app's retake)."""
    latest: dict[str, bool] = {}
    for a in store.answers(chapter_id=session.chapter_id):
        latest[a.question_id] = bool(a.correct)
    return [(cid, q) for cid, q in session.items if not latest.get(q.id, False)]


def limit_to_wrong(session: "QuizSession", store) -> int:
    """Ask only :func:`wrong_items`; the others, right last time, keep counting (``carried``).
    Returns how many are asked (0: nothing was wrong, the session is left whole)."""
    keep = wrong_items(store, session)
    if keep:
        session.carried = len(session.items) - len(keep)
        session.items = keep
    return len(keep)


class QuizSession:
    def __init__(
        self,
        course: Course,
        store,
        items: list[tuple[str, Question]],
        chapter_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
        seed: int | None = None,
    ):
        self.course = course
        self.store = store
        self.items = items
        self.chapter_id = chapter_id  # None in review mode
        self.clock = clock
        self.seed = new_seed() if seed is None else int(seed)  # the choices' order (quiz/order.py)
        self.attempt_id: int | None = None  # the stored attempt (chapter quizzes), made at the first save
        self._orders: dict[tuple[str, str], list[int]] = {}
        self._answered: set[tuple[str, str]] = set()  # (chapter, question) answered in this attempt
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
        self.carried = 0  # right in the latest attempt and not asked again (limit_to_wrong): they count

    # -- construction -------------------------------------------------------------------

    @classmethod
    def for_chapter(cls, course: Course, store, chapter_text: str, clock=None, seed: int | None = None,
                    resume: Resumable | None = None) -> "QuizSession":
        """A fresh attempt (choices in the order ``seed`` gives; None: a new random seed), or,
        with ``resume`` (from :func:`resumable`), the attempt left half-way: its seed, its
        answers counted once, the first question not answered next."""
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
        if any(q.was for q in cp.questions):
            from torchcourse.quiz.bank import adopt_renamed_questions

            adopt_renamed_questions(course, store, {cid})
        session = cls(course, store, [(cid, q) for q in cp.questions], chapter_id=cid, clock=clock,
                      seed=resume.attempt.seed if resume is not None else seed)
        if resume is not None:
            session._resume(resume.attempt)
        return session

    def _resume(self, attempt) -> None:
        self.attempt_id = attempt.id
        latest = {a.question_id: a for a in attempt.answers}  # later answers overwrite
        for cid, q in self.items:
            a = latest.get(q.id)
            if a is None:
                continue
            order = list(a.shown) if a.shown and len(a.shown) == len(q.choices) else self.order(cid, q)
            self._orders[(cid, q.id)] = order
            self.results.append(Result(cid, q, Grade(a.correct, a.answer), order=order if q.has_choices else None, earlier=True))
            self._answered.add((cid, q.id))
        self._skip_answered()

    @classmethod
    def for_review(cls, course: Course, store, today: date | None = None, clock=None, seed: int | None = None) -> "QuizSession":
        return cls(course, store, due_questions(course, store, today), chapter_id=None, clock=clock, seed=seed)

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

    @property
    def earlier(self) -> int:
        """Answers counted from the attempt this session resumed."""
        return sum(1 for r in self.results if r.earlier)

    def order(self, chapter_id: str, question: Question) -> list[int]:
        """The file indexes of the question's choices, in the order they are shown this attempt."""
        key = (chapter_id, question.id)
        if key not in self._orders:
            self._orders[key] = choice_order(self.seed, chapter_id, question)
        return self._orders[key]

    def shown_choices(self, chapter_id: str, question: Question) -> list[str]:
        """The choices' texts as shown (numbered 1.. on screen in this order)."""
        return [question.choices[i] for i in self.order(chapter_id, question)]

    def _skip_answered(self) -> None:
        while self.index < len(self.items) and (self.items[self.index][0], self.items[self.index][1].id) in self._answered:
            self.index += 1

    def snippet_for(self, chapter_id: str, question: Question) -> Snippet | None:
        if question.kind != "predict" or not question.snippet:
            return None
        chapter = self.course.chapter(chapter_id)
        return chapter.snippet(question.snippet) if chapter is not None else None

    def where(self, result: Result) -> str:
        return section_label(self.course, result.chapter_id, result.question.section)

    # -- actions ------------------------------------------------------------------------

    def answer(self, response) -> Result:
        """Grade ``response`` for the current question, store it, move on.

        For a choice question the response is in SHOWN positions: an index or indexes from 0
        as on screen, or the typed text (``"2"``, ``"1 3"``, numbered from 1 as shown); other
        kinds as in ``grading.grade``. What is stored is the file's indexes, plus the order shown.
        """
        item = self.current
        if item is None:
            raise IndexError("the quiz is over")
        chapter_id, question = item
        order = self.order(chapter_id, question) if question.has_choices else None
        if order is not None:
            if isinstance(response, str):
                parsed = parse_choices(response, len(order), multiple=question.multiple)
                g = Grade(False, response.strip()) if parsed is None else grade_choices(question, to_file(order, parsed))
            else:
                shown = [response] if isinstance(response, int) else list(response)
                g = grade_choices(question, to_file(order, shown))
        else:
            g = grade(question, response)
        at = self.clock() if self.clock is not None else datetime.now(timezone.utc)
        with self._save_lock:
            self.unsaved.append((chapter_id, question.id, g.answer, g.correct, at, order))
        result = Result(chapter_id, question, g, order=order)
        self.results.append(result)
        self._answered.add((chapter_id, question.id))
        self.index += 1
        self._skip_answered()
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
                cid, qid, answer, correct, at, order = self.unsaved[0]
                if self.attempt_id is None and self.chapter_id is not None:
                    # the first answer makes the attempt (a quiz left before any answer is none)
                    self.attempt_id = store.start_attempt(self.chapter_id, self.seed, at=at)
                store.record_answer(cid, qid, answer, correct, at=at, shown=order, attempt_id=self.attempt_id)
                self.unsaved.pop(0)

    def finish(self) -> list[str]:
        """Update completion of the chapters involved; return the ids now completed."""
        self.save()  # raises StoreError: completion is never computed without every answer
        if self.done and self.attempt_id is not None:
            (self.writer or self.store).finish_attempt(self.attempt_id)
        chapter_ids = sorted({cid for cid, _ in self.items[: max(self.index, 0)]} | ({self.chapter_id} if self.chapter_id else set()))
        store = self.writer or self.store
        self.completed = [cid for cid in chapter_ids if update_completion(self.course, store, cid)]
        return self.completed

    def outcome(self, goto: tuple[str, str] | None = None) -> QuizOutcome:
        return QuizOutcome(self.chapter_id, self.score, self.total, goto)


__all__ = ["QuizSession", "QuizOutcome", "QuizError", "Result", "Resumable", "resumable", "section_label", "chapter_label", "run_output"]


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
