"""The progress store on a real SQLite file: API, migration, recovery, import merge, threads."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import date, datetime, timedelta, timezone

import pytest

from torchcourse.progress import ChapterProgress, StoreError, open_store
from torchcourse.progress.schema import CURRENT_VERSION


@pytest.fixture
def store(tmp_path):
    s, notice = open_store(tmp_path / "p.sqlite3")
    assert notice is None
    yield s
    s.close()


def test_fresh_database_is_current_schema_in_wal_mode(tmp_path):
    s, notice = open_store(tmp_path / "data" / "p.sqlite3")
    s.close()
    assert notice is None
    conn = sqlite3.connect(tmp_path / "data" / "p.sqlite3")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION == 6
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"settings", "chapters", "answers", "runs", "breaks", "snippet_edits"} <= tables


def test_default_path_follows_torchcourse_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCOURSE_HOME", str(tmp_path / "home"))
    s, _ = open_store()
    s.set_route("B")
    s.close()
    assert (tmp_path / "home" / "data" / "progress.sqlite3").is_file()


def test_route_and_position(store):
    assert store.get_route() is None
    assert store.last_position() is None
    store.set_route("A")
    store.set_route("C")
    store.set_position("02", 3)
    assert store.get_route() == "C"
    assert store.last_position() == ("02", 3)


def test_reach_break_keeps_max_and_moves_position(store):
    store.reach_break("03", 2)
    store.reach_break("03", 1)
    assert store.chapter_progress("03") == ChapterProgress("03", 2, False, None)
    # position: the part right after the furthest break reached; reaching an earlier break of
    # the same chapter again never moves it back
    assert store.last_position() == ("03", 2)
    store.reach_break("04", 1)
    assert store.last_position() == ("04", 1)
    assert store.chapter_progress("99") == ChapterProgress("99", 0, False, None)
    with pytest.raises(ValueError):
        store.reach_break("03", 0)


def test_completed_flag_and_time(store):
    store.set_completed("01")
    p = store.chapter_progress("01")
    assert p.completed and p.completed_at is not None
    first = p.completed_at
    store.set_completed("01")  # the first completion time is kept
    assert store.chapter_progress("01").completed_at == first
    store.set_completed("01", False)
    assert store.chapter_progress("01") == ChapterProgress("01", 0, False, None)
    assert set(store.all_progress()) == {"01"}


def test_answers_and_runs_oldest_first_and_filtered(store):
    t0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
    store.record_answer("02", "q2", "1", False, at=t0 + timedelta(minutes=5))
    store.record_answer("02", "q1", "0", True, at=t0)
    store.record_answer("03", "q1", "fill text 中文", True, at=t0 + timedelta(minutes=1))
    got = store.answers()
    assert [(a.chapter_id, a.question_id) for a in got] == [("02", "q1"), ("03", "q1"), ("02", "q2")]
    assert got[0].at == t0 and got[0].correct is True
    assert [a.answer for a in store.answers("03")] == ["fill text 中文"]
    assert [a.correct for a in store.answers("02", "q2")] == [False]
    store.record_run("02", "view-error", "pass", at=t0)
    store.record_run("05", "plain-list", "fail")
    assert [(r.chapter_id, r.snippet_id, r.verdict) for r in store.runs()] == [("02", "view-error", "pass"), ("05", "plain-list", "fail")]
    assert [r.snippet_id for r in store.runs("05")] == ["plain-list"]


def test_activity_counts_events_per_day_and_streak(store):
    day = date(2025, 5, 10)

    def at(d: date, hour: int = 12) -> datetime:
        return datetime(d.year, d.month, d.day, hour)  # naive = local time

    store.reach_break("01", 1, at=at(day))
    store.record_answer("01", "q", "a", True, at=at(day))
    store.record_run("01", "s", "pass", at=at(day - timedelta(days=1)))
    store.record_run("01", "s", "pass", at=at(day - timedelta(days=2)))
    store.record_run("01", "s", "pass", at=at(day - timedelta(days=4)))
    act = store.activity()
    assert act[day] == 2 and act[day - timedelta(days=1)] == 1 and day - timedelta(days=3) not in act
    assert store.streak(today=day) == 3
    # nothing yet today: the streak still counts up to yesterday
    assert store.streak(today=day + timedelta(days=1)) == 3
    assert store.streak(today=day + timedelta(days=2)) == 0


def test_reset_one_chapter_or_everything(store):
    store.set_route("A")
    store.reach_break("02", 1)
    store.reach_break("03", 1)
    store.record_answer("02", "q", "x", True)
    store.record_run("03", "s", "pass")
    store.reset("03")
    assert set(store.all_progress()) == {"02"}
    assert store.runs() == [] and len(store.answers()) == 1
    assert store.last_position() is None  # it pointed into chapter 03
    assert store.get_route() == "A"
    store.reset()
    assert store.all_progress() == {} and store.answers() == [] and store.get_route() is None
    assert store.activity() == {}


def test_export_import_merges_without_overwriting(tmp_path):
    a, _ = open_store(tmp_path / "a.sqlite3")
    b, _ = open_store(tmp_path / "b.sqlite3")
    t = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    a.set_route("A")
    a.reach_break("02", 2, at=t)
    a.record_answer("02", "q1", "0", True, at=t)
    a.record_answer("02", "q2", "1", False, at=t)
    a.record_run("02", "s1", "pass", at=t)
    b.set_route("B")
    b.reach_break("02", 1, at=t + timedelta(days=1))
    b.reach_break("05", 3, at=t)
    b.set_completed("05")
    b.record_answer("02", "q1", "0", True, at=t)  # the same answer exists on both sides
    a.export_json(tmp_path / "a.json")
    exported = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert exported["format"] == "torchcourse-progress" and len(exported["answers"]) == 2

    counts = b.import_json(tmp_path / "a.json")
    assert counts == {"chapters": 1, "answers": 1, "runs": 1, "breaks": 1, "edits": 0}
    assert b.get_route() == "B"  # never overwritten
    assert b.chapter_progress("02").furthest_break == 2
    assert b.chapter_progress("05").completed and b.chapter_progress("05").furthest_break == 3
    assert sorted((x.question_id, x.at) for x in b.answers()) == [("q1", t), ("q2", t)]
    assert len(b.runs()) == 1
    # importing the same file again adds nothing
    assert b.import_json(tmp_path / "a.json") == {"chapters": 0, "answers": 0, "runs": 0, "breaks": 0, "edits": 0}
    assert len(b.answers()) == 2
    a.close()
    b.close()


def test_edited_snippets_are_kept_per_course_and_snippet_and_travel_with_export(tmp_path):
    path = tmp_path / "p.sqlite3"
    a, _ = open_store(path)
    assert a.edit("01", "hello") is None and a.edits() == []
    a.save_edit("01", "hello", "print(1)\n")
    a.save_edit("01", "hello", "print(2)\n")  # a second save replaces the first
    a.save_edit("02", "other", "x = 1\n")
    assert a.edit("01", "hello") == "print(2)\n"
    assert [(e.chapter_id, e.snippet_id) for e in a.edits()] == [("01", "hello"), ("02", "other")]
    assert [e.snippet_id for e in a.edits("02")] == ["other"]
    a.close()
    other, _ = open_store(path, course_id="another-course")  # another course never sees them
    assert other.edit("01", "hello") is None and other.edits() == []
    other.close()
    a, _ = open_store(path)  # they survive reopening
    assert a.edit("01", "hello") == "print(2)\n"
    a.export_json(tmp_path / "a.json")
    exported = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert [e["code"] for e in exported["edits"]] == ["print(2)\n", "x = 1\n"]
    b, _ = open_store(tmp_path / "b.sqlite3")
    b.save_edit("02", "other", "mine = 2\n")  # a local edit is never overwritten by an import
    assert b.import_json(tmp_path / "a.json")["edits"] == 1
    assert b.edit("01", "hello") == "print(2)\n" and b.edit("02", "other") == "mine = 2\n"
    assert b.import_json(tmp_path / "a.json")["edits"] == 0
    assert b.delete_edit("01", "hello") and not b.delete_edit("01", "hello")
    assert b.edit("01", "hello") is None
    b.reset("02")
    assert b.edits() == []
    a.close()
    b.close()


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "不是有效的 JSON"),
        ('{"format": "something-else"}', "不是 torchcourse 导出的进度文件"),
        ('{"format": "torchcourse-progress", "version": 1, "answers": [{"chapter_id": "02", "question_id": "q", "answer": "a", "correct": "yes", "at": "2025-01-01T00:00:00+00:00"}]}', "answers[0].correct"),
        ('{"format": "torchcourse-progress", "version": 1, "runs": [{"chapter_id": "02", "snippet_id": "s", "verdict": "pass", "at": "yesterday"}]}', "runs[0].at"),
        ('{"format": "torchcourse-progress", "version": 3, "edits": [{"chapter_id": "02", "snippet_id": "s", "code": 3, "updated_at": "2025-01-01T00:00:00+00:00"}]}', "edits[0].code"),
    ],
)
def test_import_rejects_bad_files_and_changes_nothing(store, tmp_path, content, needle):
    store.reach_break("02", 1)
    before = (store.all_progress(), store.answers(), store.runs(), store.last_position())
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(StoreError) as info:
        store.import_json(bad)
    assert str(bad) in str(info.value) and needle in str(info.value)
    assert (store.all_progress(), store.answers(), store.runs(), store.last_position()) == before


V1_SQL = """
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chapters (chapter_id TEXT PRIMARY KEY, furthest_break INTEGER NOT NULL DEFAULT 0, completed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE answers (id INTEGER PRIMARY KEY, chapter_id TEXT NOT NULL, question_id TEXT NOT NULL, answer TEXT NOT NULL, correct INTEGER NOT NULL, at TEXT NOT NULL);
"""


def test_v1_database_is_migrated_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(V1_SQL)
    conn.execute("INSERT INTO settings VALUES ('route', 'C'), ('position', '09:2')")
    conn.execute("INSERT INTO chapters VALUES ('01', 2, 1), ('09', 1, 0)")
    conn.execute("INSERT INTO answers (chapter_id, question_id, answer, correct, at) VALUES ('01', 'stride', '2', 1, '2024-12-30T08:00:00.000000+00:00')")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    s, notice = open_store(path)
    assert notice is None
    assert s.get_route() == "C"
    assert s.last_position() == ("09", 2)
    assert s.chapter_progress("01") == ChapterProgress("01", 2, True, None)
    assert s.chapter_progress("09").furthest_break == 1
    [ans] = s.answers()
    assert (ans.question_id, ans.answer, ans.correct, ans.at) == ("stride", "2", True, datetime(2024, 12, 30, 8, tzinfo=timezone.utc))
    s.record_run("01", "s", "pass")  # v2 features work
    s.reach_break("01", 3)
    old_day = datetime(2024, 12, 30, 8, tzinfo=timezone.utc).astimezone().date()
    assert s.activity()[old_day] == 1  # the v1 answer counts in the calendar
    s.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
    assert conn.execute("SELECT value FROM settings WHERE key = 'position'").fetchone() is None


def test_database_from_a_newer_version_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "new.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE future (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    data = path.read_bytes()
    with pytest.raises(StoreError, match="更新版本"):
        open_store(path)
    assert path.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["new.sqlite3"]


def test_garbage_database_is_moved_aside_and_kept(tmp_path):
    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    s.reach_break("01", 1)
    s.close()
    garbage = b"this is not sqlite at all \x00\xff" * 500
    path.write_bytes(garbage)
    s, notice = open_store(path)
    moved = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1
    assert moved[0].read_bytes() == garbage  # kept, never deleted
    assert notice is not None and "进度文件已损坏" in notice and str(moved[0]) in notice
    assert s.all_progress() == {}
    s.reach_break("02", 1)  # the fresh database works
    s.close()


def test_damaged_pages_are_detected_and_moved_aside(tmp_path):
    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    for i in range(40):
        s.record_answer("01", f"q{i}", "x" * 2000, True)
    s.close()
    raw = bytearray(path.read_bytes())
    assert len(raw) > 8 * 4096
    raw[4096 * 2 : 4096 * 6] = b"\xa5" * (4096 * 4)  # header intact, b-tree pages smashed
    path.write_bytes(bytes(raw))
    s, notice = open_store(path)
    assert notice is not None and ".corrupt-" in notice
    assert s.answers() == []
    s.close()


def test_a_file_that_reads_but_fails_quick_check_is_moved_aside(tmp_path):
    """Every query still answers (the rows read back), yet ``PRAGMA quick_check`` reports damage:
    the header's freelist count says 3 pages, the file has none. Such a file is moved aside and
    kept, never used."""
    import struct

    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    s.reach_break("01", 1)
    s.close()
    raw = bytearray(path.read_bytes())
    assert raw[36:40] == struct.pack(">I", 0)  # the header's total freelist pages
    raw[36:40] = struct.pack(">I", 3)
    path.write_bytes(bytes(raw))
    conn = sqlite3.connect(path)  # the damage: readable, but quick_check says so
    assert conn.execute("SELECT count(*) FROM breaks").fetchone() == (1,)
    assert conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]
    conn.close()
    s, notice = open_store(path)
    moved = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert notice is not None and "进度文件已损坏" in notice
    assert len(moved) == 1 and moved[0].read_bytes() == bytes(raw)
    assert s.all_progress() == {}
    s.close()


def test_unwritable_location_raises_store_error_naming_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as info:
        open_store(blocker / "data" / "p.sqlite3")
    # a file in the way is named as such (not "只读或没有权限：已经存在"), the file itself included
    assert str(blocker / "data") in str(info.value) and "无法创建进度目录" in str(info.value)
    assert f"已经有一个文件 {blocker}，它不是目录" in str(info.value)


def test_closed_store_raises_store_error(tmp_path):
    s, _ = open_store(tmp_path / "p.sqlite3")
    s.close()
    with pytest.raises(StoreError):
        s.get_route()


def test_threads_share_one_store(store):
    errors = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                store.record_answer("02", f"t{n}-{i}", "a", i % 2 == 0)
                store.reach_break("02", 1 + i % 3)
                store.chapter_progress("02")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.answers()) == 200
    assert len({a.question_id for a in store.answers()}) == 200
    assert store.chapter_progress("02").furthest_break == 3


def test_exact_reading_place_is_kept_and_a_later_break_replaces_it(store):
    store.set_position("03", 1, line=40, offset=3, digest="abc")
    assert store.reading_place() == {"chapter": "03", "part": 1, "line": 40, "offset": 3, "digest": "abc"}
    store.reach_break("03", 1)  # behind the place: nothing moves
    assert store.reading_place()["line"] == 40
    store.reach_break("03", 2)  # further: the place is that break's start
    assert store.reading_place() == {"chapter": "03", "part": 2, "line": None, "offset": 0, "digest": None}
    store.set_position("03", 0)
    assert store.reading_place()["line"] is None


def test_parts_read_are_kept_per_chapter_reset_and_exported(store, tmp_path):
    """Issue 13 item 5: the parts really read (minutes are counted from them), not the breaks."""
    store.reach_break("01", 2)
    assert store.parts_read() == {}  # reaching a break (``n``) is not reading
    assert store.mark_part_read("01", 0) is True
    assert store.mark_part_read("01", 0) is False
    store.mark_part_read("01", 2)
    store.mark_part_read("02", 1)
    assert store.parts_read() == {"01": {0, 2}, "02": {1}}
    assert store.parts_read("02") == {"02": {1}}
    out = tmp_path / "e.json"
    store.export_json(out)
    other, _ = open_store(tmp_path / "other.sqlite3")
    other.import_json(out)
    assert other.parts_read() == {"01": {0, 2}, "02": {1}}
    other.close()
    store.reset("01")
    assert store.parts_read() == {"02": {1}}


def test_an_export_without_parts_read_counts_its_breaks_as_read(store, tmp_path):
    f = tmp_path / "old.json"
    f.write_text(json.dumps({"format": "torchcourse-progress", "version": 3, "chapters": [
        {"chapter_id": "01", "furthest_break": 2, "completed": False},
        {"chapter_id": "02", "furthest_break": 1, "completed": True, "completed_at": "2025-01-02T00:00:00+00:00"}]}))
    store.import_json(f)
    assert store.parts_read() == {"01": {0, 1}, "02": {0, 1}}


def test_v4_database_back_fills_parts_read_from_its_breaks(tmp_path):
    """Learners upgrading keep their minutes: every part before the furthest break (at the time
    that break was first reached), every part of a completed chapter."""
    from torchcourse.progress.schema import MIGRATIONS

    db = tmp_path / "v4.sqlite3"
    conn = sqlite3.connect(db, isolation_level=None)
    for v in range(4):
        MIGRATIONS[v](conn)
    conn.execute("PRAGMA user_version = 4")
    conn.execute("INSERT INTO chapters (course_id, chapter_id, furthest_break, completed, completed_at) VALUES ('torchcourse', '01', 2, 0, NULL)")
    conn.execute("INSERT INTO chapters (course_id, chapter_id, furthest_break, completed, completed_at) VALUES ('torchcourse', '02', 3, 1, '2025-02-01T00:00:00.000000+00:00')")
    conn.execute("INSERT INTO chapters (course_id, chapter_id, furthest_break, completed, completed_at) VALUES ('other', '01', 1, 0, NULL)")
    for k, at in ((1, "2025-01-01T10:00:00.000000+00:00"), (2, "2025-01-03T10:00:00.000000+00:00"), (1, "2025-01-05T10:00:00.000000+00:00")):
        conn.execute("INSERT INTO breaks (course_id, chapter_id, break_index, at) VALUES ('torchcourse', '01', ?, ?)", (k, at))
    conn.close()
    s, notice = open_store(db)
    assert notice is None
    assert s.parts_read() == {"01": {0, 1}, "02": {0, 1, 2, 3}}
    conn = sqlite3.connect(db)
    assert dict(conn.execute("SELECT part_index, at FROM parts_read WHERE course_id = 'torchcourse' AND chapter_id = '01'").fetchall()) == {
        0: "2025-01-01T10:00:00.000000+00:00", 1: "2025-01-03T10:00:00.000000+00:00"}
    conn.close()
    s.close()
    other, _ = open_store(db, course_id="other")
    assert other.parts_read() == {"01": {0}}
    other.close()


def test_minutes_read_count_the_parts_read_by_their_characters(tmp_path):
    """Counted by hand: part 1 is '#一' + '一二三四五六七八' (10 characters), part 2 '九十' (2);
    at 1 character a minute the chapter reads 12 minutes, part 1 is 10 of them."""
    from torchcourse.course import load_course
    from torchcourse.progress.reading import minutes_read

    root = tmp_path / "c"
    root.mkdir()
    (root / "course.toml").write_text('title = "t"\nchars_per_minute = 1\n\n[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "一"\npromise = "p"\n', encoding="utf-8")
    (root / "01.md").write_text("# 一\n\n一二三四五六七八\n\n<!-- break -->\n\n九十\n", encoding="utf-8")
    ch = load_course(root).chapter("01")
    assert ch.minutes == 12
    assert [minutes_read(ch, parts) for parts in (set(), None, {0}, {1}, {0, 1}, {0, 7})] == [0.0, 0.0, 10.0, 2.0, 12.0, 10.0]


class TestExportImportKeepsEverythingSaved:
    """``export`` then ``import`` on another machine: what was saved is all there, and an import
    that says "原有进度都保留" never lowers anything."""

    def test_a_quiz_left_half_way_is_resumed_after_export_and_import(self, tmp_path):
        t0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
        a, _ = open_store(tmp_path / "a.sqlite3")
        b, _ = open_store(tmp_path / "b.sqlite3")
        try:
            done = a.start_attempt("05", seed=3, at=t0 - timedelta(days=1))
            a.record_answer("05", "q1", "a", True, at=t0 - timedelta(days=1), attempt_id=done)
            a.finish_attempt(done, at=t0 - timedelta(days=1))
            half = a.start_attempt("05", seed=123456789, at=t0)
            a.record_answer("05", "q1", "b", False, at=t0 + timedelta(seconds=5), attempt_id=half, shown=[1, 0, 2])
            a.record_answer("05", "q2", "c", True, at=t0 + timedelta(seconds=9), attempt_id=half)
            a.export_json(tmp_path / "a.json")
            b.import_json(tmp_path / "a.json")
            att = b.open_attempt("05")
            assert att is not None, "the quiz left half-way was lost on the way"
            assert (att.seed, att.started_at) == (123456789, t0)
            assert [(x.question_id, x.answer, x.shown) for x in att.answers] == [("q1", "b", (1, 0, 2)), ("q2", "c", None)]
            # importing the same file again adds no second attempt, and the finished one stays finished
            b.import_json(tmp_path / "a.json")
            assert b.open_attempt("05").id == att.id
            assert len(b.answers("05")) == 3
        finally:
            a.close()
            b.close()

    def test_an_import_never_lowers_a_chapters_furthest_break(self, tmp_path):
        t = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
        behind, _ = open_store(tmp_path / "behind.sqlite3")
        ahead, _ = open_store(tmp_path / "ahead.sqlite3")
        try:
            behind.reach_break("03", 1, at=t)
            behind.export_json(tmp_path / "behind.json")
            ahead.reach_break("03", 3, at=t)
            ahead.set_completed("03")
            counts = ahead.import_json(tmp_path / "behind.json")
            assert ahead.chapter_progress("03").furthest_break == 3
            assert ahead.chapter_progress("03").completed
            assert counts["chapters"] == 0  # nothing of the chapter changed
        finally:
            behind.close()
            ahead.close()
