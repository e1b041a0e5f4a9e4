"""``torchcourse progress | reset | export | import``. Never imports textual or torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torchcourse import paths
from torchcourse.commandline import course_or_none
from torchcourse.course.model import chapter_label, route_steps
from torchcourse.progress.store import Store, StoreError, open_store
from torchcourse.textwidth import display_width


_FAILED = object()


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def open_or_report(prefix: str = "torchcourse", args=None, course_id: str | None = None) -> Store | None:
    """Open the store for the course of ``args`` (``--content``, else the shipped one), printing
    its notice (if any) and errors; None when it cannot be opened."""
    aliases: tuple[str, ...] = ()
    if course_id is None:
        from torchcourse.course.loader import course_aliases_of, course_id_of

        root = paths.content_dir(getattr(args, "content", None))
        course_id, aliases = course_id_of(root), course_aliases_of(root)
    else:
        root = None
    try:
        store, notice = open_store(course_id=course_id, aliases=aliases, root=root)
    except StoreError as exc:
        _err(f"{prefix}: {exc}")
        return None
    if notice:
        _err(f"⚠️ {notice}")
    return store


def _with_store(args, action):
    """``action(store)`` in a store opened for this command and closed after it; ``_FAILED``
    (the error already printed) when the store cannot be opened or the action fails."""
    store = open_or_report(args=args)
    if store is None:
        return _FAILED
    try:
        return action(store)
    except StoreError as exc:
        _err(f"torchcourse: {exc}")
        return _FAILED
    finally:
        store.close()


def summary(store: Store, course) -> dict:
    """Everything ``torchcourse progress`` shows, as plain data (also the ``--json`` output)."""
    progress = store.all_progress()
    answers = store.answers()
    runs = store.runs()
    route_id = store.get_route()
    position = store.last_position()
    rows = []
    known: set[str] = set()
    chapters = course.chapters if course is not None else []
    # minutes read: the parts really read (scrolled through or stayed in), as on the home screen
    from torchcourse.course.loader import chapter_minutes
    from torchcourse.progress.reading import minutes_read

    parts_read = store.parts_read()
    # each chapter's state and words: the one progress model the app's home prints too
    from torchcourse.progress.model import all_statuses, resume_place, resume_where, total_minutes

    statuses = all_statuses(course, store) if course is not None else {}
    for ch in chapters:
        known.add(ch.id)
        rows.append(_chapter_row(ch.id, ch.title, ch.kind, ch.available, ch.break_points if ch.available else None, progress, answers, runs))
        read = parts_read.get(ch.id, set())
        st = statuses[ch.id]
        rows[-1].update({
            "minutes": chapter_minutes(ch), "read_minutes": round(st.read_minutes, 1),
            "parts": len(ch.parts) if ch.available else None, "parts_read": len({i for i in read if i < len(ch.parts)}),
            "state": st.state, "words": st.words, "score": list(st.score) if st.score else None,
            "counts_in_totals": st.counts_in_totals,
        })
    read_total, minutes_total = total_minutes(statuses) if statuses else (0, 0)
    place = resume_place(course, store) if course is not None else None
    resume = None
    if place is not None:
        resume = {"chapter": place[0], "part": place[1], "line": place[2], "where": resume_where(course, store, place),
                  "verb": "继续" if position else "开始"}
    extra = sorted({*progress, *(a.chapter_id for a in answers), *(r.chapter_id for r in runs)} - known)
    for cid in extra:
        rows.append(_chapter_row(cid, None, "chapter", None, None, progress, answers, runs))
    route = course.current_route(route_id) if course is not None else None  # the app's answer too
    if route is not None and route.id != route_id:  # none chosen (or gone): the default route
        route_info = {"id": route.id, "name": route.name, "chapters": route.chapters, "chosen": False}
    elif route_id:
        route_info = {"id": route_id, "name": route.name if route else None, "chapters": route.chapters if route else None, "chosen": True}
    else:
        route_info = None
    return {
        "database": str(store.path),
        "route": route_info,
        "position": {"chapter": position[0], "part": position[1]} if position else None,
        "continue": resume,  # what the app's 继续 (c) opens, in its words
        "streak": store.streak(),
        "active_days": len(store.activity()),
        "answers": len(answers),
        "correct": sum(a.correct for a in answers),
        "runs": len(runs),
        "read_minutes": round(read_total),
        "total_minutes": minutes_total,  # the appendix (a table to consult) is not counted
        "planned_minutes": any(r["available"] is False for r in rows),  # targets, not measured text
        "chapters": rows,
    }


def _chapter_row(cid, title, kind, available, break_points, progress, answers, runs) -> dict:
    p = progress.get(cid)
    mine = [a for a in answers if a.chapter_id == cid]
    return {
        "id": cid,
        "title": title,
        "kind": kind,
        "available": available,  # None: the chapter is no longer in the course
        "break_points": break_points,
        # past the last break is stored as PAST_FINAL_BREAK: shown as the chapter's own count
        "furthest_break": (min(p.furthest_break, break_points) if break_points is not None else p.furthest_break) if p else 0,
        "completed": bool(p and p.completed),
        "completed_at": p.completed_at if p else None,
        "answers": len(mine),
        "correct": sum(a.correct for a in mine),
        "questions": len({a.question_id for a in mine}),
        "runs": sum(1 for r in runs if r.chapter_id == cid),
    }


def _status(row: dict) -> str:
    """A chapter the course no longer has (the model cannot place it): the model's words anyway."""
    from torchcourse.progress.model import STATUS_TEXT

    if row["completed"]:
        when = f"（{row['completed_at'][:10]}）" if row["completed_at"] else ""
        return f"{STATUS_TEXT['done']}{when}"
    fb = row["furthest_break"]
    if fb:
        total = f"/{row['break_points']}" if row["break_points"] else ""
        return f"{STATUS_TEXT['doing']} {fb}{total}"
    if row["available"] is False:
        return STATUS_TEXT["unavailable"]
    return STATUS_TEXT["todo"]


