"""Progress figures the home screen shows, computed from the course and the store (no Textual)."""

from __future__ import annotations

from dataclasses import dataclass

from torchcourse.course import Chapter, Course, Route, chapter_minutes
from torchcourse.course.chapter import reading_chars

DEFAULT_ROUTE = Course.DEFAULT_ROUTE


@dataclass
class ChapterStatus:
    chapter: Chapter
    minutes: int
    status: str  # "todo" | "doing" | "done" | "unavailable"
    furthest_break: int
    read_minutes: float


STATUS_TEXT = {"todo": "未开始", "doing": "读到一半", "done": "已完成", "unavailable": "暂未上线"}
STATUS_ICON = {"todo": "○", "doing": "◐", "done": "●", "unavailable": "·"}


def read_fraction(chapter: Chapter, furthest: int) -> float:
    """Share of the chapter's ⏱ characters that lie before its break point ``furthest``.

    Parts differ a lot in length (the tail after the last 🛑 is a short recap), so counting
    parts would say 「half read」 for a chapter read to its 读完了 break point.
    """
    if not chapter.parts or furthest <= 0:
        return 0.0
    if furthest >= chapter.break_points:
        return 1.0
    sizes = [reading_chars(p.text) for p in chapter.parts]
    total = sum(sizes)
    return sum(sizes[:furthest]) / total if total else 0.0


def chapter_status(chapter: Chapter, progress) -> ChapterStatus:
    minutes = chapter_minutes(chapter)
    if not chapter.available:
        return ChapterStatus(chapter, minutes, "unavailable", 0, 0.0)
    furthest = progress.furthest_break if progress else 0
    done = bool(progress and progress.completed)
    if done:
        read = float(minutes)
        status = "done"
    else:
        read = minutes * read_fraction(chapter, furthest)
        status = "doing" if furthest > 0 else "todo"
    return ChapterStatus(chapter, minutes, status, furthest, read)


def all_statuses(course: Course, store) -> dict[str, ChapterStatus]:
    progress = store.all_progress()
    return {c.id: chapter_status(c, progress.get(c.id)) for c in course.chapters}


def current_route(course: Course, store) -> Route | None:
    return course.current_route(store.get_route())


def route_order(course: Course, store) -> list[str]:
    """Chapter ids in the current route's order (the whole course when there is no route)."""
    route = current_route(course, store)
    return list(route.chapters) if route else [c.id for c in course.chapters]


def neighbour(course: Course, store, chapter_id: str, step: int) -> Chapter | None:
    """The next (step=1) or previous (step=-1) written chapter along the current route."""
    order = route_order(course, store)
    if chapter_id not in order:
        order = [c.id for c in course.chapters]
    i = order.index(chapter_id) + step
    while 0 <= i < len(order):
        ch = course.chapter(order[i])
        if ch is not None and ch.available:
            return ch
        i += step
    return None


def route_progress(route: Route, statuses: dict[str, ChapterStatus]) -> tuple[int, int, int]:
    """(chapters done, chapters in route, minutes read) — a chapter done on any route counts."""
    done = sum(1 for cid in route.chapters if statuses[cid].status == "done")
    read = sum(statuses[cid].read_minutes for cid in route.chapters)
    return done, len(route.chapters), round(read)


def continue_target(course: Course, store) -> tuple[str, int] | None:
    """Where "继续" goes: the last break point reached, unless that chapter is completed; else the
    route's first unfinished chapter (after the completed one, when there is one)."""
    pos = store.last_position()
    statuses = all_statuses(course, store)
    order = route_order(course, store)
    if pos is not None:
        ch = course.chapter(pos[0])
        if ch is not None and ch.available and statuses[ch.id].status != "done":
            return ch.id, max(0, pos[1])
        if ch is not None and ch.id in order:  # finished there: the route's next unfinished chapter
            i = order.index(ch.id) + 1
            order = order[i:] + order[:i]
    for cid in order:
        st = statuses.get(cid)
        if st and st.status in ("todo", "doing"):
            return cid, 0
    return None


def due_review_count(course: Course, store, today) -> int:
    """How many questions are due for review on ``today`` (what the home's 复习 line shows).

    Equal to ``len(due_questions(course, store, today))``; the checkpoint files are only read
    (and the quiz package only imported) when some answer history is actually due, so a
    learner who has never missed a question pays nothing at start-up.
    """
    answers = store.answers()
    if not any(not a.correct for a in answers):
        return 0
    from torchcourse.quiz.review import due_questions, replay

    by_key: dict[tuple[str, str], list] = {}
    for a in answers:
        by_key.setdefault((a.chapter_id, a.question_id), []).append(a)
    if not any(replay(cid, qid, hist).is_due(today) for (cid, qid), hist in by_key.items()):
        return 0
    return len(due_questions(course, store, today))


def review_line(count: int) -> str:
    """The home's 复习 entry."""
    if count:
        return f"📝 复习 (v)：今天到期 {count} 题"
    return "📝 复习 (v)：今天没有到期的复习题"
