"""The one progress model: each chapter's state and its words, the route's place and 继续's target.

The app's home and reader and ``torchcourse progress`` (text and ``--json``) all print what this
module decides, so the same stored data reads the same everywhere (issue 49, walk M3). A
chapter's state, from first to last:

==========  =========================================  =====================================
state       when                                       words
==========  =========================================  =====================================
todo        nothing read or reached                    未开始
reading     some break reached, a part read, a place   读到一半 k/N
quiz        every break reached, checkpoint not taken  已读完 · 测验待做
halfway     every break reached, an attempt left half-way  测验做到一半 2/13（m 接着做）
failed      every break reached, latest attempt < 80%  测验未通过 12/17（71%，要 80%）
done        completed (sticky)                         已完成
==========  =========================================  =====================================

(``unavailable``: 暂未上线, a planned chapter.) A checkpoint answered but failed before the
reading is done adds its score to 读到一半. Never imports textual.
"""

from __future__ import annotations

from typing import NamedTuple

from torchcourse.course import Chapter, Course, Route, chapter_minutes
from torchcourse.progress.reading import minutes_read



class ChapterStatus(NamedTuple):  # defined at start-up: a NamedTuple costs a fifth of a dataclass
    chapter: Chapter
    minutes: int
    status: str  # "todo" | "doing" | "done" | "unavailable" (coarse: what the route counts)
    furthest_break: int
    read_minutes: float
    state: str = "todo"  # "todo" | "reading" | "quiz" | "failed" | "done" | "unavailable"
    words: str = "未开始"  # the state in the learner's words (see the module docstring)
    score: tuple[int, int] | None = None  # (right, total) of the latest checkpoint attempt, if any

    @property
    def counts_in_totals(self) -> bool:
        """The appendix is a table to consult, not reading: no route or course total counts it."""
        return getattr(self.chapter, "kind", "chapter") != "appendix"


STATUS_TEXT = {"todo": "未开始", "doing": "读到一半", "done": "已完成", "unavailable": "暂未上线"}
STATUS_ICON = {"todo": "○", "doing": "◐", "done": "●", "unavailable": "·"}
STATE_ICON = {"todo": "○", "reading": "◐", "quiz": "◑", "failed": "◑", "done": "●", "unavailable": "·"}


def score_words(right: int, total: int) -> str:
    """``12/17（71%，要 80%）``: a checkpoint's latest score and the pass mark."""
    from torchcourse.quiz.completion import PASS_RATIO

    return f"{right}/{total}（{round(100 * right / total) if total else 0}%，要 {round(PASS_RATIO * 100)}%）"


def halfway_words(answered: int, total: int) -> str:
    """``测验做到一半 2/13（m 接着做）``: an attempt left half-way is not a verdict (walk B M2)."""
    return f"测验做到一半 {answered}/{total}（m 接着做）"


def chapter_status(chapter: Chapter, progress, parts_read: set[int] | None = None, placed: bool = False,
                   score: tuple[int, int] | None = None, halfway: tuple[int, int] | None = None) -> ChapterStatus:
    """The chapter's state and words (the module docstring's table). ``parts_read``: the parts
    the learner really read (see :mod:`torchcourse.progress.reading`); the minutes read count
    those, never the breaks reached with ``n``. ``score``: (right, total) of the latest
    checkpoint attempt, None when it was never answered; ``halfway``: (answered, total) of an
    attempt left half-way, which is said as such instead of a failed score."""
    minutes = chapter_minutes(chapter)
    if not chapter.available:
        return ChapterStatus(chapter, minutes, "unavailable", 0, 0.0, "unavailable", "暂未上线")
    furthest = progress.furthest_break if progress else 0
    done = bool(progress and progress.completed)
    status = "done" if done else "doing" if furthest > 0 or parts_read or placed else "todo"
    # a completed chapter (read to its end, its checkpoint passed) counts whole: a finished route
    # never reads 0 minutes (walk M2); otherwise the parts really read
    read = float(minutes) if done else minutes_read(chapter, parts_read)
    failed = None
    if score is not None and score[1]:
        from torchcourse.quiz.completion import passed

        failed = None if passed(*score) else score_words(*score)
    if halfway is not None and not done:
        failed = None
    if done:
        state, words = "done", "已完成"
    elif furthest >= chapter.break_points and (furthest > 0 or status == "doing"):
        if halfway is not None:
            state, words = "quiz", f"已读完 · {halfway_words(*halfway)}"
        else:
            state, words = ("failed", f"测验未通过 {failed}") if failed else ("quiz", "已读完 · 测验待做 (m)")
        status = "doing"
    elif status == "doing":
        state, words = "reading", f"读到一半 {furthest}/{chapter.break_points}"
        if failed:
            words += f" · 测验未通过 {failed}"
        elif halfway is not None:
            words += f" · {halfway_words(*halfway)}"
    else:
        state, words = "todo", "未开始"
        if failed:
            state, status, words = "reading", "doing", f"未开始读 · 测验未通过 {failed}"
        elif halfway is not None:
            state, status, words = "reading", "doing", f"未开始读 · {halfway_words(*halfway)}"
    return ChapterStatus(chapter, minutes, status, furthest, read, state, words, score)


