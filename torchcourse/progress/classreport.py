"""A class's progress as one table: chapters complete, reading minutes, quiz scores, last active.

Two sources, one shape: each learner's progress database in a class's data root (``serve
--users``: ``<data root>/<name>/data/progress.sqlite3``, read read-only, so it works while serve
runs), or a folder of files ``torchcourse export`` wrote (one learner per file, named after the
file's stem; a JupyterHub class collects those). Both are read into the export's dictionary shape
(:meth:`Store.export_data`) by the small readers here, then :func:`learner_row` makes one row.

The core: no Textual, no aiohttp; ``torchcourse class report`` is its command-line wrapper.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS = ("learner", "chapters_complete", "reading_minutes", "quiz_correct", "quiz_answered", "quiz_by_chapter",
           "last_active")
HEADINGS = ("学员", "读完的章", "已读分钟", "测验答对", "测验已答", "各章测验", "最后活动")


class ReportError(ValueError):
    """A source that cannot be read; the message names the file (Chinese)."""


@dataclass
class LearnerRow:
    learner: str
    chapters_complete: list[str] = field(default_factory=list)
    reading_minutes: float = 0.0
    quiz: dict[str, tuple[int, int]] = field(default_factory=dict)  # chapter → (correct, answered), last answers
    last_active: str = ""
    problem: str = ""  # why this learner's data could not be read ("" when it could)

    @property
    def quiz_correct(self) -> int:
        return sum(c for c, _n in self.quiz.values())

    @property
    def quiz_answered(self) -> int:
        return sum(n for _c, n in self.quiz.values())

    def cells(self) -> tuple[str, ...]:
        by_chapter = " ".join(f"{cid}:{c}/{n}" for cid, (c, n) in sorted(self.quiz.items()))
        return (self.learner, " ".join(self.chapters_complete) or "-", f"{self.reading_minutes:.0f}",
                str(self.quiz_correct), str(self.quiz_answered), by_chapter or "-", self.last_active or "-")


# -- reading the sources -------------------------------------------------------------------------


def read_database(db: Path, course_id: str) -> dict:
    """The export-shaped data of one learner's progress database (read-only; nothing written)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise ReportError(f"{db}: 打不开进度数据库（{exc}）") from None
    try:
        def rows(sql: str):
            return conn.execute(sql, (course_id,)).fetchall()

        return {
            "course": course_id,
            "chapters": [{"chapter_id": r[0], "completed": bool(r[1]), "completed_at": r[2]}
                         for r in rows("SELECT chapter_id, completed, completed_at FROM chapters WHERE course_id = ?")],
            "answers": [{"chapter_id": r[0], "question_id": r[1], "correct": bool(r[2]), "at": r[3]}
                        for r in rows("SELECT chapter_id, question_id, correct, at FROM answers WHERE course_id = ? ORDER BY at, id")],
            "runs": [{"at": r[0]} for r in rows("SELECT at FROM runs WHERE course_id = ?")],
            "breaks": [{"at": r[0]} for r in rows("SELECT at FROM breaks WHERE course_id = ?")],
            "edits": [{"updated_at": r[0]} for r in rows("SELECT updated_at FROM snippet_edits WHERE course_id = ?")],
            "parts_read": [{"chapter_id": r[0], "part": r[1], "at": r[2]}
                           for r in rows("SELECT chapter_id, part_index, at FROM parts_read WHERE course_id = ?")],
        }
    except sqlite3.Error as exc:
        raise ReportError(f"{db}: 读不了进度数据库（{exc}）") from None
    finally:
        conn.close()