def format_summary(data: dict, cpm: int = 170) -> str:
    """``cpm``: the course's chars_per_minute (the reading-credit rule names it)."""
    lines = []
    route = data["route"]
    if route is None:
        lines.append("路线：还没有选（在应用里选一条路线）")
    elif route["name"]:
        default = "" if route.get("chosen", True) else " · 默认路线（还没有换过；在应用里按 r 换）"
        chain = " → ".join(route_steps(route["chapters"], {r["id"]: r["kind"] for r in data["chapters"]}))
        lines.append(f"路线：{route['id']} — {route['name']}（{chain}）{default}")
    else:
        lines.append(f"路线：{route['id']}（课程里已没有这条路线）")
    pos = data["position"]
    go = data.get("continue")
    if go:
        row = next((r for r in data["chapters"] if r["id"] == go["chapter"]), {})
        where = "" if go["where"] == "开头" and go["verb"] == "开始" else f" · {go['where']}"
        lines.append(f"{go['verb']}（应用里按 c）：{go['chapter']} {row.get('title') or ''}{where}")
    elif pos:
        row = next((r for r in data["chapters"] if r["id"] == pos["chapter"]), {})
        label = chapter_label(pos["chapter"], row.get("kind", "chapter"))
        # the same words as the app's 继续 line: "断点 k/N 之后", or the chapter's start
        if pos["part"] > 0:
            total = f"/{row['break_points']}" if row.get("break_points") else ""
            part = min(pos["part"], row["break_points"]) if row.get("break_points") else pos["part"]
            where = f" · 断点 {part}{total} 之后"
        else:
            where = " · 开头"
        lines.append(f"上次读到：{label}{where}")
    if data["total_minutes"]:
        planned = "，未写的章按目标计" if data["planned_minutes"] else ""
        from torchcourse.progress.reading import HOW_IT_COUNTS, reading_pace

        # the rule the app counts by, in the words of its own help (review-00 F3)
        lines.append(f"阅读：已读约 {data['read_minutes']}/{data['total_minutes']} 分钟（和首页的算法相同{planned}）")
        lines.append("  " + HOW_IT_COUNTS.format(cpm=reading_pace(cpm), est=cpm))
    lines.append(f"连续打卡：{data['streak']} 天（共 {data['active_days']} 天有学习记录）")
    lines.append(f"测验：作答 {data['answers']} 次，答对 {data['correct']} 次；运行代码 {data['runs']} 次")
    lines.append("")
    rows = data["chapters"]
    width = max((display_width(r["title"] or "") for r in rows), default=0)
    gone = False
    for r in rows:
        if r["available"] is None and not gone:
            lines.append("课程里已没有的章节（进度仍保留）：")
            gone = True
        title = r["title"] or ""
        pad = " " * (width - display_width(title))
        quiz = f"   测验答过 {r['questions']} 题，作答 {r['answers']} 次，答对 {r['correct']} 次" if r["answers"] else ""
        status = r.get("words") or _status(r)  # the app's words for the same data
        if r.get("parts_read"):
            status = f"{status}，读过 {r['parts_read']}/{r['parts']} 段（约 {r['read_minutes']:g} 分钟）"
        lines.append(f"  {r['id']:>3}  {title}{pad}  {status}{quiz}")
    if not rows:
        lines.append("（还没有任何进度）")
    return "\n".join(lines)


def cmd_progress(args) -> int:
    if getattr(args, "content", None):
        # a --content that names no course: exit 2 naming it; a typo must not read as "all my
        # progress is gone" (walk L5). The shipped course unreadable still shows the ids.
        from torchcourse.commandline import course_or_exit

        course = course_or_exit(args, need_chapters=False)
    else:
        course = course_or_none(args)
    data = _with_store(args, lambda store: summary(store, course))
    if data is _FAILED:
        return 1
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(format_summary(data, course.chars_per_minute if course is not None else 170))
    return 0