def scores(course: Course, store) -> dict[str, tuple[int, int]]:
    """(right, total) of each answered chapter's latest checkpoint attempt (the completion rule's)."""
    answered = {a.chapter_id for a in store.answers()}
    if not answered:
        return {}
    from torchcourse.quiz.completion import latest_attempt

    out = {}
    for cid in answered:
        ch = course.chapter(cid)
        if ch is None or not ch.available or ch.checkpoint is None:
            continue
        try:
            out[cid] = latest_attempt(course, store, cid)
        except Exception:  # a broken checkpoint file: no score rather than no home screen
            continue
    return out


def halfway(course: Course, store, chapter_ids) -> dict[str, tuple[int, int]]:
    """(answered, total) of each of these chapters' checkpoint attempts left half-way."""
    from torchcourse.quiz.session import resumable

    out = {}
    for cid in chapter_ids:
        try:
            left = resumable(course, store, cid)
        except Exception:  # a broken checkpoint file or store: no half-way note rather than no home
            left = None
        if left is not None:
            out[cid] = (left.answered, left.total)
    return out


def all_statuses(course: Course, store) -> dict[str, ChapterStatus]:
    progress = store.all_progress()
    parts = store.parts_read()
    placed = store.placed_chapters()  # opened and read in: "doing", even before its first break
    got = scores(course, store)
    left = halfway(course, store, got)
    return {c.id: chapter_status(c, progress.get(c.id), parts.get(c.id), c.id in placed, got.get(c.id), left.get(c.id))
            for c in course.chapters}


def status_of(course: Course, store, chapter_id: str) -> ChapterStatus | None:
    """One chapter's :func:`chapter_status` from the store, as :func:`all_statuses` gives it
    (the reader's banners print its words: the same words as home and ``torchcourse progress``)."""
    chapter = course.chapter(chapter_id)
    if chapter is None:
        return None
    score = None
    if chapter.available and chapter.checkpoint is not None and store.answers(chapter_id=chapter_id):
        from torchcourse.quiz.completion import latest_attempt

        try:
            score = latest_attempt(course, store, chapter_id)
        except Exception:  # a broken checkpoint file: no score, as all_statuses
            score = None
    left = halfway(course, store, [chapter_id]) if score is not None else {}
    return chapter_status(chapter, store.chapter_progress(chapter_id), store.parts_read().get(chapter_id),
                          chapter_id in store.placed_chapters(), score, left.get(chapter_id))


def break_words(status: ChapterStatus, k: int) -> str:
    """What a reached 🛑 k says after its label: the chapter's state in the model's words on
    the furthest break, a plain 已记下 on the ones before it."""
    return f"已记下 · {status.words}" if k >= status.furthest_break else "已记下"


def end_words(status: ChapterStatus) -> str:
    """The chapter-end panel's title: the chapter's state in the model's words."""
    return f"本章到此结束 · {status.words}"


def total_minutes(statuses: dict[str, ChapterStatus]) -> tuple[int, int]:
    """(minutes read, minutes in all) over the chapters that count (the appendix does not)."""
    counted = [s for s in statuses.values() if s.counts_in_totals]
    return round(sum(s.read_minutes for s in counted)), sum(s.minutes for s in counted)


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
        # a chapter off the route (opened from the lookup or the palette): ] goes back onto the
        # route, to its first unfinished chapter; [ has no route neighbour
        if step < 0:
            return None
        statuses = all_statuses(course, store)
        ready = [ch for cid in order if (ch := course.chapter(cid)) is not None and ch.available]
        return next((ch for ch in ready if statuses[ch.id].status != "done"), ready[0] if ready else None)
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
    read = sum(statuses[cid].read_minutes for cid in route.chapters if statuses[cid].counts_in_totals)
    return done, len(route.chapters), round(read)


def route_minutes(route: Route, statuses: dict[str, ChapterStatus]) -> int:
    """The route's reading minutes: its chapters' ⏱, the appendix (a table to consult) left out."""
    return sum(statuses[cid].minutes for cid in route.chapters if cid in statuses and statuses[cid].counts_in_totals)