def read_export(path: Path) -> dict:
    """One ``torchcourse export`` file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        from torchcourse.paths import os_reason

        raise ReportError(f"{path}: 读不了（{os_reason(exc)}）") from None
    except json.JSONDecodeError as exc:
        from torchcourse.progress.store import json_reason

        raise ReportError(f"{path}: 不是 torchcourse export 写出的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{json_reason(exc.msg)}）") from None
    if not isinstance(data, dict) or not isinstance(data.get("chapters", []), list):
        raise ReportError(f"{path}: 不是 torchcourse export 写出的 JSON（缺少 chapters 列表）")
    return data


# -- one row ----------------------------------------------------------------------------------


def learner_row(name: str, data: dict, course) -> LearnerRow:
    """The row of one learner from export-shaped ``data``; ``course`` gives the reading minutes."""
    from torchcourse.progress.reading import minutes_read

    row = LearnerRow(name)
    row.chapters_complete = sorted(str(c.get("chapter_id")) for c in data.get("chapters", [])
                                   if isinstance(c, dict) and c.get("completed"))
    parts: dict[str, set[int]] = {}
    for p in data.get("parts_read", []):
        if isinstance(p, dict) and isinstance(p.get("part"), int):
            parts.setdefault(str(p.get("chapter_id")), set()).add(p["part"])
    if course is not None:
        row.reading_minutes = sum(minutes_read(ch, parts.get(ch.id, set())) for ch in course.chapters
                                  if getattr(ch, "available", True))
    last: dict[tuple[str, str], bool] = {}  # each question's last answer counts
    for a in data.get("answers", []):
        if isinstance(a, dict):
            last[(str(a.get("chapter_id")), str(a.get("question_id")))] = bool(a.get("correct"))
    for (cid, _q), correct in last.items():
        c, n = row.quiz.get(cid, (0, 0))
        row.quiz[cid] = (c + int(correct), n + 1)
    times = [str(x.get(k)) for key, k in (("answers", "at"), ("runs", "at"), ("breaks", "at"), ("parts_read", "at"),
                                          ("edits", "updated_at"), ("chapters", "completed_at"))
             for x in data.get(key, []) if isinstance(x, dict) and x.get(k)]
    row.last_active = _minute(max(times)) if times else ""
    return row


def _minute(stamp: str) -> str:
    """``2026-12-04T20:41:07.123+00:00`` → ``2026-12-04 20:41`` (local time when it has an offset)."""
    from datetime import datetime

    try:
        at = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if at.tzinfo is not None:
        at = at.astimezone()
    return at.strftime("%Y-%m-%d %H:%M")


# -- the class ---------------------------------------------------------------------------------


def class_rows(course, *, users: list[str] | None = None, data_root: Path | None = None,
               progress_dir: Path | None = None) -> list[LearnerRow]:
    """One row per learner: ``users`` (names) with ``data_root`` (a ``serve --users`` class), and/or
    every ``*.json`` export in ``progress_dir``. A learner whose data cannot be read gets a row
    with ``problem`` set; one who has not opened the course yet gets an empty row."""
    out: list[LearnerRow] = []
    for name in users or []:
        db = Path(data_root) / name / "data" / "progress.sqlite3"
        if not db.exists():
            out.append(LearnerRow(name))  # not here yet
            continue
        try:
            out.append(learner_row(name, read_database(db, course.id), course))
        except ReportError as exc:
            out.append(LearnerRow(name, problem=str(exc)))
    if progress_dir is not None:
        for path in sorted(Path(progress_dir).glob("*.json")):
            try:
                data = read_export(path)
            except ReportError as exc:
                out.append(LearnerRow(path.stem, problem=str(exc)))
                continue
            out.append(learner_row(path.stem, data, course))
    return out


def as_csv(rows: list[LearnerRow]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS + ("problem",))
    for r in rows:
        by_chapter = " ".join(f"{cid}:{c}/{n}" for cid, (c, n) in sorted(r.quiz.items()))
        w.writerow((r.learner, " ".join(r.chapters_complete), f"{r.reading_minutes:.1f}", r.quiz_correct,
                    r.quiz_answered, by_chapter, r.last_active, r.problem))
    return buf.getvalue()


def as_text(rows: list[LearnerRow]) -> str:
    import unicodedata

    def cell_len(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    table = [HEADINGS] + [r.cells() for r in rows]
    widths = [max(cell_len(line[i]) for line in table) for i in range(len(HEADINGS))]
    out = ["  ".join(cell + " " * (widths[i] - cell_len(cell)) for i, cell in enumerate(line)).rstrip() for line in table]
    out.extend(f"{r.learner}：{r.problem}" for r in rows if r.problem)
    return "\n".join(out) + "\n"