def _has_progress(store: Store, chapter_id: str) -> bool:
    return chapter_id in store.all_progress() or bool(store.answers(chapter_id)) or any(r.chapter_id == chapter_id for r in store.runs())


def cmd_reset(args) -> int:
    chapter_id = label = None
    if not args.all:
        # the course's own id (``1`` is chapter 01); an id the course no longer has is still
        # resettable while the store holds progress for it
        course = course_or_none(args)
        chapter = course.find_chapter(args.chapter) if course is not None else None
        chapter_id = chapter.id if chapter is not None else args.chapter
        label = chapter.label if chapter is not None else chapter_label(chapter_id)
        if chapter is None:
            known = _with_store(args, lambda store: _has_progress(store, chapter_id))
            if known is _FAILED:
                return 1
            if not known:
                ids = "、".join(c.id for c in course.chapters) if course is not None else ""
                _err(f"torchcourse reset: 没有这一章的进度：{args.chapter!r}，什么都没有清除。" + (f"已有的章节：{ids}" if ids else ""))
                return 2
    what = "全部进度（路线、读到的位置、测验记录、运行记录、改过的代码）" if chapter_id is None else f"{label}的进度（断点、测验记录、运行记录、改过的代码）"
    if not args.yes and not _confirm(f"确定要清除{what}吗？[y/N] ",
                                     f"torchcourse: 没有清除任何东西：要清除{what}需要确认，但标准输入不是终端。确定的话请加 --yes。",
                                     "已取消，什么都没有清除。"):
        return 1
    if _with_store(args, lambda store: store.reset(chapter_id)) is _FAILED:
        return 1
    print(f"已清除{what}。")
    return 0


def _confirm(question: str, not_a_terminal: str, cancelled: str) -> bool:
    """Ask a yes/no question at a terminal; without one, say ``not_a_terminal`` and refuse."""
    if not _isatty(sys.stdin):
        _err(not_a_terminal)
        return False
    try:
        reply = input(question)
    except EOFError:
        reply = ""
    if reply.strip().lower() not in ("y", "yes", "是"):
        print(cancelled)
        return False
    return True


def cmd_export(args) -> int:
    if args.file == "-":  # like `why -` reads stdin: `-` is stdout, never a file named "-"
        data = _with_store(args, lambda store: store.export_data())
        if data is _FAILED:
            return 1
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return 0
    target = Path(args.file)
    if target.is_dir():
        _err(f"torchcourse export: {target} 是一个目录；请给一个文件名，例如 {target / 'torchcourse-progress.json'}")
        return 2
    if target.exists() and not getattr(args, "force", False) and not _confirm(
            f"{target.resolve()} 已经存在，覆盖它吗？[y/N] ",
            f"torchcourse export: {target.resolve()} 已经存在，没有覆盖它。要覆盖请加 --force，或者换一个文件名。",
            "已取消，没有覆盖那个文件。"):
        return 1
    if _with_store(args, lambda store: store.export_json(target)) is _FAILED:
        return 1
    print(f"已把进度导出到 {target.resolve()}")
    return 0


def _isatty(stream) -> bool:
    """A closed stream (``<&-`` leaves ``sys.stdin`` None) is not a terminal either."""
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def _break_counts(args) -> dict[str, int] | None:
    """The open course's chapters and their break points (an import's bounds); None when the
    course cannot be loaded (a note says so)."""
    course = course_or_none(args)
    if course is None:
        return None
    return {ch.id: ch.break_points for ch in course.chapters if ch.available}


def cmd_import(args) -> int:
    if args.file == "-":  # the counterpart of `export -`
        text = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                from torchcourse.paths import os_reason

                _err(f"torchcourse: 标准输入{os_reason(exc)}，什么都没有导入。")
                return 1
        if not text.strip():
            _err("torchcourse import: 标准输入是空的，什么都没有导入。用法：torchcourse import - < 导出的文件.json")
            return 1
        source, where = Path("<标准输入>"), "标准输入"
    else:
        source, text, where = Path(args.file), None, str(Path(args.file).resolve())
    bounds = _break_counts(args)
    from torchcourse.course.loader import course_aliases_of

    aliases = course_aliases_of(paths.content_dir(getattr(args, "content", None)))
    counts = _with_store(args, lambda store: store.import_json(source, text=text, break_counts=bounds, aliases=aliases))
    if counts is _FAILED:
        return 1
    print(
        f"已从 {where} 合并进度：章节 {counts['chapters']} 个有变化，"
        f"新增答题 {counts['answers']} 条、运行 {counts['runs']} 条、断点记录 {counts['breaks']} 条、改过的代码 {counts.get('edits', 0)} 段（原有进度都保留）。"
    )
    return 0
