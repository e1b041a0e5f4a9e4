"""What the progress store keeps, refuses and says: each chapter's place and break points, quiz
attempts left half-way, import and export (what an import takes and refuses, by name), reading
time per part, streaks and days, and a database that is corrupt, half-made, foreign, locked or
in the way — moved aside or refused untouched, never lost. Real SQLite, real files."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading

import pytest

from torchcourse.progress import StoreError, open_store
from torchcourse.progress import store as store_mod


@pytest.fixture(autouse=True)
def only_busy_is_retried(monkeypatch):
    """Every test here fails at once when open_store's retry loop is handed an error that is not
    SQLITE_BUSY (5) or SQLITE_LOCKED (6) to retry — a state, not a wait: kills store.py:252 and
    :293 (`in` -> `not in`: a corrupt file retried until the 30 s deadline, then called busy)."""
    real = store_mod._connect

    def connect(path):
        try:
            return real(path)
        except store_mod._Busy as exc:
            cause = exc.__cause__
            code = cause.sqlite_errorcode & 0xFF if isinstance(cause, sqlite3.Error) and cause.sqlite_errorcode else None
            if code not in (5, 6):
                pytest.fail(f"open_store would retry {cause!r} (SQLite code {code}): only a busy or locked database is retried")
            raise

    monkeypatch.setattr(store_mod, "_connect", connect)
    calls = {"n": 0}
    counted = store_mod._connect

    def counting(path):
        calls["n"] += 1
        return counted(path)

    monkeypatch.setattr(store_mod, "_connect", counting)
    monkeypatch.setattr(store_mod, "_connect_retrying", _watched_retry_loop(store_mod._connect_retrying, calls))


def _watched_retry_loop(real, calls):
    """``_connect_retrying`` run on a thread of its own and watched: the test fails as soon as
    the loop is seen going round (its frame at its backward jump, the only way back to the top)
    before it has tried to connect even once — store.py:385, its `return _connect(path)`
    deleted, spins there forever calling nothing. In the code the loop goes round only after a
    connect attempt raised busy."""
    import dis

    jumps = {i.offset for i in dis.get_instructions(real.__code__) if i.opname == "JUMP_BACKWARD"}

    def watched(path):
        out: dict = {}
        before = calls["n"]

        def run():
            try:
                out["conn"] = real(path)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
                out["error"] = exc

        t = threading.Thread(target=run, daemon=True)
        t.start()
        while t.is_alive():
            frame = sys._current_frames().get(t.ident)
            if frame is not None and frame.f_code is real.__code__ and frame.f_lasti in jumps and calls["n"] == before:
                pytest.fail("open_store's retry loop goes round without ever trying to connect")
            t.join(0.001)
        if "error" in out:
            raise out["error"]
        return out["conn"]

    return watched


@pytest.fixture
def store(tmp_path):
    s, notice = open_store(tmp_path / "p.sqlite3")
    assert notice is None
    yield s
    s.close()


def _export(tmp_path, **data):
    f = tmp_path / "in.json"
    f.write_text(json.dumps({"format": "torchcourse-progress", "version": 4, **data}), encoding="utf-8")
    return f


def test_the_largest_break_index_an_import_takes_is_a_million(store, tmp_path):
    # kills store.py:966 (<= _MAX_COUNT -> <, and the 1_000_000 constant +1): the limit the
    # message names is the one applied, at its exact edge
    ok = _export(tmp_path, chapters=[{"chapter_id": "02", "furthest_break": 1_000_000, "completed": False}], parts_read=[])
    assert store.import_json(ok)["chapters"] == 1
    assert store.chapter_progress("02").furthest_break == 1_000_000
    over = _export(tmp_path, chapters=[{"chapter_id": "03", "furthest_break": 1_000_001, "completed": False}], parts_read=[])
    with pytest.raises(StoreError) as info:
        store.import_json(over)
    assert "chapters[0].furthest_break" in str(info.value) and "0 到 1000000 之间的整数" in str(info.value)
    assert "1000001" in str(info.value)
    assert store.chapter_progress("03").furthest_break == 0


def test_each_chapter_keeps_its_own_exact_place(store):
    # kills chapter_place (store.py:484-491: the parse of "part line offset digest"),
    # placed_chapters (:495-497) and position_route (:501-502), which no progress test read
    assert store.chapter_place("02") is None and store.placed_chapters() == set()
    store.set_route("B")
    store.set_position("02", 3, line=41, offset=2, digest="abc123")
    store.set_position("05", 1)  # the start of a part: no exact line
    store.set_position("07", 0, line=9, offset=-4)  # a negative offset is kept as 0, no digest
    assert store.chapter_place("02") == {"part": 3, "line": 41, "offset": 2, "digest": "abc123"}
    assert store.chapter_place("05") == {"part": 1, "line": None, "offset": 0, "digest": None}
    assert store.chapter_place("07") == {"part": 0, "line": 9, "offset": 0, "digest": ""}
    assert store.chapter_place("03") is None
    assert store.placed_chapters() == {"02", "05", "07"}
    assert store.position_route() == "B"
    store.set_position("05", 2, route="")
    assert store.position_route() == "" and store.chapter_place("02")["line"] == 41  # another chapter's place stays
    assert store.reading_place() == {"chapter": "05", "part": 2, "line": None, "offset": 0, "digest": None}


def test_a_place_written_by_hand_or_by_an_older_version_is_read_safely(store, tmp_path):
    # kills the guards of chapter_place (store.py:487-491): a place without line/offset is the
    # part's start; a non-number is no place; a place without a digest has the empty one
    import sqlite3

    store.set_position("02", 1)
    db = sqlite3.connect(tmp_path / "p.sqlite3")
    rows = {"place:02": "4 x 1 d", "place:03": "nope", "place:04": "6 12 3", "place:05": "2 12", "place:06": "7 5 x d"}
    with db:
        for key, value in rows.items():
            db.execute("INSERT OR REPLACE INTO settings (course_id, key, value) VALUES (?, ?, ?)", (store.course_id, key, value))
    db.close()
    assert store.chapter_place("02") == {"part": 4, "line": None, "offset": 0, "digest": None}
    assert store.chapter_place("03") is None
    assert store.chapter_place("04") == {"part": 6, "line": 12, "offset": 3, "digest": ""}
    assert store.chapter_place("05") == {"part": 2, "line": None, "offset": 0, "digest": None}
    assert store.chapter_place("06") == {"part": 7, "line": None, "offset": 0, "digest": None}


def test_a_quiz_attempt_left_before_its_end_is_resumed_with_its_answers(store, tmp_path):
    # kills start_attempt / finish_attempt / open_attempt (store.py:632-665), read by the quiz
    # screens only: the attempt, its seed and the answers given in it, oldest first. Chapter ids
    # that are not numbers: SQLite would read '02' as attempt 2 (integer affinity) and hide :663
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
    assert store.open_attempt("ch2") is None
    first = store.start_attempt("ch2", seed=7, at=t0)
    store.record_answer("ch2", "q1", "b", False, at=t0 + timedelta(seconds=5), attempt_id=first)
    second = store.start_attempt("ch2", seed=11, at=t0 + timedelta(minutes=1))  # starting again closes the first
    assert second != first
    store.record_answer("ch2", "q2", "a", True, at=t0 + timedelta(minutes=2), attempt_id=second, shown=[2, 0, 1])
    store.record_answer("ch2", "q1", "c", True, at=t0 + timedelta(minutes=3), attempt_id=second)
    store.record_answer("ch2", "q9", "z", True, at=t0 + timedelta(minutes=4))  # outside any attempt
    other = store.start_attempt("ch3", seed=5, at=t0)
    att = store.open_attempt("ch2")
    assert (att.id, att.chapter_id, att.seed, att.started_at, att.finished_at) == (second, "ch2", 11, t0 + timedelta(minutes=1), None)
    assert [(a.question_id, a.answer, a.correct, a.shown) for a in att.answers] == [("q2", "a", True, (2, 0, 1)), ("q1", "c", True, None)]
    store.finish_attempt(second, at=t0 + timedelta(minutes=5))
    assert store.open_attempt("ch2") is None
    assert store.open_attempt("ch3").id == other  # another chapter's attempt is left open
    reopened, _ = open_store(tmp_path / "p.sqlite3", course_id="another-course")
    try:
        assert reopened.open_attempt("ch3") is None  # and another course sees none of them
        mine = reopened.start_attempt("ch3", seed=1)
        reopened.finish_attempt(other)  # an id of another course: not closed from here
    finally:
        reopened.close()
    assert store.open_attempt("ch3").id == other and mine != other


def test_a_write_that_fails_half_way_leaves_nothing_behind(store):
    # kills _tx's rollback (store.py:427-429 deleted, negated): set_position writes the chapter,
    # then fails on the part; without the rollback the half-written place stayed pending and was
    # committed by the next write
    store.set_position("02", 1)
    with pytest.raises(ValueError):
        store.set_position("05", "not a number")
    store.set_route("C")  # the next write commits only itself
    assert store.last_position() == ("02", 1)
    assert store.get_route() == "C"


def test_a_database_error_inside_a_read_names_the_file(store, tmp_path):
    # kills _tx's except branch (store.py:432-434): a table gone under the store (another program
    # edited the file) is a StoreError naming the file, never a traceback or None
    import sqlite3

    db = sqlite3.connect(tmp_path / "p.sqlite3")
    db.execute("DROP TABLE quiz_attempts")
    db.commit()
    db.close()
    with pytest.raises(StoreError) as info:
        store.open_attempt("02")
    assert str(tmp_path / "p.sqlite3") in str(info.value) and "quiz_attempts" in str(info.value)
    store.set_route("B")  # the connection is usable afterwards: the failed read was rolled back
    assert store.get_route() == "B"


def _open_watching_move_aside(path):
    """open_store(path) on a thread; fails as soon as _move_aside's loop has counted past more
    names than the directory holds (each round must try a new name, so it can go round at most
    once per file there: past that it never ends — store.py:330 deleted)."""
    out: dict = {}

    def run():
        try:
            out["result"] = open_store(path)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    while t.is_alive():
        frame = sys._current_frames().get(t.ident)
        while frame is not None and frame.f_code is not store_mod._move_aside.__code__:
            frame = frame.f_back
        if frame is not None:
            n, entries = frame.f_locals.get("n", 0), len(list(path.parent.iterdir()))
            assert n <= entries + 2, f"_move_aside has counted to {n} with {entries} files in the directory: it never tries a new name"
        t.join(0.01)
    if "error" in out:
        raise out["error"]
    return out["result"]


def test_a_second_corrupt_file_never_replaces_the_first_one_moved_aside(tmp_path):
    # kills _move_aside's numbering (store.py:330-331: the loop's name and counter)
    from datetime import datetime, timedelta

    path = tmp_path / "p.sqlite3"
    now = datetime.now()
    earlier = {}
    for s in range(-2, 30):  # every name the moves below can take without a number
        name = path.with_name(f"{path.name}.corrupt-{(now + timedelta(seconds=s)).strftime('%Y%m%d-%H%M%S')}")
        name.write_bytes(b"moved aside before")
        earlier[name] = b"moved aside before"
    names = []
    for n in range(2):
        garbage = f"garbage {n} ".encode() * 400
        path.write_bytes(garbage)
        s, notice = _open_watching_move_aside(path)
        s.close()
        moved = [p for p in tmp_path.iterdir() if p.read_bytes() == garbage]
        assert len(moved) == 1 and str(moved[0]) in notice, moved
        names.append(moved[0].name)
    # every plain name was taken: the first gets -2; the second -3 in the same second, else -2
    assert names[0].endswith("-2") and names[1].endswith(("-2", "-3")) and names[0] != names[1]
    assert all(p.read_bytes() == content for p, content in earlier.items())  # nothing moved earlier was lost


def test_a_parts_reading_time_is_its_share_of_the_chapters_minutes(tmp_path):
    # kills reading.py:38-39 (part_seconds: the bounds and the arithmetic), which only the reader
    # used. Counted by hand: part 1 '#一' + '一二三四五六七八' (10 characters), part 2 '九十' (2),
    # 1 character a minute: 600 s and 120 s; a part that is not there reads 0 s
    from torchcourse.course import load_course
    from torchcourse.progress.reading import part_seconds

    root = tmp_path / "c"
    root.mkdir()
    (root / "course.toml").write_text('title = "t"\nchars_per_minute = 1\n\n[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "一"\npromise = "p"\n', encoding="utf-8")
    (root / "01.md").write_text("# 一\n\n一二三四五六七八\n\n<!-- break -->\n\n九十\n", encoding="utf-8")
    ch = load_course(root).chapter("01")
    assert [part_seconds(ch, i) for i in (0, 1, 2, -1)] == [600.0, 120.0, 0.0, 0.0]


@pytest.fixture
def shanghai(monkeypatch):
    """Local time 8 hours ahead of UTC, so that naive and UTC times differ."""
    import time

    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_an_imported_time_without_an_offset_is_taken_as_utc(store, tmp_path, shanghai):
    # kills _parse_time (store.py:147-148: the naive time taken as local, or an aware one's offset
    # replaced): an export's times are UTC; the answer stays at the instant it was given
    from datetime import datetime, timezone

    f = _export(tmp_path, answers=[
        {"chapter_id": "02", "question_id": "q1", "answer": "a", "correct": True, "at": "2025-01-01T00:00:00"},
        {"chapter_id": "02", "question_id": "q2", "answer": "b", "correct": False, "at": "2025-01-01T08:00:00+08:00"},
    ])
    assert store.import_json(f)["answers"] == 2
    assert [a.at for a in store.answers("02")] == [datetime(2025, 1, 1, tzinfo=timezone.utc)] * 2


@pytest.mark.parametrize("text, reason", [
    ('{"chapters": [1, 2,]}', "这里应该有一个值"),
    ('{"a" 1}', "这里缺一个冒号"),
    ('{"a": "b', "字符串没有收尾的引号"),
    ('{"a": 1} x', "一段完整的 JSON 之后还有多余的内容"),
])
def test_a_broken_export_file_is_explained_in_chinese_with_its_place(store, tmp_path, text, reason):
    # kills json_reason (store.py:182-183: the prefix test negated, the return deleted)
    f = tmp_path / "bad.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(StoreError) as info:
        store.import_json(f)
    assert f"{f}:1: 不是有效的 JSON（第 1 行第" in str(info.value) and reason in str(info.value)


def test_an_unknown_json_message_is_kept_in_its_own_words():
    from torchcourse.progress.store import json_reason

    assert json_reason("Something new") == "语法错误：Something new"


@pytest.mark.parametrize("version, tables, why", [
    (4, ["settings", "chapters", "answers"], "结构版本 4，却缺少表 snippet_edits"),
    (5, ["settings", "chapters", "answers", "snippet_edits"], "结构版本 5，却缺少表 parts_read"),
    (6, ["settings", "chapters", "answers", "snippet_edits", "parts_read"], "结构版本 6，却缺少表 quiz_attempts"),
    (6, ["settings", "chapters", "answers"], "结构版本 6，却缺少表 parts_read, quiz_attempts, snippet_edits"),
    (3, ["settings", "chapters", "answers"], "chapters 表缺少 course_id 列"),
])
def test_a_database_that_claims_a_version_without_its_tables_is_refused_untouched(tmp_path, version, tables, why):
    # kills _foreign_reason's per-version checks (store.py:238-249: >= -> >, the added tables
    # deleted, the course_id column check): the file is named, the reason given, nothing changed
    import sqlite3

    path = tmp_path / "p.sqlite3"
    db = sqlite3.connect(path)
    for t in tables:
        db.execute(f"CREATE TABLE {t} (x)")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as info:
        open_store(path)
    assert f"{path} 是一个 SQLite 数据库，但不是 torchcourse 的进度库（{why}）" in str(info.value)
    assert path.read_bytes() == before


def test_the_database_path_may_be_given_as_text(tmp_path):
    # kills store.py:363 (path = Path(path) deleted: a str path had no .parent)
    s, notice = open_store(str(tmp_path / "data" / "p.sqlite3"))
    try:
        s.set_route("A")
        assert notice is None and s.path == tmp_path / "data" / "p.sqlite3"
    finally:
        s.close()
    assert (tmp_path / "data" / "p.sqlite3").is_file()


def test_an_import_takes_route_and_place_only_where_there_are_none(store, tmp_path):
    # kills import_json's route and position merge (store.py:857-861: the route not set, the
    # "no position here" test inverted)
    f = _export(tmp_path, route="C", position={"chapter": "04", "part": 2})
    store.import_json(f)
    assert store.get_route() == "C" and store.last_position() == ("04", 2)
    other, _ = open_store(tmp_path / "p.sqlite3", course_id="c2")
    try:
        other.set_route("A")
        other.set_position("01", 1)
        other.import_json(f)
        assert other.get_route() == "A" and other.last_position() == ("01", 1)  # never overwritten
    finally:
        other.close()


def test_resetting_a_chapter_forgets_its_own_place(store):
    # kills reset's deletion of the chapter's place (store.py:927): reopening the chapter after
    # 重置 must not jump back to where it was read
    store.set_position("02", 3, line=40)
    store.set_position("05", 1, line=7)
    store.reset("02")
    assert store.chapter_place("02") is None and store.placed_chapters() == {"05"}
    assert store.chapter_place("05")["line"] == 7


_ANSWER = {"chapter_id": "02", "question_id": "q", "answer": "a", "correct": True, "at": "2025-01-01T00:00:00+00:00"}


@pytest.mark.parametrize("data, where, why", [
    ({"answers": [1]}, "answers[0]", "应为对象"),
    ({"answers": [{**_ANSWER, "shown": [0, 0]}]}, "answers[0].shown", "应为选项序号 0..n-1 的一种排列"),
    ({"answers": [{**_ANSWER, "shown": []}]}, "answers[0].shown", "应为选项序号 0..n-1 的一种排列"),
    ({"answers": [{**_ANSWER, "shown": list(range(101))}]}, "answers[0].shown", "应为选项序号 0..n-1 的一种排列"),
    ({"answers": [{**_ANSWER, "shown": [True, 0]}]}, "answers[0].shown", "应为选项序号 0..n-1 的一种排列"),
    ({"answers": [{**_ANSWER, "shown": "0,1"}]}, "answers[0].shown", "应为选项序号 0..n-1 的一种排列"),
    ({"answers": [{**_ANSWER, "at": "1969-12-31T23:59:59+00:00"}]}, "answers[0].at", "时间 '1969-12-31T23:59:59+00:00' 不在 1970–2999 年之间"),
    ({"answers": [{**_ANSWER, "at": "3000-01-01T00:00:00+00:00"}]}, "answers[0].at", "时间 '3000-01-01T00:00:00+00:00' 不在 1970–2999 年之间"),
    ({"answers": [_ANSWER], "parts_read": [{"chapter_id": "02", "part": -1, "at": "2025-01-01T00:00:00+00:00"}]}, "parts_read[0].part", "应为 0 到 1000000 之间的整数"),
    # the refusals only the CLI tests reached (their subprocesses are not measured): store.py:985-1046
    ({"version": 99}, "version", "不认识的版本 99（本程序支持到 4）"),
    ({"answers": [{**_ANSWER, "question_id": ""}]}, "answers[0].question_id", "应为非空字符串，实际是 ''"),
    ({"answers": {"a": 1}}, "answers", "应为列表"),
    ({"route": 3}, "route", "应为字符串，实际是 3"),
    ({"position": {"chapter": "02"}}, "position", "应为 {\"chapter\": 字符串, \"part\": 整数}，实际是 \"{'chapter': '02'}\""),
    ({"chapters": [{"chapter_id": "02", "completed": 1}]}, "chapters[0].completed", "应为 true/false，实际是 1"),
    ({"answers": [{**_ANSWER, "answer": 2}]}, "answers[0].answer", "应为字符串，实际是 2"),
])
def test_an_import_names_the_item_it_refuses(store, tmp_path, data, where, why):
    # kills items()'s "not an object" (store.py:976), the shown check (:1010-1014: each clause),
    # the year limits (:934 1970->1971, :959 <= -> <) and parts_read's item name (:1038)
    store.record_answer("01", "q0", "x", False)
    with pytest.raises(StoreError) as info:
        store.import_json(_export(tmp_path, **data))
    assert f"{where}：{why}" in str(info.value)
    assert [a.question_id for a in store.answers()] == ["q0"]


def test_an_import_takes_answers_at_the_edges_of_the_calendar_and_their_order(store, tmp_path):
    # the accepted side of the limits above: 1970 and 2999 are real years; a permutation is kept
    from datetime import datetime, timezone

    f = _export(tmp_path, answers=[{**_ANSWER, "at": "1970-01-01T00:00:00+00:00", "shown": [1, 0, 2]},
                                   {**_ANSWER, "question_id": "q2", "at": "2999-12-31T00:00:00+00:00"}])
    assert store.import_json(f)["answers"] == 2
    got = [(a.at, a.shown) for a in store.answers("02")]
    assert got == [(datetime(1970, 1, 1, tzinfo=timezone.utc), (1, 0, 2)), (datetime(2999, 12, 31, tzinfo=timezone.utc), None)]


_READS = {
    "get_route": lambda s: s.get_route(), "chapter_place": lambda s: s.chapter_place("02"),
    "placed_chapters": lambda s: s.placed_chapters(), "position_route": lambda s: s.position_route(),
    "reading_place": lambda s: s.reading_place(), "last_position": lambda s: s.last_position(),
    "chapter_progress": lambda s: s.chapter_progress("02"), "all_progress": lambda s: s.all_progress(),
    "parts_read": lambda s: s.parts_read(), "open_attempt": lambda s: s.open_attempt("02"),
    "answers": lambda s: s.answers(), "runs": lambda s: s.runs(), "edit": lambda s: s.edit("02", "s"),
    "edits": lambda s: s.edits(), "activity": lambda s: s.activity(), "export_data": lambda s: s.export_data(),
}


@pytest.mark.parametrize("read", sorted(_READS))
def test_a_read_never_waits_for_another_connections_write(store, tmp_path, read):
    # kills `_tx(False)` -> `_tx(True)` in every read method (store.py:475-796: a read taking the
    # write lock): the app reads on its UI thread while the writer's transaction is open; a read
    # that waited for the write lock would freeze the screen for up to the 30 s busy timeout.
    # No clock: the store's connection is told not to wait at all (busy_timeout 0), so a read
    # that asks for the write lock fails at once, while a WAL read answers from the last commit.
    import sqlite3

    store.reach_break("02", 1)
    store.set_position("02", 1, line=3, route="A")
    holder = sqlite3.connect(tmp_path / "p.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO settings (course_id, key, value) VALUES (?, 'route', 'Z')", (store.course_id,))
    store._conn.execute("PRAGMA busy_timeout = 0")
    try:
        value = _READS[read](store)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert value != "Z"  # the uncommitted write is not seen


# -- write methods take the write lock when their transaction begins ------------


def _route_import(tmp_path):
    return _export(tmp_path, route="B", chapters=[{"chapter_id": "04", "furthest_break": 2, "completed": False}], parts_read=[])


_WRITES = {
    "set_route": (lambda s, tmp: s.set_route("C"), lambda s: s.get_route() == "C"),
    "mark_part_read": (lambda s, tmp: s.mark_part_read("02", 1), lambda s: s.parts_read("02") == {"02": {1}}),
    "start_attempt": (lambda s, tmp: s.start_attempt("02", 7), lambda s: s.open_attempt("02").seed == 7),
    "finish_attempt": (lambda s, tmp: s.finish_attempt(1), lambda s: s.open_attempt("02") is None),
    "record_run": (lambda s, tmp: s.record_run("02", "s1", "pass"), lambda s: [r.verdict for r in s.runs("02")] == ["pass"]),
    "import_json": (lambda s, tmp: s.import_json(_route_import(tmp)), lambda s: s.get_route() == "B" and s.chapter_progress("04").furthest_break == 2),
    "set_position": (lambda s, tmp: s.set_position("02", 3), lambda s: s.last_position() == ("02", 3)),
    "reach_break": (lambda s, tmp: s.reach_break("02", 2), lambda s: s.chapter_progress("02").furthest_break == 2),
    "set_completed": (lambda s, tmp: s.set_completed("02"), lambda s: s.chapter_progress("02").completed),
    "record_answer": (lambda s, tmp: s.record_answer("02", "q", "B", True), lambda s: [a.answer for a in s.answers("02")] == ["B"]),
    "save_edit": (lambda s, tmp: s.save_edit("02", "s", "x = 1\n"), lambda s: s.edit("02", "s") == "x = 1\n"),
    "delete_edit": (lambda s, tmp: s.delete_edit("02", "s"), lambda s: s.edit("02", "s") is None),
    "reset": (lambda s, tmp: s.reset("02"), lambda s: s.chapter_progress("02").furthest_break == 0),
}


@pytest.mark.parametrize("method", sorted(_WRITES))
def test_no_other_connection_writes_inside_a_write_methods_transaction(store, tmp_path, method):
    # kills _tx(True) -> _tx(False) in every write method (store.py:479-958:
    # set_position, reach_break, set_completed, record_answer, save_edit, delete_edit, reset). A write
    # method's transaction must hold the write lock from its BEGIN: with a deferred BEGIN another
    # process (a second torchcourse on the same data directory) can commit between the method's
    # reads and its writes, and the method's first write then fails at once with
    # SQLITE_BUSY_SNAPSHOT, which the learner sees as "读写进度库 … 时出错：database is locked"
    # (import_json reads the route before it sets it: checked by hand on the :856 mutant with the
    # other write made at its first INSERT). Deterministic, no thread and no clock: the
    # store's own connection traces its statements, and at the first statement after BEGIN another
    # connection tries to write without waiting (timeout 0).
    import sqlite3

    if method == "finish_attempt":
        store.start_attempt("02", 7)
    if method == "delete_edit":
        store.save_edit("02", "s", "x = 0\n")
    if method == "reset":
        store.reach_break("02", 1)
    other = sqlite3.connect(tmp_path / "p.sqlite3", isolation_level=None, timeout=0)
    tried: list[str] = []

    def trace(sql: str) -> None:
        if tried or sql.lstrip().upper().startswith("BEGIN"):
            return
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO runs (course_id, chapter_id, snippet_id, verdict, at) VALUES ('zz-other', '09', 'x', 'pass', '2026-01-01T00:00:00+00:00')")
            other.execute("COMMIT")
            tried.append("written")
        except sqlite3.OperationalError as exc:
            tried.append(str(exc))
            if other.in_transaction:
                other.execute("ROLLBACK")

    conn = store._conn
    conn.set_trace_callback(trace)
    try:
        do, check = _WRITES[method]
        do(store, tmp_path)
    finally:
        conn.set_trace_callback(None)
        other.close()
    assert tried == ["database is locked"], f"{method}: another connection wrote inside its transaction: {tried}"
    assert check(store), f"{method}: its write is not stored"


def test_a_corrupt_databases_wal_is_moved_aside_with_it(tmp_path):
    # kills store.py:344 (the -wal / -shm os.replace deleted): the last commits of a WAL database
    # live in its -wal file until a checkpoint; when the main file is found corrupt while another
    # connection still has it open (so SQLite has not folded or removed the -wal), the -wal and
    # -shm must go aside with it, byte for byte, not be left to the new empty database (which
    # SQLite then resets: on the mutant both are gone)
    import sqlite3

    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    s.set_route("A")
    s.close()
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("PRAGMA wal_autocheckpoint = 0")
        other.execute("INSERT INTO runs (course_id, chapter_id, snippet_id, verdict, at) VALUES ('x', '09', 's', 'pass', '2026-01-01T00:00:00+00:00')")
        wal = path.with_name(path.name + "-wal").read_bytes()
        assert len(wal) > 32  # the insert is in the -wal, not yet in the main file
        with open(path, "r+b") as f:
            f.write(b"garbage!" * (path.stat().st_size // 8))
        s, notice = open_store(path)
        s.close()
    finally:
        other.close()
    assert notice is not None and "进度文件已损坏" in notice
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("p.sqlite3.corrupt-") and not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1, sorted(p.name for p in tmp_path.iterdir())
    assert moved[0].with_name(moved[0].name + "-wal").read_bytes() == wal
    assert moved[0].with_name(moved[0].name + "-shm").exists()


# -- opening: busy, unreadable and half-made files --------------------------------


def test_a_database_another_process_is_setting_up_is_reported_busy_not_broken(tmp_path, monkeypatch):
    # kills store.py:294 (`raise _Busy` deleted in _connect): another torchcourse holds the write
    # lock while it creates the schema of a new database; this one finds the file readable (WAL)
    # but cannot migrate it. It must wait and, while the lock stays, say the file is busy — not
    # "无法打开进度库 …: database is locked" — and leave the file alone. The lock is held for the
    # whole call (no race); the busy timeout is shortened so the refusal comes at once.
    import sqlite3

    from torchcourse.progress import store as store_mod

    path = tmp_path / "p.sqlite3"
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("PRAGMA journal_mode = WAL")
        other.execute("BEGIN IMMEDIATE")
        other.execute("CREATE TABLE settings (key TEXT)")
        monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_S", 0.3)
        with pytest.raises(StoreError) as info:
            open_store(path)
        assert str(info.value) == f"进度库 {path} 一直被另一个进程占用，请稍后再试。"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []
    s, notice = open_store(path)  # the lock gone, the same file opens
    try:
        assert notice is None
        s.set_route("A")
        assert s.get_route() == "A"
    finally:
        s.close()


def test_a_directory_where_the_database_should_be_is_moved_aside_as_unreadable(tmp_path):
    # pins the connect-time SQLITE_CANTOPEN path (store.py:276-278): the thing in the way is moved
    # aside with what it holds, the learner is told it could not be read, and a new database works.
    # It does NOT kill :298 (the same error after the connect succeeded): checked on that mutant,
    # sqlite3.connect itself fails on a directory, so :298 is not reached this way.
    path = tmp_path / "p.sqlite3"
    path.mkdir()
    (path / "keep.txt").write_text("mine", encoding="utf-8")
    s, notice = open_store(path)
    try:
        s.set_route("A")
        assert s.get_route() == "A"
    finally:
        s.close()
    assert notice is not None and notice.startswith("进度文件无法读取，已移到 ")
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("p.sqlite3.corrupt-")]
    assert len(moved) == 1 and str(moved[0]) in notice
    assert (moved[0] / "keep.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("tables", [["settings"], "all", ["quiz_attempts"], ["runs", "snippet_edits"]])
def test_a_half_made_file_the_migration_cannot_take_is_refused_untouched(tmp_path, tables):
    # bug 3b: a version-0 file that already holds some of our tables failed with SQLite's raw
    # "table settings already exists" (after being switched to WAL). It is refused before
    # anything touches it, named, with what to do; the file stays byte for byte. No torchcourse
    # leaves such a file (the schema is made in one transaction that sets the version last), and
    # every migration would stop at one of those tables. Kills store.py:232's `<=` -> `<` (a
    # file holding exactly our tables would be called one with "别的表", other tables).
    from torchcourse.progress import store as store_mod

    names = sorted(store_mod._ALL_OUR_TABLES) if tables == "all" else tables
    path = tmp_path / "p.sqlite3"
    c = sqlite3.connect(path)
    for name in names:
        c.execute(f"CREATE TABLE {name} (x)")
    c.commit()
    c.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as info:
        open_store(path)
    assert str(info.value) == (f"进度库 {path} 没有建完：它的结构版本是 0，却已经有 torchcourse 的表 {', '.join(sorted(names))}，"
                               "本程序不能在它上面接着建表。文件没有被改动；请把它移走或改名（torchcourse 会新建一个空的进度库），"
                               "或者把环境变量 TORCHCOURSE_HOME 指向别的目录。")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.sqlite3"]


@pytest.mark.parametrize("version, clash, made_before", [(3, "snippet_edits", None), (4, "quiz_attempts", "parts_read")])
def test_a_file_whose_upgrade_stops_half_way_is_refused_with_sqlites_reason_and_kept(tmp_path, version, clash, made_before):
    # kills store.py:297 (`existed and code in (CANTOPEN, IOERR)` -> `or`: any error on an
    # existing file would move it aside as unreadable) and :299's negated condition (the error
    # would be reported as a read-only data directory). A real version-3 (or 4) database that
    # also has a table of its own with the name a later migration creates: the upgrade cannot
    # create it. The file is refused under its own path with SQLite's reason; its rows and
    # version stay, and what the upgrade made before the clash (version 4: parts_read, by the
    # 4->5 step) is rolled back with it. (store.py:347, the migration's own ROLLBACK deleted,
    # passes this too: _connect closes the connection on every error, and closing rolls the
    # transaction back — equivalent, checked on that mutant.)
    from torchcourse.progress.schema import MIGRATIONS

    path = tmp_path / "p.sqlite3"
    c = sqlite3.connect(path, isolation_level=None)
    for v in range(version):
        MIGRATIONS[v](c)
    c.execute(f"PRAGMA user_version = {version}")
    c.execute("INSERT INTO chapters (course_id, chapter_id, furthest_break) VALUES ('torchcourse', '02', 3)")
    c.execute(f"CREATE TABLE {clash} (x)")
    c.close()
    with pytest.raises(StoreError) as info:
        open_store(path)
    assert str(info.value) == f"无法打开进度库 {path}：table {clash} already exists"
    c = sqlite3.connect(path)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == version
        assert c.execute("SELECT chapter_id, furthest_break FROM chapters").fetchall() == [("02", 3)]
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "parts_read" not in tables and (made_before is None or made_before not in tables)
    finally:
        c.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []


def test_a_part_index_given_as_text_is_stored_as_its_number(store):
    # kills store.py:591 (`part_index = int(part_index)` deleted): the index is taken as a number
    # whatever type it comes in (as set_position takes its part), so "1" is part 1, compared and
    # stored as one; the mutant compares text with 0 and raises TypeError
    assert store.mark_part_read("02", "1") is True
    assert store.mark_part_read("02", 1) is False  # the same part
    assert store.parts_read("02") == {"02": {1}}
    with pytest.raises(ValueError, match="0-based"):
        store.mark_part_read("02", "-1")


def _moved_aside_as_unreadable(tmp_path, block, reason: str):
    """A database with route A; ``block(path)`` puts something in the way of its first read; the
    next open moves it aside unchanged, says so with SQLite's ``reason``, and a new database takes
    its place (empty, writable). Returns the file moved aside."""
    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    s.set_route("A")
    s.close()
    before = path.read_bytes()
    block(path)
    s, notice = open_store(path)
    try:
        assert s.get_route() is None
        s.set_route("B")
        assert s.get_route() == "B"
    finally:
        s.close()
    assert notice is not None and notice.startswith("进度文件无法读取，已移到 ") and reason in notice
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("p.sqlite3.corrupt-") and not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1 and str(moved[0]) in notice
    assert moved[0].read_bytes() == before
    return moved[0]


def test_a_database_whose_wal_cannot_be_opened_is_moved_aside_as_unreadable(tmp_path):
    # kills store.py:298 (`raise _Unusable(..., unreadable=True)` deleted): the file opens, but
    # its first read fails with SQLITE_CANTOPEN because its -wal cannot be opened (a directory
    # stands in its place). The file is moved aside unchanged, with the thing in the way, the
    # learner is told it could not be read and where it went, and a new database works; the
    # mutant refuses to start ("无法打开进度库 …").
    moved = _moved_aside_as_unreadable(tmp_path, lambda path: path.with_name(path.name + "-wal").mkdir(), "打不开数据库文件")
    assert moved.with_name(moved.name + "-wal").is_dir()


def test_a_database_that_fails_with_an_io_error_is_moved_aside_as_unreadable(tmp_path):
    # kills store.py:45 (`_SQLITE_IOERR = 10` -> 11): SQLITE_IOERR is a reason to move the file
    # aside as unreadable, not to refuse to start. Made real and deterministic: a FIFO stands
    # where the -shm file goes, SQLite cannot size or map it and answers "disk I/O error" (code
    # 10) at the first read. The mutant reports "无法打开进度库 …：disk I/O error" and stops.
    import os

    _moved_aside_as_unreadable(tmp_path, lambda path: os.mkfifo(path.with_name(path.name + "-shm")), "读写磁盘出错")


def test_an_import_takes_a_choice_order_of_exactly_a_hundred(store, tmp_path):
    # kills store.py:1011 (`len(shown) > 100` -> `>=`): 100 choices is the largest order taken
    # (101 is refused: test_an_import_names_the_item_it_refuses), kept as it was written
    order = list(range(99, -1, -1))
    f = _export(tmp_path, answers=[{**_ANSWER, "shown": order}])
    assert store.import_json(f)["answers"] == 1
    assert [a.shown for a in store.answers()] == [tuple(order)]


# -- opening while another process holds the lock -------------------------------


def test_a_foreign_database_locked_at_the_first_look_is_looked_at_again_and_refused_untouched(tmp_path, monkeypatch):
    # kills store.py:253 (`raise _Busy` deleted in _foreign_reason: a check that met a lock
    # would count as passed, and the file would be migrated once the lock went) and :382
    # (`delay = 0.01` deleted: the first retry's sleep is a NameError). Another program's
    # database (rollback journal) is exclusively locked while open_store first looks at it;
    # the lock goes as soon as that look is over — sequenced on the look itself, not timed.
    # The look must count as "busy", be retried, and the second look refuse the file as not
    # ours, leaving it as it was. The first look's busy wait is shortened (0.3 s), the retry
    # deadline is not (it was fixed when open_store began).
    path = tmp_path / "p.sqlite3"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)  # released from open_store's thread
    other.execute("CREATE TABLE notes (x)")
    other.execute("INSERT INTO notes VALUES ('mine')")
    other.execute("BEGIN EXCLUSIVE")
    real = store_mod._foreign_reason
    looks: list[str] = []

    def look(p):
        first = not looks
        if first:
            monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_S", 0.3)
        try:
            why = real(p)
            looks.append(f"returned {why!r}")
            return why
        except store_mod._Busy:
            looks.append("busy")
            raise
        finally:
            if first:
                monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_S", 30.0)
                other.execute("ROLLBACK")

    monkeypatch.setattr(store_mod, "_foreign_reason", look)
    try:
        with pytest.raises(StoreError) as info:
            open_store(path)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
    assert looks[0] == "busy", looks
    assert str(info.value) == (f"{path} 是一个 SQLite 数据库，但不是 torchcourse 的进度库（它已有别的表：notes）。"
                               "文件没有被改动；请移走它，或者把环境变量 TORCHCOURSE_HOME 指向别的目录。")
    try:
        assert [r[0] for r in other.execute("SELECT name FROM sqlite_master")] == ["notes"]
        assert other.execute("SELECT x FROM notes").fetchall() == [("mine",)]
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        other.close()


def test_five_minutes_without_scrolling_is_where_reading_time_stops(tmp_path):
    # kills reading.py:16 (IDLE_CAP_S 300.0 -> 601.0), read by tui/readcredit.py: a page that
    # needs 400 s of reading, left on screen for 1000 s with no scroll, is credited the first
    # 300 s only (75 % of it: not read); scrolling again starts a new five minutes. The tracker
    # runs on a screen stand-in (its blocks, its view, the course's pace) and a fake clock.
    from types import SimpleNamespace

    from torchcourse.progress.reading import IDLE_CAP_S
    from torchcourse.tui.readcredit import ReadingTracker

    now = [0.0]
    saved: list[str] = []
    from torchcourse.progress.reading import PACE_FACTOR

    class Block:
        _read_chars = 400.0 * PACE_FACTOR  # at 60 a minute and the fluent pace's factor: 400 s

    block = Block()
    part = SimpleNamespace(index=0, children=[block])
    screen = SimpleNamespace(
        loaded=True, is_current=True, chapter=SimpleNamespace(id="03"),
        body=SimpleNamespace(scroll_y=0, scrollable_content_region=SimpleNamespace(height=10)),
        blocks_in=lambda top, bottom: [(0, block, 1)], part_tops=lambda: [(part, 0)],
        app=SimpleNamespace(course=SimpleNamespace(chars_per_minute=60), save_progress=lambda what, fn: saved.append(what)))

    class Tracker(ReadingTracker):
        clock = staticmethod(lambda: now[0])

    t = Tracker(screen)
    t.account()  # the page is on screen from t = 0
    now[0] = 1000.0
    assert t.account() == [] and saved == []
    assert t.part_share(0) == pytest.approx(300.0 / 400.0)
    assert IDLE_CAP_S == 300.0  # the five minutes the docstring and the home's note promise
    now[0] = 1001.0
    t.scrolled()  # back at the page: the clock counts again
    now[0] = 1001.0 + 61.0
    assert t.account() == [0]  # 300 s + 61 s of 400 s: past 90 %, the part is read
    assert saved == ["03 章第 1 段的阅读记录"]


@pytest.mark.parametrize("depth", [0, 2])
def test_a_file_where_the_data_directory_should_be_is_named_as_in_the_way(tmp_path, depth):
    # a file in place of the data directory (depth 0) or of one of its parents (depth 2) was
    # reported as "…（只读或没有权限）：已经存在" (bug 3a). The learner is told plainly that a file
    # is in the way, which one, and what to do; the file is left as it was. Kills store.py:198's
    # old form (the mkdir failure's own message deleted: the write probe that followed reported
    # the same directory with another reason) — the message is now the mkdir failure's own.
    blocker = tmp_path / "home"
    blocker.write_text("not a directory", encoding="utf-8")
    directory = blocker / "a" / "b" if depth else blocker
    with pytest.raises(StoreError) as info:
        open_store(directory / "progress.sqlite3")
    where = "进度目录的位置上" if not depth else f"进度目录 {directory} 的路径上"
    assert str(info.value) == (f"无法创建进度目录 {directory}：{where}已经有一个文件 {blocker}，它不是目录。"
                               "请把这个文件移走或改名（torchcourse 没有改动它），或者把环境变量 TORCHCOURSE_HOME 指向别的目录。")
    assert "只读" not in str(info.value)
    assert blocker.read_text(encoding="utf-8") == "not a directory"


def test_an_import_backfills_parts_only_for_the_chapters_it_is_given_counts_for(store, tmp_path):
    # the store's side of bug 3c, in process (before the CLI test below, so that a mutant of the
    # bound fails here at once rather than backfilling 50 000 rows there): with break counts,
    # a chapter beyond its count is refused and one the course has not gets no parts; without
    # them (the library's own callers), every chapter's parts up to its furthest break
    f = _export(tmp_path, chapters=[{"chapter_id": "02", "furthest_break": 2}, {"chapter_id": "99", "furthest_break": 3}])
    with pytest.raises(StoreError) as info:
        store.import_json(f, break_counts={"02": 1})
    assert str(info.value) == f"{f}: chapters[0].furthest_break：第 02 章只有 1 个停顿点，这里却是 2，什么都没有导入。"
    assert store.all_progress() == {}
    store.import_json(f, break_counts={"02": 2})
    assert store.parts_read() == {"02": {0, 1}}
    assert store.chapter_progress("99").furthest_break == 3
    store.reset()
    store.import_json(f)
    assert store.parts_read() == {"02": {0, 1}, "99": {0, 1, 2}}


def _import_cli(home, f):
    import os
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(repo), COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "torchcourse", "import", str(f)], cwd=repo, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def test_an_import_beyond_a_chapters_break_points_is_refused_and_its_parts_are_bounded(tmp_path):
    # bug 3c: an export without parts_read and with furthest_break 1 000 000 backfilled a million
    # rows (about 29 s). `torchcourse import` now checks the open course: a furthest break past
    # the chapter's own break points is refused naming the item, the value and the count, and
    # nothing is imported; one at the edge backfills that chapter's parts; a chapter the course
    # does not have keeps its furthest break and backfills no parts.
    from torchcourse.course import load_course
    from torchcourse.paths import content_dir

    n = next(ch for ch in load_course(content_dir(None)).chapters if ch.id == "02").break_points
    assert n >= 2
    home = tmp_path / "home"
    big = _export(tmp_path, chapters=[{"chapter_id": "02", "furthest_break": 999_999}])  # 1 000 000 is PAST_FINAL_BREAK
    r = _import_cli(home, big)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{big}: chapters[0].furthest_break：第 02 章只有 {n} 个停顿点，这里却是 999999，什么都没有导入。" in r.stderr
    db = next(home.rglob("*.sqlite3"))
    c = sqlite3.connect(db)
    try:
        assert c.execute("SELECT count(*) FROM chapters").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM parts_read").fetchone()[0] == 0
    finally:
        c.close()
    edge = tmp_path / "edge.json"
    edge.write_text(json.dumps({"format": "torchcourse-progress", "version": 3, "chapters": [
        {"chapter_id": "02", "furthest_break": n}, {"chapter_id": "zz-not-in-the-course", "furthest_break": 50_000}]}), encoding="utf-8")
    r = _import_cli(home, edge)
    assert r.returncode == 0, r.stderr
    c = sqlite3.connect(db)
    try:
        assert c.execute("SELECT chapter_id, part_index FROM parts_read ORDER BY part_index").fetchall() == [("02", i) for i in range(n)]
        assert c.execute("SELECT chapter_id, furthest_break FROM chapters ORDER BY chapter_id").fetchall() == [
            ("02", n), ("zz-not-in-the-course", 50_000)]
    finally:
        c.close()



def test_a_blocks_reading_weight_counts_code_and_its_output_at_half(tmp_path):
    # kills reading.py:24-26 (block_chars: the snippet branch, its weight, the sum with the
    # expected output, prose counted whole) and :70 (home_note's two forms)
    from torchcourse.progress.reading import block_chars, home_note

    assert block_chars("prose", "张量 是 内存") == 5.0  # white space is not counted
    assert block_chars("snippet", "x = 1\n", "1") == 0.5 * (3 + 1)
    assert block_chars("snippet", "x = 1\n") == 1.5  # no expected output
    assert home_note(425) == "（⏱ 按 170 字/分估；已读按 425 字/分：停够的页才算）"
    assert home_note(425, planned=True) == "（⏱ 按 170 字/分估；已读按 425 字/分：停够的页才算；未写的章按目标计）"


def test_a_store_used_as_a_context_closes_and_a_missing_import_file_is_named(tmp_path):
    # kills store.py:437/:440 (__enter__ returning the store, __exit__ closing it) and :868 (an
    # export file that cannot be read: named, nothing imported)
    s, _ = open_store(tmp_path / "p.sqlite3")
    with s as same:
        assert same is s
        s.set_route("A")
    with pytest.raises(StoreError, match="进度库已关闭"):
        s.get_route()
    s, _ = open_store(tmp_path / "p.sqlite3")
    try:
        missing = tmp_path / "nope.json"
        with pytest.raises(StoreError) as info:
            s.import_json(missing)
        assert str(info.value) == f"无法读取 {missing}：没有这个文件或目录，什么都没有导入。"
        assert s.get_route() == "A"
    finally:
        s.close()


def test_an_export_that_cannot_be_written_is_named_and_leaves_no_temporary_file(store, tmp_path):
    # kills store.py:845-846 (the temporary file removed, the error raised with the target's name)
    target = tmp_path / "out.json"
    target.mkdir()  # a directory where the export goes: the rename over it fails
    with pytest.raises(StoreError) as info:
        store.export_json(target)
    assert str(info.value).startswith(f"无法写入 {target}：")
    assert not list(tmp_path.glob(".out.json.tmp-*")) and target.is_dir()


def test_a_time_at_the_calendars_end_counts_on_its_utc_day(store, shanghai):
    # kills store.py:157 (the fallback `return value.date()` deleted): 9999-12-31 23:30 UTC is
    # past the calendar's end in local time (UTC+8), so the day it counts on is its UTC day —
    # never None, which the home's activity calendar cannot place
    from datetime import date, datetime, timezone

    store.record_answer("02", "q", "a", True, at=datetime(9999, 12, 31, 23, 30, tzinfo=timezone.utc))
    store.record_answer("02", "q", "b", True, at=datetime(2025, 3, 1, 20, 0, tzinfo=timezone.utc))  # 04:00 next day in Shanghai
    assert store.activity() == {date(2025, 3, 2): 1, date(9999, 12, 31): 1}


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
                    reason="permissions do not stop root: the data directory cannot be refused here")
def test_a_data_directory_that_cannot_be_made_is_refused_with_the_reason(tmp_path):
    # kills store.py:216 (the mkdir failure's own message deleted: the write probe would report
    # the directory with "没有这个文件或目录" instead of the real reason); skipped as root
    import os

    parent = tmp_path / "ro"
    parent.mkdir()
    os.chmod(parent, 0o500)
    try:
        with pytest.raises(StoreError) as info:
            open_store(parent / "data" / "p.sqlite3")
    finally:
        os.chmod(parent, 0o700)
    assert str(info.value).startswith(f"无法写入进度目录 {parent / 'data'}（只读或没有权限）：")
    assert "没有这个文件或目录" not in str(info.value)


def test_a_current_database_opens_while_another_process_is_writing_to_it(tmp_path, monkeypatch):
    # kills store.py:335 (_migrate's `return` for a database already at the current version
    # deleted: every open would take the write lock, so opening while another torchcourse
    # writes — the app and `torchcourse progress` at once — would wait for it, here past the
    # shortened busy timeout into "一直被另一个进程占用")
    path = tmp_path / "p.sqlite3"
    s, _ = open_store(path)
    s.set_route("B")
    s.close()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's write transaction, held
        other.execute("INSERT INTO settings (course_id, key, value) VALUES ('x', 'k', 'v')")
        monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_S", 0.3)
        s, notice = open_store(path)
        try:
            assert notice is None and s.get_route() == "B"
        finally:
            s.close()
    finally:
        other.execute("ROLLBACK")
        other.close()


def _descriptors_on(path):
    import os

    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                fds.append(fd)
        except OSError:
            pass
    return fds


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/fd"), reason="needs /proc to see open descriptors")
def test_a_refused_database_is_not_left_open(tmp_path):
    # kills store.py:317 and :329 (conn.close() deleted on the error paths: a refused file —
    # an upgrade that stops half way, one written by a newer torchcourse — stayed open for as
    # long as the error was kept, e.g. while the app shows it)
    from torchcourse.progress.schema import CURRENT_VERSION, MIGRATIONS

    clash = tmp_path / "clash.sqlite3"
    c = sqlite3.connect(clash, isolation_level=None)
    for v in range(3):
        MIGRATIONS[v](c)
    c.execute("PRAGMA user_version = 3")
    c.execute("CREATE TABLE snippet_edits (x)")
    c.close()
    newer = tmp_path / "newer.sqlite3"
    s, _ = open_store(newer)
    s.close()
    c = sqlite3.connect(newer)
    c.execute(f"PRAGMA user_version = {CURRENT_VERSION + 1}")
    c.close()
    for path, words in ((clash, "already exists"), (newer, "更新版本")):
        with pytest.raises(StoreError) as info:
            open_store(path)
        assert words in str(info.value)
        assert _descriptors_on(path) == [], f"{path.name} is still open after it was refused"


def test_all_progress_is_keyed_and_named_by_chapter(store):
    # kills store.py:610 (both `r[0]` -> `r[1]`: the map keyed, or each record named, by its
    # furthest break instead of its chapter)
    from torchcourse.progress.store import ChapterProgress

    store.reach_break("02", 3)
    store.reach_break("04", 1)
    store.set_completed("04")
    got = store.all_progress()
    assert list(got) == ["02", "04"]
    assert got["02"] == ChapterProgress("02", 3, False, None)
    assert got["04"].chapter_id == "04" and got["04"].furthest_break == 1 and got["04"].completed


def test_runs_and_answers_come_back_oldest_first_whatever_order_they_were_written_in(store):
    # kills store.py:721 (runs()' ORDER BY deleted: rows came back in the order written) and the
    # same for answers(): an import or the writer's queue can write an older row after a newer one
    # (ids sorted against time: the table's index would give them in id order)
    from datetime import datetime, timezone

    late, early = datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 1, tzinfo=timezone.utc)
    store.record_run("02", "a-late", "pass", at=late)
    store.record_run("02", "z-early", "fail", at=early)
    store.record_answer("02", "a-late", "B", True, at=late)
    store.record_answer("02", "z-early", "A", False, at=early)
    assert [r.snippet_id for r in store.runs("02")] == ["z-early", "a-late"]
    assert [r.snippet_id for r in store.runs()] == ["z-early", "a-late"]
    assert [a.question_id for a in store.answers("02")] == ["z-early", "a-late"]


def test_an_export_into_a_missing_directory_is_named_and_the_runs_keep_their_fields(store, tmp_path):
    # kills store.py:845 (`missing_ok=True` -> False: the temporary file was never made, so
    # removing it raised a raw FileNotFoundError instead of the message) and :816 (`r[1]` ->
    # `r[2]`: an exported run's snippet id replaced by its verdict)
    target = tmp_path / "missing" / "out.json"
    with pytest.raises(StoreError) as info:
        store.export_json(target)
    assert str(info.value) == f"无法写入 {target}：没有这个文件或目录"
    store.record_run("02", "s1", "pass")
    (run,) = store.export_data()["runs"]
    assert (run["chapter_id"], run["snippet_id"], run["verdict"]) == ("02", "s1", "pass")


def test_an_imported_completed_chapter_keeps_when_it_was_completed(store, tmp_path):
    # kills store.py:907 (the condition negated: a completed chapter imported without its time,
    # and a time taken for a chapter that is not completed)
    f = _export(tmp_path, chapters=[
        {"chapter_id": "02", "furthest_break": 2, "completed": True, "completed_at": "2026-01-05T10:00:00+00:00"},
        {"chapter_id": "03", "furthest_break": 1, "completed": False, "completed_at": "2026-01-06T10:00:00+00:00"}],
        parts_read=[])
    store.import_json(f)
    assert store.chapter_progress("02").completed_at == "2026-01-05T10:00:00.000000+00:00"
    assert store.chapter_progress("03").completed_at is None


def test_an_imported_break_record_starts_at_break_one(store, tmp_path):
    # kills store.py:1064 (the lowest break index 1 -> 2): break 1 is a real break point, 0 is none
    at = "2026-01-05T10:00:00+00:00"
    store.import_json(_export(tmp_path, breaks=[{"chapter_id": "02", "break_index": 1, "at": at}]))
    assert store.export_data()["breaks"] == [{"chapter_id": "02", "break_index": 1, "at": "2026-01-05T10:00:00.000000+00:00"}]
    with pytest.raises(StoreError) as info:
        store.import_json(_export(tmp_path, breaks=[{"chapter_id": "02", "break_index": 0, "at": at}]))
    assert "breaks[0].break_index：应为 1 到 1000000 之间的整数，实际是 '0'" in str(info.value)


def test_a_streak_counts_consecutive_days_and_its_loop_ends(store):
    # kills store.py:790 (`day -= timedelta(days=1)` deleted: the loop never ends), watched on a
    # thread: a streak can never count more days than there are active days, so a count past
    # that is a loop going round on the same day — a state, not a wait
    from datetime import date, datetime, timedelta, timezone

    today = date(2026, 3, 10)
    for back in (0, 1, 2, 4):
        day = today - timedelta(days=back)
        store.record_run("02", "s", "pass", at=datetime(day.year, day.month, day.day, 12, tzinfo=timezone.utc))
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("n", store.streak(today)), daemon=True)
    t.start()
    while t.is_alive():
        frame = sys._current_frames().get(t.ident)
        while frame is not None and frame.f_code is not store_mod.Store.streak.__code__:
            frame = frame.f_back
        if frame is not None:
            assert frame.f_locals.get("n", 0) <= 4, "streak() counted past the active days: its loop does not move to the day before"
        t.join(0.001)
    assert out["n"] == 3


def test_a_reached_break_remembers_the_route_it_was_read_on(store):
    # kills store.py:585 (reach_break's position_route deleted) and :501 (`max(0, …)` -> 1: a
    # place at the very top of its part kept as offset 1)
    store.set_route("B")
    store.reach_break("02", 1)
    assert store.position_route() == "B"
    store.set_position("02", 1, line=4, offset=0)
    assert store.reading_place()["offset"] == 0


def test_export_and_import_take_a_path_given_as_text(store, tmp_path):
    # kills store.py:836 and :864 (`path = Path(path)` deleted: a str has no with_name)
    store.set_route("C")
    out = str(tmp_path / "out.json")
    store.export_json(out)
    other, _ = open_store(tmp_path / "q.sqlite3")
    try:
        other.import_json(out)
        assert other.get_route() == "C"
    finally:
        other.close()


def test_an_imported_chapter_without_a_break_reached_is_taken_at_zero(store, tmp_path):
    # kills store.py:1035 (both 0 -> 1: a missing furthest_break read as 1, an explicit 0 refused)
    store.import_json(_export(tmp_path, chapters=[{"chapter_id": "02", "completed": False}, {"chapter_id": "03", "furthest_break": 0}], parts_read=[]))
    assert store.chapter_progress("02").furthest_break == 0 and store.chapter_progress("03").furthest_break == 0
    assert set(store.all_progress()) == {"02", "03"}


def test_a_database_path_that_leads_nowhere_is_named(tmp_path):
    # kills store.py:300 (the connect failure's own message deleted: a raw UnboundLocalError
    # instead): the database path is a symbolic link into a directory that does not exist, so
    # SQLite cannot create the file although the data directory itself is writable
    path = tmp_path / "p.sqlite3"
    path.symlink_to(tmp_path / "gone" / "p.sqlite3")
    with pytest.raises(StoreError) as info:
        open_store(path)
    assert str(info.value).startswith(f"无法打开进度库 {path}：")
    assert path.is_symlink() and not (tmp_path / "gone").exists()