def continue_target(course: Course, store) -> tuple[str, int] | None:
    """Where "继续" goes: the place saved last — also in a finished chapter, unless it was saved at
    that chapter's end — while it belongs to the current route (the chapter is on it, or the
    place was saved while on it: a chapter opened from the lookup on route B); else the route's
    first unfinished chapter (after the chapter of the saved place, when it is on the route)."""
    pos = store.last_position()
    statuses = all_statuses(course, store)
    order = route_order(course, store)
    if pos is not None:
        ch = course.chapter(pos[0])
        if ch is not None and ch.available:
            saved_on = store.position_route()
            on_route = ch.id in order or (saved_on is not None and saved_on == (store.get_route() or ""))
            at_end = statuses[ch.id].status == "done" and pos[1] >= ch.break_points
            if on_route and not at_end:
                return ch.id, min(max(0, pos[1]), ch.break_points)  # a break removed since: the last one left
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
        return f"📝 复习 (v)：今天到期 {count} 题（答错过的，改对了也隔几天再问一次）"
    return "📝 复习 (v)：今天没有到期的复习题"


def chapter_digest(chapter: Chapter) -> str:
    """A fingerprint of the chapter's text: a saved line number only means something while it is unchanged."""
    import hashlib

    return hashlib.sha1(chapter.source.encode("utf-8")).hexdigest()[:16]


def saved_place(chapter: Chapter, store) -> tuple[int, int | None, int]:
    """(part, line, offset) where ``chapter`` was last read: its exact line while its text is
    unchanged, the start of that part otherwise, its top when it was never read."""
    place = store.chapter_place(chapter.id)
    if place is None:
        return 0, None, 0
    part = min(max(0, place["part"]), chapter.break_points)
    if place["line"] is not None and place["digest"] == chapter_digest(chapter):
        return part, place["line"], place["offset"]
    return part, None, 0


def resume_place(course: Course, store) -> tuple[str, int, int | None, int]:
    """(chapter, part, line, offset) that 继续 opens, or None: :func:`continue_target` plus the
    exact line the learner last had at the top of the view, when that chapter is unchanged."""
    target = continue_target(course, store)
    if target is None:
        return None
    cid, part = target
    place = store.reading_place()
    ch = course.chapter(cid)
    if place and place["chapter"] == cid and place["line"] is not None:
        if ch is not None and place["digest"] == chapter_digest(ch):
            return cid, part, place["line"], place["offset"]
    if part == 0 and ch is not None:  # the route's next chapter: where it was left, if ever read
        return (cid, *saved_place(ch, store))
    return cid, part, None, 0


def resume_where(course: Course, store, place) -> str:
    """Where 继续 lands, in words (the same on every visit): the break point after which it
    resumes and the section at the saved line (``断点 1/2 之后 · §第二次 backward()``), or the
    chapter's start (``开头``)."""
    from torchcourse.textwidth import display_width

    cid, part, line, _offset = place
    ch = course.chapter(cid)
    if ch is None:
        return ""
    words = [f"断点 {part}/{ch.break_points} 之后"] if part > 0 else []
    if line is not None:
        section = None
        for s in ch.sections:
            if s.line <= line:
                section = s
        # the chapter's own heading is not a section: no title twice (walk L12)
        if section is not None and (section.level <= 1 or ch.title in section.title):
            section = None
        if section is not None:
            title = section.title
            while display_width(title) > 24:  # the 继续 line stays one line at 100 columns
                title = title[:-2] + "…"
            words.append(f"§{title}")
    return " · ".join(words) or "开头"


def unwritten_in_route(course: Course, route: Route | None) -> list[Chapter]:
    """The route's chapters that are only planned (not written yet)."""
    if route is None:
        return []
    return [ch for cid in route.chapters if (ch := course.chapter(cid)) is not None and not ch.available]


def nothing_to_continue(course: Course, store) -> str:
    """What 继续 says when no written chapter of the route is left: finished only when nothing is planned."""
    if not any(ch.available for ch in course.chapters):  # a broken course.toml: nothing was read
        return "⚠️ 这份课程里没有能读的章节 —— 在终端里运行 torchcourse check 看问题出在哪"
    route = current_route(course, store)
    if route is None or not route.chapters:  # every chapter of it refused (torchcourse check says why)
        return "⚠️ 当前路线没有一章能读（课程内容有问题，作者运行 torchcourse check 可以看到原因）—— 按 r 换一条路线"
    planned = unwritten_in_route(course, route)
    if not planned:
        return "🎉 当前路线已全部读完 —— 按 r 换一条路线"
    names = "、".join(ch.id for ch in planned)
    if len(planned) == len(route.chapters):
        return f"⏳ 路线 {route.id} 的章节都还没写好（{names}）—— 按 r 换一条路线"
    return f"✔ 路线 {route.id} 已写好的章节都读完了，还没写好：{names} —— 按 r 换一条路线"
