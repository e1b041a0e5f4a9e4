"""A faulty or hostile progress store or import file never produces a traceback: the learner is
told what is wrong in Chinese and nothing saved is lost. Real SQLite, real `torchcourse`
processes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import cli_support
from torchcourse.progress.store import EXPORT_FORMAT, EXPORT_VERSION



def tc(*args, home: Path, tz: str = "Asia/Shanghai"):
    return cli_support.tc(*args, home=home, env={"TZ": tz})


def export(**extra) -> dict:
    return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, **extra}


ANSWER = {"chapter_id": "01", "question_id": "q1", "answer": "A", "correct": True, "at": "2025-01-01T00:00:00+00:00"}
BAD = {
    "date-9999": (json.dumps(export(answers=[dict(ANSWER, at="9999-12-31T23:00:00+00:00")])), "answers[0].at"),
    "date-year-1": (json.dumps(export(answers=[dict(ANSWER, at="0001-01-01T00:00:00+00:00")])), "answers[0].at"),
    "int-over-64-bits": (json.dumps(export(breaks=[{"chapter_id": "01", "break_index": 1 << 70, "at": "2025-01-01T00:00:00+00:00"}])), "breaks[0].break_index"),
    "furthest-over-64-bits": (json.dumps(export(chapters=[{"chapter_id": "01", "furthest_break": 1 << 64}])), "chapters[0].furthest_break"),
    "part-over-64-bits": (json.dumps(export(position={"chapter": "01", "part": 1 << 64})), "position.part"),
    "deep-nesting": ("[" * 100_000 + "]" * 100_000, "嵌套太深"),
    "course-not-text": (json.dumps(export(course=3, answers=[ANSWER])), "course：应为非空字符串"),
    "course-empty": (json.dumps(export(course="", answers=[ANSWER])), "course：应为非空字符串"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_import_refuses_values_that_would_break_the_program(tmp_path, name):
    content, needle = BAD[name]
    f = tmp_path / "in.json"
    f.write_text(content, encoding="utf-8")
    home = tmp_path / "h"
    out = tc("import", str(f), home=home)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "什么都没有导入" in out.stderr and needle in out.stderr, out.stderr
    out = tc("progress", home=home)  # east of UTC: the store still reads
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


def test_a_stored_date_at_the_calendar_edge_does_not_break_progress(tmp_path):
    home = tmp_path / "h"
    assert tc("progress", home=home).returncode == 0
    [db] = list(home.rglob("*.sqlite3"))
    with sqlite3.connect(db) as c:
        course = c.execute("SELECT DISTINCT course_id FROM settings UNION SELECT course_id FROM chapters").fetchone()
        cid = course[0] if course else "torchcourse"
        c.execute("INSERT INTO breaks (course_id, chapter_id, break_index, at) VALUES (?, '01', 1, '9999-12-31T23:59:59.000000+00:00')", (cid,))
    out = tc("progress", home=home)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


def _foreign_db(home: Path, version: int) -> Path:
    db = home / "data" / "progress.sqlite3"
    db.parent.mkdir(parents=True, exist_ok=True)
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE foo (x)")
    c.execute("INSERT INTO foo VALUES (1)")
    c.execute(f"PRAGMA user_version = {version}")
    c.commit()
    c.close()
    return db


@pytest.mark.parametrize("version", [0, 3])
def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path, version):
    home = tmp_path / "h"
    db = _foreign_db(home, version)
    before = db.read_bytes()
    out = tc("progress", home=home)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "不是 torchcourse 的进度库" in out.stderr, out.stderr
    assert db.read_bytes() == before  # not switched to WAL, not migrated
    assert not db.with_name(db.name + "-wal").exists()


def test_the_app_refuses_a_wrong_schema_like_the_cli(tmp_path):
    from test_tui_pty import Terminal

    home = tmp_path / "h"
    _foreign_db(home, 3)
    term = Terminal([], home)
    try:
        code = term.wait(timeout=120)
        text = term.text()
        assert code == 1 and "Traceback" not in text and "不是 torchcourse 的进度库" in text, text[-2000:]
    finally:
        term.close()
