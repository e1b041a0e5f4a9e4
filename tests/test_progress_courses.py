"""Progress belongs to one course: two courses sharing a data directory never see each other's
rows, and a database written by the previous release (schema v2) keeps its history."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from torchcourse.course import load_course
from torchcourse.progress.schema import CURRENT_VERSION
from torchcourse.progress import open_store

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def test_a_v2_database_from_the_previous_release_keeps_its_history_under_the_shipped_course(tmp_path):
    path = tmp_path / "progress.sqlite3"
    shutil.copy(HERE / "fixtures" / "progress-v2.sqlite3", path)  # written by torchcourse 0.1 (commit 44858b6)
    s, notice = open_store(path, course_id="torchcourse")
    assert notice is None
    assert s.get_route() == "A"
    assert s.last_position() == ("02", 1)
    assert s.chapter_progress("01").furthest_break == 2 and s.chapter_progress("01").completed
    assert s.chapter_progress("02").furthest_break == 1
    assert [(a.question_id, a.correct) for a in s.answers("01")] == [("stride-after-t", True), ("offset-name", False)]
    assert [(r.snippet_id, r.verdict) for r in s.runs()] == [("second-backward", "match")]
    assert sum(s.activity().values()) == 6  # three breaks, two answers, one run
    s.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
    other, _ = open_store(path, course_id="someone-elses")
    assert other.get_route() is None and other.last_position() is None
    assert other.all_progress() == {} and other.answers() == [] and other.runs() == [] and other.activity() == {}
    other.close()


def test_two_courses_in_one_store_are_kept_apart(tmp_path):
    path = tmp_path / "p.sqlite3"
    a, _ = open_store(path, course_id="a")
    b, _ = open_store(path, course_id="b")
    a.set_route("C")
    a.reach_break("01", 2)
    a.set_completed("01")
    a.record_answer("01", "q", "1", True)
    a.record_run("01", "s", "match")
    assert b.get_route() is None and b.chapter_progress("01").furthest_break == 0
    assert not b.chapter_progress("01").completed and b.answers() == [] and b.runs() == []
    b.reach_break("01", 1)
    b.reset()  # forgetting everything in b leaves a alone
    assert a.chapter_progress("01").furthest_break == 2 and a.get_route() == "C" and len(a.answers()) == 1
    # export names the course; importing it into another course is refused, into the same merges
    out = tmp_path / "a.json"
    a.export_json(out)
    assert json.loads(out.read_text(encoding="utf-8"))["course"] == "a"
    import pytest

    from torchcourse.progress import StoreError

    with pytest.raises(StoreError, match="这是课程 'a' 的进度，当前课程是 'b'"):
        b.import_json(out)
    assert b.answers() == []
    fresh, _ = open_store(tmp_path / "q.sqlite3", course_id="a")
    assert fresh.import_json(out)["answers"] == 1
    for s in (a, b, fresh):
        s.close()


def _fill(s, chapter: str) -> None:
    """One row in every per-chapter table, and the reading place, for ``chapter``."""
    s.reach_break(chapter, 2)
    s.set_completed(chapter)
    s.record_answer(chapter, "q", "1", True)
    s.record_run(chapter, "s", "match")
    s.save_edit(chapter, "s", "print(1)\n")
    s.mark_part_read(chapter, 1)
    s.set_position(chapter, 1)


def _rows(s, chapter: str) -> tuple:
    p = s.chapter_progress(chapter)
    return (p.furthest_break, p.completed, [(a.question_id, a.answer) for a in s.answers(chapter)],
            [(r.snippet_id, r.verdict) for r in s.runs(chapter)], s.edit(chapter, "s"),
            s.parts_read(chapter).get(chapter, set()))


def test_resetting_a_chapter_forgets_it_in_this_course_only(tmp_path):
    """``reset --chapter 01`` in course b: every row b has for 01 goes; course a's rows for the
    same chapter id in the same data directory, and b's other chapters, stay."""
    path = tmp_path / "p.sqlite3"
    a, _ = open_store(path, course_id="a")
    b, _ = open_store(path, course_id="b")
    _fill(a, "01")
    _fill(b, "02")
    _fill(b, "01")
    kept = (2, True, [("q", "1")], [("s", "match")], "print(1)\n", {1})
    assert _rows(a, "01") == _rows(b, "01") == _rows(b, "02") == kept
    b.reset("01")
    assert _rows(b, "01") == (0, False, [], [], None, set())
    assert b.last_position() is None
    assert _rows(b, "02") == kept
    assert _rows(a, "01") == kept, "reset --chapter in course b deleted course a's rows"
    assert a.last_position() == ("01", 1)
    for s in (a, b):
        s.close()


def _tc(*args, home, stdin=""):
    env = {"TORCHCOURSE_HOME": str(home), "PATH": "/usr/bin:/bin", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], cwd=ROOT, capture_output=True, text=True, env=env, input=stdin, timeout=300)


def _other_course(root: Path, course_id: str | None) -> Path:
    """A second course whose chapters reuse the shipped ids 00 and 01 (and its quiz ids)."""
    root.mkdir(parents=True)
    head = f'id = "{course_id}"\n' if course_id else ""
    (root / "course.toml").write_text(
        head + 'title = "另一门课"\ncheckpoints = "cp"\n\n[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "T"\npromise = "p"\ncheckpoint = "01.toml"\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text("# T\n\n⏱ 1 分钟\n\n## 一 {#one}\n\n正文。\n\n<!-- break -->\n", encoding="utf-8")
    (root / "cp").mkdir()
    (root / "cp" / "01.toml").write_text(
        'chapter = "01"\n\n[[questions]]\nid = "q"\nkind = "single"\nprompt = "一加一？"\nchoices = ["1", "2"]\nanswer = 1\nexplain = "算术"\nsection = "one"\n',
        encoding="utf-8",
    )
    return root


def test_another_course_with_the_same_chapter_ids_does_not_touch_the_shipped_progress(tmp_path):
    home = tmp_path / "h"
    other = _other_course(tmp_path / "other", "other-course")
    # answer the other course's quiz for chapter 01 (right), and reach its break point
    quiz = _tc("--content", str(other), "quiz", "01", home=home, stdin="2\n")
    assert quiz.returncode == 0, quiz.stderr
    shipped = json.loads(_tc("progress", "--json", home=home).stdout)
    row = next(c for c in shipped["chapters"] if c["id"] == "01")
    assert row["answers"] == 0 and not row["completed"], row
    theirs = json.loads(_tc("--content", str(other), "progress", "--json", home=home).stdout)
    assert next(c for c in theirs["chapters"] if c["id"] == "01")["answers"] == 1


def test_a_course_without_an_id_gets_one_from_its_folder(tmp_path):
    one = load_course(_other_course(tmp_path / "one", None))
    two = load_course(_other_course(tmp_path / "two", None))
    assert one.id.startswith("dir-") and two.id.startswith("dir-") and one.id != two.id
    assert load_course(tmp_path / "one").id == one.id  # stable
    assert load_course(ROOT / "content").id == "torchcourse"
    bad = _other_course(tmp_path / "bad", "has space")
    assert any("课程 id 必须是 1 到 64 个" in p.message for p in load_course(bad).problems)


def test_store_rows_written_before_v3_count_as_the_shipped_course_in_a_fresh_v3_file(tmp_path):
    s, _ = open_store(tmp_path / "x.sqlite3")  # the default course is the shipped one
    s.record_answer("01", "q", "1", True, at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    s.close()
    t, _ = open_store(tmp_path / "x.sqlite3", course_id="torchcourse")
    assert len(t.answers()) == 1
    t.close()
