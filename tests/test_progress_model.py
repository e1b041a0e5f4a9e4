"""One progress model (issue 49, walk M3/M4): each chapter's state and words, decided once in
``torchcourse.progress.model``; the app's home and ``torchcourse progress`` (text and --json)
print the same words for the same stored data. Real store, the shipped course, Pilot."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.progress.model import all_statuses, total_minutes
from torchcourse.progress.store import Store, open_store
from torchcourse.quiz.bank import questions_for

from tui_support import build_app, run_app, screen_text, sync, wait_for


def walk_data(store: Store, course) -> None:
    """The walk's sequence, condensed: route C; 01 complete; 02 read, quiz failed 1 of n;
    00 read to its end without a quiz; 05 quiz failed before reading; 09 half read."""
    store.set_route("C")
    for cid in ("01", "02", "00"):
        for k in range(1, course.chapter(cid).break_points + 1):
            store.reach_break(cid, k)
    for q in questions_for(course, "01"):
        store.record_answer("01", q.id, "x", True)
    store.set_completed("01")
    qs = questions_for(course, "02")
    for i, q in enumerate(qs):
        store.record_answer("02", q.id, "x", i == 0)
    for q in questions_for(course, "05"):
        store.record_answer("05", q.id, "x", False)
    store.reach_break("09", 1)
    store.mark_part_read("09", 0)


def cli_progress(db_home, *args) -> str:
    env = dict(os.environ, TORCHCOURSE_HOME=str(db_home))
    out = subprocess.run([sys.executable, "-m", "torchcourse", "progress", *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


class TestOneVocabulary:
    def test_each_state_has_its_words(self, tmp_path):
        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "p.sqlite3")
        walk_data(store, course)
        st = all_statuses(course, store)
        n02 = len(questions_for(course, "02"))
        assert st["01"].words == "已完成"
        assert st["02"].state == "failed" and st["02"].words.startswith(f"测验未通过 1/{n02}（")
        assert st["00"].state == "quiz" and st["00"].words.startswith("已读完 · 测验待做")
        assert st["05"].state == "reading" and "测验未通过 0/" in st["05"].words  # not 未开始 (walk M3)
        assert st["09"].words.startswith("读到一半 1/")
        assert st["03"].words == "未开始"
        store.close()

    def test_the_appendix_counts_in_no_total(self, tmp_path):
        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "p.sqlite3")
        st = all_statuses(course, store)
        appendix = [s for s in st.values() if s.chapter.kind == "appendix"]
        assert appendix and all(not s.counts_in_totals for s in appendix)
        _read, total = total_minutes(st)
        assert total == sum(s.minutes for s in st.values()) - sum(s.minutes for s in appendix)
        a = course.route("A")
        assert a.minutes == sum(st[c].minutes for c in a.chapters if st[c].chapter.kind != "appendix")
        store.close()


class TestAQuizLeftHalfWay:
    """Walk B M2: a checkpoint left after 2 of its questions is not a failed one."""

    def test_it_reads_half_way_in_the_model_and_in_progress(self, tmp_path):
        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "data" / "progress.sqlite3")
        for k in range(1, course.chapter("07").break_points + 1):
            store.reach_break("07", k)
        qs = questions_for(course, "07")
        attempt = store.start_attempt("07", seed=1)
        store.record_answer("07", qs[0].id, "x", True, attempt_id=attempt)
        store.record_answer("07", qs[1].id, "x", False, attempt_id=attempt)
        st = all_statuses(course, store)["07"]
        assert st.words == f"已读完 · 测验做到一半 2/{len(qs)}（m 接着做）", st.words
        store.close()
        assert f"测验做到一半 2/{len(qs)}" in cli_progress(tmp_path)
        assert "测验未通过" not in cli_progress(tmp_path)

    def test_a_finished_attempt_below_the_mark_is_failed(self, tmp_path):
        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "p.sqlite3")
        for k in range(1, course.chapter("07").break_points + 1):
            store.reach_break("07", k)
        qs = questions_for(course, "07")
        attempt = store.start_attempt("07", seed=1)
        for i, q in enumerate(qs):
            store.record_answer("07", q.id, "x", i == 0, attempt_id=attempt)
        store.finish_attempt(attempt)
        assert all_statuses(course, store)["07"].words.startswith(f"测验未通过 1/{len(qs)}（")
        store.close()


class TestMinutesRead:
    def test_a_finished_route_never_reads_0_minutes(self, tmp_path):
        """Walk M2: every break reached, every checkpoint passed, no part held long enough."""
        from torchcourse.progress.model import route_progress

        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "p.sqlite3")
        route = course.route("C")
        for cid in route.chapters:
            store.set_completed(cid)
        st = all_statuses(course, store)
        done, n, read = route_progress(route, st)
        assert (done, n) == (4, 4) and read == route.minutes
        store.close()

    @sync
    async def test_home_counts_the_chapters_its_minutes_count_and_names_both_paces(self, tmp_path):
        """Walk B L3/M3: the appendix is in neither number; the ⏱ pace and the credit pace are named."""
        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        chapters = [c for c in app.course.chapters if c.kind != "appendix"]
        async with run_app(app, store, size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: "已完成" in screen_text(app), what="home")
            text = screen_text(app)
            assert f"已完成 0/{len(chapters)} 章" in text, text
            assert "⏱ 按 170 字/分估；已读按 425 字/分" in text, text

    def test_a_page_counts_at_a_fluent_pace_not_the_badges_pace(self):
        from torchcourse.progress.reading import reading_pace

        assert reading_pace(170) == 425


class TestAppAndCliAgree:
    @sync
    async def test_home_and_progress_print_the_same_words(self, tmp_path, monkeypatch):
        monkeypatch.setenv("TORCHCOURSE_HOME", str(tmp_path / "home"))
        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(course_id=course.id)
        walk_data(store, course)
        db = store.path
        store.close()
        data = json.loads(cli_progress(tmp_path / "home", "--json"))
        text = cli_progress(tmp_path / "home")
        words = {r["id"]: r["words"] for r in data["chapters"]}
        app, store = build_app(db, course_root=paths.shipped_content_dir())
        async with run_app(app, store, size=(160, 60)) as pilot:
            await wait_for(pilot, lambda: "继续 (c)" in screen_text(app), what="home drawn")
            shown = screen_text(app)
            compared = 0
            for cid, w in words.items():
                title = course.chapter(cid).title
                line = next((ln for ln in shown.splitlines() if f" {cid} {title}" in ln), None)
                if line is None:  # below the fold of the map: the model's rows are what it lists
                    continue
                assert w.split(" (m)")[0] in line, (cid, w, line)
                cli_line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{cid} ") or f"  {cid}  " in ln)
                assert w in cli_line, (cid, w, cli_line)
                compared += 1
            assert compared >= 6, shown
            assert data["continue"]["chapter"] in shown.split("继续 (c)：", 1)[1][:4]


class TestContinueWords:
    def test_the_chapter_heading_is_not_named_as_a_section(self, tmp_path):
        """Walk L12: 「继续 (c)：09 自己写一个 autograd 算子 · §09 · 自己写一个 autogra…」."""
        from torchcourse.progress.model import resume_where

        course = load_course(paths.shipped_content_dir())
        store, _ = open_store(tmp_path / "p.sqlite3")
        ch = course.chapter("09")
        assert resume_where(course, store, ("09", 0, 1, 0)) == "开头"
        sec = next(s for s in ch.sections if s.level > 1)
        assert resume_where(course, store, ("09", 0, sec.line, 0)).startswith("§")
        store.close()


class TestReaderSaysTheModelsWords:
    """The reader's 🛑 banners and its chapter-end panel print the model's words for the stored
    state (issue 49: the app, its banners and ``torchcourse progress`` say one thing)."""

    @sync
    async def test_a_break_reached_says_the_chapters_state(self, tmp_path):
        from torchcourse.progress.model import break_words, status_of

        from tui_support import FIXTURE, open_reader

        app, store = build_app(tmp_path / "p.sqlite3", course_root=FIXTURE)
        async with run_app(app, store) as pilot:
            reader = await open_reader(pilot, "01")
            await pilot.press("n")
            await wait_for(pilot, app.writer.idle, what="writes landed")
            await wait_for(pilot, lambda: "读到一半" in str(reader.banner(1).render()), what="the banner's words")
            words = break_words(status_of(app.course, store, "01"), 1)
            assert words == "已记下 · 读到一半 1/2"
            assert f"✔ {words}" in screen_text(app)

    @sync
    async def test_the_end_panel_says_a_failed_checkpoint_and_its_score(self, tmp_path):
        from torchcourse.progress.model import end_words, status_of

        from tui_support import FIXTURE, open_reader

        db = tmp_path / "p.sqlite3"
        app, store = build_app(db, course_root=FIXTURE)
        course = app.course
        for k in range(1, course.chapter("01").break_points + 1):
            store.reach_break("01", k)
        qs = questions_for(course, "01")
        for i, q in enumerate(qs):
            store.record_answer("01", q.id, "x", i == 0)
        async with run_app(app, store) as pilot:
            await open_reader(pilot, "01")
            await pilot.press("end")
            await pilot.pause()
            title = end_words(status_of(course, store, "01"))
            assert title.startswith(f"本章到此结束 · 测验未通过 1/{len(qs)}（")
            assert title in screen_text(app)
            assert all_statuses(course, store)["01"].words in title  # home's words
