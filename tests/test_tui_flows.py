"""The app's flows driven by keys (Pilot) on the fixture course, a real store and a real runner."""

from __future__ import annotations

import shutil

from torchcourse.tui import keys
from torchcourse.tui.screens.dialogs import HelpScreen, RunSummaryScreen
from torchcourse.tui.screens.home import HomeScreen
from torchcourse.tui.reader import ReaderScreen
from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import (FIXTURE, build_app, edited_course, link_cell, open_loaded_reader, open_palette, open_reader, reader,
                              run_app, screen_text, started, sync, wait_for, widget_text)

SIZE = (100, 30)


async def quiz_shows(pilot, question: str) -> None:
    """Wait until the quiz screen is up and shows ``question``."""
    from torchcourse.tui.screens.quiz import QuizScreen

    await wait_for(pilot, lambda: isinstance(pilot.app.screen, QuizScreen), what="the quiz")
    await wait_for(pilot, lambda: question in screen_text(pilot.app), what=f"the question {question}")


def snippet_view(screen: ReaderScreen, snippet_id: str) -> SnippetView:
    return next(v for v in screen.query(SnippetView) if v.snippet.id == snippet_id)


class TestRouteReadBreakResume:
    @sync
    async def test_choose_route_read_break_quit_and_continue(self, tmp_path):
        db = tmp_path / "progress.sqlite3"
        async with started(db, size=SIZE) as (app, store, pilot):
            assert "▶ D 从头读到尾" in screen_text(app)
            # choose route A: r focuses the routes, ↑ to A, Enter switches
            await pilot.press("r", "up", "enter")
            await wait_for(pilot, lambda: store.get_route() == "A", what="route A stored")
            await wait_for(pilot, lambda: "▶ A 只想知道为什么报错" in screen_text(app), what="route A marked")
            # 继续 with no position yet starts the route's first unfinished chapter: 02
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app, "02")
            assert "图：用完就扔" in screen_text(app)
            # pass the break point with the next-part key
            await pilot.press("n")
            await wait_for(pilot, lambda: store.chapter_progress("02").furthest_break >= 1, what="break 1 stored")
            await wait_for(pilot, lambda: "已记下" in widget_text(screen.banner(1)), what="banner marked")
            await wait_for(pilot, lambda: "🛑 断点 1/1" in screen_text(app), what="banner on screen")
            await pilot.press("q")
        assert app.return_code == 0

        # start again: 继续 lands on that break point
        async with started(db, size=SIZE) as (app2, store2, pilot):
            assert store2.get_route() == "A"
            await wait_for(pilot, lambda: "继续 (c)：02 图：用完就扔 · 断点 1/1 之后" in screen_text(app2), what="继续 label")
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app2, "02")
            banner, body = screen.banner(1), screen.body
            # the chapter's tail is short, so the view cannot put the banner at its top: it goes as far
            # down as it can with the banner on screen (not "exactly at the end": a line composed after
            # the landing can add a row below the view, seen once in ten runs at load 4)
            await wait_for(pilot, lambda: body.scroll_y > 0 and banner in screen.visible_banners(), what="landed at the banner")
            assert body.max_scroll_y - body.scroll_y <= 2, (body.scroll_y, body.max_scroll_y)
            await wait_for(pilot, lambda: "🛑 断点 1/1" in screen_text(app2), what="banner painted")

    @sync
    async def test_stop_here_saves_and_goes_home(self, tmp_path):
        db = tmp_path / "p.sqlite3"
        async with started(db, size=SIZE) as (app, store, pilot):
            await pilot.press("c")  # route D starts with 01
            screen = await open_loaded_reader(pilot, app, "01")
            await pilot.press("n")  # break 1 of 2
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 1, what="break 1 stored")
            await wait_for(pilot, lambda: screen.banner(1) in screen.visible_banners(), what="break 1 on screen")
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
            await wait_for(pilot, app.writer.idle, what="the queued writes")  # written off the UI thread
            assert store.last_position() == ("01", 1)
            assert store.chapter_progress("01").furthest_break >= 1
            await wait_for(pilot, lambda: "读到一半 1/2" in screen_text(app), what="home refreshed")
            assert "01 盒子：一块内存" in screen_text(app)
        async with started(db, size=SIZE) as (app2, store2, pilot):
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app2, "01")
            banner = screen.banner(1)
            # the banner is the first thing on screen
            await wait_for(pilot, lambda: banner.region.y == screen.body.region.y, what="the banner at the top")
            await wait_for(pilot, lambda: screen_text(app2).splitlines()[2].strip().startswith("┃ 🛑 断点 1/2 · 看完了一块内存"),
                           what="the banner painted at the top")

    @sync
    async def test_scrolling_a_banner_into_view_records_it(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(80, 24)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            assert store.chapter_progress("01").furthest_break == 0
            body = screen.body
            for _ in range(60):  # a row at a time (each key waited for) until the banner is in view
                y = body.scroll_y
                await pilot.press("down")
                await wait_for(pilot, lambda: body.scroll_y > y, what="scrolled one row")
                if screen.banner(1) is not None and screen.banner(1) in screen.visible_banners():
                    break
            assert screen.banner(1) in screen.visible_banners(), "the banner never came into view"
            await wait_for(pilot, lambda: "已记下" in widget_text(screen.banner(1)), what="the banner marked on screen")
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 1, what="break 1 stored")

    @sync
    async def test_ctrl_c_quits_and_keeps_progress(self, tmp_path):
        db = tmp_path / "p.sqlite3"
        async with started(db, size=SIZE) as (app, store, pilot):
            await open_reader(pilot, "01")
            await pilot.press("n")
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 1, what="break 1 stored")
            await pilot.press("ctrl+c")
        assert app.return_code == 0
        app2, store2 = build_app(db)
        assert store2.chapter_progress("01").furthest_break >= 1
        assert store2.last_position() == ("01", 1)
        store2.close()

    @sync
    async def test_next_and_previous_chapter_follow_the_route(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await open_reader(pilot, "01")
            await pilot.press("right_square_bracket")
            await open_loaded_reader(pilot, app, "02")
            assert "图：用完就扔" in screen_text(app)
            await pilot.press("right_square_bracket")  # 03 is planned: nothing after 02
            await pilot.pause()
            assert reader(app).chapter.id == "02" and "图：用完就扔" in screen_text(app)
            await pilot.press("left_square_bracket")
            await open_loaded_reader(pilot, app, "01")
            assert "盒子：一块内存" in screen_text(app)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")

    @sync
    async def test_unwritten_chapter_is_not_opened(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            assert "暂未上线" in screen_text(app)
            app.open_chapter("03")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)

    @sync
    async def test_toc_lists_sections_and_breaks_and_jumps(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(80, 24)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            await pilot.press("t")
            await wait_for(pilot, lambda: "🛑 断点 2/2 · 检查点之后" in screen_text(app), what="the table of contents")
            text = screen_text(app)
            assert "说明书" in text and "🛑 断点 1/2 · 看完了一块内存" in text and "🛑 断点 2/2 · 检查点之后" in text
            # the last entry is the final section (走神救援)
            await pilot.press("end", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen), what="back in the reader")
            await wait_for(pilot, lambda: "走神救援" in screen_text(app), what="the last section on screen")


async def show_link(pilot, screen: ReaderScreen, href: str) -> tuple[int, int]:
    """Scroll the prose holding the link to ``href`` to the top; return where the link is painted."""
    from torchcourse.tui.reader import Prose

    prose = next(p for p in screen.query(Prose) if any(link.href == href for link in p.links))
    screen.body.scroll_to(y=screen._y(prose), animate=False, immediate=True)
    await wait_for(pilot, lambda: link_cell(pilot.app, href) is not None, what=f"the link {href} on screen")
    return link_cell(pilot.app, href)


def at_section(screen: ReaderScreen, anchor: str) -> bool:
    """The section is at the top of the body, or as near as scrolling goes (a short chapter tail)."""
    section = screen.widget_for_line(screen.chapter.section(anchor).line)
    body = screen.body
    return body.scroll_y == min(screen._y(section), body.max_scroll_y)


def top_lines(app, n: int = 4) -> str:
    return "\n".join(screen_text(app).splitlines()[1 : 1 + n])


class TestLinks:
    @sync
    async def test_click_a_link_opens_the_other_chapter_at_its_section(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            x, y = await show_link(pilot, screen, "02#divide")
            text = screen_text(app).splitlines()[y]
            assert "除零、03 章；回看内存；文档 (http://pytorch.org)" in text, text  # link text; the web link shows its URL
            assert link_cell(app, "http://pytorch.org") is None  # web links are not click targets
            await pilot.click(offset=(x, y))
            new = await open_loaded_reader(pilot, app, "02")
            await wait_for(pilot, lambda: at_section(new, "divide"), what="scrolled to the section")
            assert new.body.scroll_y > 0
            assert "除零" in top_lines(app, 12), top_lines(app, 12)

    @sync
    async def test_link_to_a_planned_chapter_says_so(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            x, y = await show_link(pilot, screen, "03")
            await pilot.click(offset=(x + 1, y))
            await wait_for(pilot, lambda: "03 以后再写 暂未上线（还在写）" in screen_text(app), what="the notice")
            assert app.screen is screen and screen.chapter.id == "01"

    @sync
    async def test_link_within_the_chapter_scrolls_to_the_section(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            x, y = await show_link(pilot, screen, "#memory")
            assert screen.body.scroll_y > 0
            await pilot.click(offset=(x, y))
            await wait_for(pilot, lambda: at_section(screen, "memory"), what="scrolled to #memory")
            assert top_lines(app, 1).strip().startswith("一块内存"), top_lines(app)
            assert app.screen is screen

    @sync
    async def test_keyboard_lists_the_links_on_screen_and_opens_one(self, tmp_path):
        from torchcourse.tui.screens.toc import LinksScreen

        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            await show_link(pilot, screen, "02#divide")
            await pilot.press("l")
            await wait_for(pilot, lambda: isinstance(app.screen, LinksScreen), what="the link picker")
            await wait_for(pilot, lambda: "03 章 → 03 以后再写（还没写好）" in screen_text(app), what="the links listed")
            text = screen_text(app)
            assert "除零 → 02 图：用完就扔 · 除零" in text
            assert "03 章 → 03 以后再写（还没写好）" in text
            assert "内存 → 本章 · 一块内存" in text
            picker = app.screen.query_one("#links-list")
            assert [str(o.prompt).split(" → ")[0] for o in picker.options] == ["除零", "03 章", "内存"]  # no web link
            await pilot.press("home", "down", "enter")  # second entry: the planned chapter
            await wait_for(pilot, lambda: "03 以后再写 暂未上线（还在写）" in screen_text(app), what="the notice")
            assert app.screen is screen
            await pilot.press("l")
            await wait_for(pilot, lambda: isinstance(app.screen, LinksScreen), what="the link picker")
            await pilot.press("home", "enter")
            new = await open_loaded_reader(pilot, app, "02")
            await wait_for(pilot, lambda: at_section(new, "divide"), what="scrolled to the section")
            assert new.body.scroll_y > 0

    @sync
    async def test_no_links_on_screen(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            await open_reader(pilot, "02")
            await pilot.press("l")
            await wait_for(pilot, lambda: "这一屏没有可以打开的链接" in screen_text(app), what="the notice")
            assert isinstance(app.screen, ReaderScreen)


class TestQuiz:
    @sync
    async def test_quiz_key_opens_the_checkpoint_quiz(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await open_reader(pilot, "01")
            await pilot.press("m")
            await quiz_shows(pilot, "切片会复制数据吗？")


class TestHomeQuizAndReview:
    """Issue #5: the checkpoint quiz is reachable from home; missed questions come back from 复习 on home."""

    @sync
    async def test_review_entry_shows_the_count_due_and_v_opens_the_review(self, tmp_path):
        from datetime import datetime, timedelta

        from torchcourse.tui.screens.quiz import ReviewScreen
        from tui_support import TODAY

        app, store = build_app(tmp_path / "p.sqlite3")
        at = datetime.combine(TODAY, datetime.min.time()).replace(hour=10)
        store.record_answer("02", "second-call", "0", False, at=at - timedelta(days=2))  # box 1: due yesterday
        store.record_answer("01", "slice-copies", "0", False, at=at)  # missed today: due tomorrow, not now
        async with run_app(app, store, size=(80, 24), close_store=False) as pilot:
            assert "📝 复习 (v)：今天到期 1 题" in screen_text(app)
            await pilot.press("v")
            await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review")
            await wait_for(pilot, lambda: "第二次调用 use(g) 会怎样？" in screen_text(app), what="the due question")
            assert "第 1/1 题" in screen_text(app) and "切片会复制数据吗？" not in screen_text(app)
            from tui_support import shown_key

            await pilot.press(*shown_key(app, 1), "enter")  # right this time (the key is choice 1 in the file)
            await wait_for(pilot, lambda: "✓ 正确" in screen_text(app), what="the verdict")
            await pilot.press("enter")  # the summary
            await wait_for(pilot, lambda: "得分：1/1" in screen_text(app), what="the summary")
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
            # back home: the entry is refreshed from the store
            await wait_for(pilot, lambda: "📝 复习 (v)：今天没有到期的复习题" in screen_text(app), what="the count refreshed")
        assert [a.correct for a in store.answers("02")] == [False, True]
        store.close()

    @sync
    async def test_review_entry_by_enter_and_by_click(self, tmp_path):
        from torchcourse.tui.screens.quiz import ReviewScreen

        async with started(tmp_path / "p.sqlite3", size=(80, 24)) as (app, store, pilot):
            assert "📝 复习 (v)：今天没有到期的复习题" in screen_text(app)
            entry = app.screen.query_one("#review")
            await pilot.press("tab")  # from 继续 to the 复习 line
            assert app.focused is entry
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review by Enter")
            await wait_for(pilot, lambda: "今天没有到期的复习题" in screen_text(app), what="nothing due")
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
            await pilot.click("#review")
            await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review by a click")

    @sync
    async def test_k_on_home_opens_the_highlighted_chapters_quiz(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE, notifications=True) as (app, store, pilot):
            chapters = app.screen.query_one("#chapters")
            chapters.focus()
            await pilot.press("home", "down")  # 02
            await pilot.press("m")
            await quiz_shows(pilot, "第二次调用 use(g) 会怎样？")
            assert "第 02 章检查点" in screen_text(app)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
            # a planned chapter has no quiz yet: a notice, and home stays
            app.screen.query_one("#chapters").focus()
            await pilot.press("end", "m")
            await wait_for(pilot, lambda: "03 以后再写 暂未上线（还在写）" in screen_text(app), what="the notice")
            assert isinstance(app.screen, HomeScreen)

    @sync
    async def test_k_works_while_继续_has_focus(self, tmp_path):
        """Start-up highlight is the 继续 target's chapter (01), so k right away opens 01's quiz."""
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            assert app.focused is app.screen.query_one("#continue")
            await pilot.press("m")
            await quiz_shows(pilot, "切片会复制数据吗？")

    @sync
    async def test_palette_lists_the_quizzes_and_opens_one(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await open_palette(pilot)
            await pilot.press(*"测验")
            await wait_for(pilot, lambda: "测验 02 图：用完就扔" in screen_text(app), what="the quiz entries")
            assert "测验 01 盒子：一块内存" in screen_text(app)
            assert "测验 03" not in screen_text(app)  # planned: no quiz entry
            await pilot.press(*" 02")
            await wait_for(pilot, lambda: "测验 01" not in screen_text(app), what="the filtered list")
            await pilot.press("enter")
            await quiz_shows(pilot, "第二次调用 use(g) 会怎样？")


class TestSnippets:
    @sync
    async def test_run_a_snippet_and_see_the_match(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", cache=tmp_path / "cache", size=(120, 30)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "hello")
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", what="the run")
            assert "✅ 一致" in widget_text(view.query_one(".verdict"))
            assert "盒子: [1, 2, 3]" in widget_text(view.query_one(".actual"))
            # wide: real output next to the expected output
            exp, act = view.query_one(".expected"), view.query_one(".actual")
            assert exp.region.y == act.region.y and act.region.x > exp.region.x
            await wait_for(pilot, app.writer.idle, what="the queued writes")  # written off the UI thread
            assert [(r.snippet_id, r.verdict) for r in store.runs("01")] == [("hello", "match")]

    @sync
    async def test_x_scrolls_the_result_into_view(self, tmp_path):
        # a short terminal: the block's header is on screen, its verdict line would be below
        async with started(tmp_path / "p.sqlite3", cache=tmp_path / "cache", size=(80, 16)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "hello")
            assert "#hello" in screen_text(app)
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", what="the run")
            await wait_for(pilot, lambda: "✅ 一致" in screen_text(app), what="the verdict on screen", timeout=5)

    @sync
    async def test_mismatch_shows_a_diff_stacked_when_narrow(self, tmp_path):
        root = edited_course(tmp_path, "盒子: [1, 2, 3]\n```", "盒子: [1, 2, 4]\n```")
        async with started(tmp_path / "p.sqlite3", course_root=root, size=(80, 24)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "hello")
            view.focus()
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", what="the run")
            assert "❌ 不一致" in widget_text(view.query_one(".verdict"))
            diff = widget_text(view.query_one(".diff"))
            assert "-盒子: [1, 2, 4]" in diff and "+盒子: [1, 2, 3]" in diff
            exp, act = view.query_one(".expected"), view.query_one(".actual")
            assert act.region.y > exp.region.y, "narrow: stacked"

    @sync
    async def test_run_button_by_mouse(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(120, 30)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "hello")
            head = view.query_one(".snip-head")
            assert widget_text(head).startswith(" ▶ 运行 (x)")
            await pilot.click(head, offset=(3, 0))
            await wait_for(pilot, lambda: view.state == "done", what="the run")
            assert "✅ 一致" in widget_text(view.query_one(".verdict"))

    @sync
    async def test_gpu_snippet_is_marked_and_run_all_summarises(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(120, 30)) as (app, store, pilot):
            screen = await open_reader(pilot, "02")
            gpu = snippet_view(screen, "needs-gpu")
            assert "🗓️ 未实跑 — 需要 GPU" in widget_text(gpu.query_one(".snip-head"))
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, RunSummaryScreen) and app.screen.query("#run-summary"),
                           timeout=60, what="the summary")
            summary = widget_text(app.screen.query_one("#run-summary"))
            assert summary.startswith("共 3 个代码块：")
            assert "一致 2 个" in summary and "未实跑（需要 GPU） 1 个" in summary
            await pilot.press("escape")
            assert "🗓️ 未实跑 — 需要 GPU" in widget_text(gpu.query_one(".verdict"))

    @sync
    async def test_run_all_names_the_failed_blocks_in_chinese(self, tmp_path):
        root = edited_course(tmp_path, "盒子: [1, 2, 3]\n```", "盒子: [1, 2, 4]\n```")
        async with started(tmp_path / "p.sqlite3", course_root=root, size=(120, 30)) as (app, store, pilot):
            await open_reader(pilot, "01")
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, RunSummaryScreen) and app.screen.query("#run-summary"),
                           timeout=60, what="the summary")
            summary = widget_text(app.screen.query_one("#run-summary"))
            assert "需要看一眼：#hello（不一致）" in summary and "mismatch" not in summary, summary

    @sync
    async def test_cancel_a_running_snippet(self, tmp_path):
        slow = '```python {#slow timeout=60}\nimport time\ntime.sleep(30)\nprint("醒了")\n```\n\n```output\n醒了\n```\n\n'
        root = edited_course(tmp_path, "```python {#hello}", slow + "```python {#hello}")
        async with started(tmp_path / "p.sqlite3", course_root=root, size=(120, 30)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "slow")
            view.focus()
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "running", what="running")
            await wait_for(pilot, lambda: "运行中" in widget_text(view.query_one(".verdict")), what="the spinner")
            await pilot.press("z")
            await wait_for(pilot, lambda: view.state == "done", timeout=10, what="cancelled")
            assert "⏹️ 已取消" in widget_text(view.query_one(".verdict"))


PASTED_TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nZeroDivisionError: division by zero\n'


class TestLookupSearchHelp:
    @staticmethod
    async def open_lookup(pilot, app):
        """Press e and wait until the paste box has focus; return the box."""
        from textual.widgets import TextArea

        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen.query("#lookup-input") and app.focused is app.screen.query_one("#lookup-input", TextArea),
                       what="the lookup input focused")
        return app.screen.query_one("#lookup-input", TextArea)

    @staticmethod
    async def paste_traceback(pilot, app):
        """Paste a whole ZeroDivisionError traceback and wait for the ranked results."""
        from textual import events

        app.post_message(events.Paste(PASTED_TRACEBACK))
        await wait_for(pilot, lambda: app.screen.hits if hasattr(app.screen, "hits") else False, what="lookup results")

    @sync
    async def test_paste_an_error_and_land_on_its_section(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await self.open_lookup(pilot, app)
            await self.paste_traceback(pilot, app)
            # the hits are set before the list showing them is repainted: wait for the screen
            await wait_for(pilot, lambda: "02 · 除零" in screen_text(app), what="the 除零 hit on screen")
            await pilot.press("tab", "enter")
            screen = await open_loaded_reader(pilot, app, "02")
            await wait_for(pilot, lambda: "除零" in "\n".join(screen_text(app).splitlines()[1:6]), what="除零 at the top")

    @sync
    async def test_enter_in_the_paste_box_jumps_to_the_best_match(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            box = await self.open_lookup(pilot, app)
            assert "回车直接跳到最相关的那一节" in screen_text(app)
            # no results yet: Enter (or shift+Enter) types a newline, nothing is opened
            await pilot.press("shift+enter")
            await pilot.pause()
            assert box.text == "\n" and app.screen.query("#lookup-input")
            box.clear()
            await self.paste_traceback(pilot, app)
            assert box.text == PASTED_TRACEBACK  # the multi-line paste arrived whole
            assert app.focused is box
            await pilot.press("enter")  # no Tab: straight to the best match
            screen = await open_loaded_reader(pilot, app, "02")
            await wait_for(pilot, lambda: "除零" in "\n".join(screen_text(app).splitlines()[1:6]), what="除零 at the top")

    @sync
    async def test_search_and_jump(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await pilot.press("slash")
            await pilot.press(*"走神救援")
            await wait_for(pilot, lambda: getattr(app.screen, "hits", None), what="search results")
            assert "找到" in screen_text(app)
            await pilot.press("enter")
            screen = await open_loaded_reader(pilot, app, "01")
            await wait_for(pilot, lambda: screen.body.scroll_y > 0, what="scrolled to the hit")
            await wait_for(pilot, lambda: "走神救援" in screen_text(app), what="the hit on screen")

    @sync
    async def test_help_lists_every_key(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(100, 60)) as (app, store, pilot):
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
            text = widget_text(app.screen.query_one("#help-table"))
            for k in keys.KEYS:
                assert k.description in text, k
            needed = {"continue", "choose_route", "open_chapter", "next_chapter", "prev_chapter", "toc", "next_part",
                      "stop_here", "run_snippet", "run_all", "cancel_run", "quiz", "review", "lookup", "search", "help", "back", "quit"}
            assert needed <= {k.action for k in keys.KEYS}
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")

    @sync
    async def test_command_palette_opens_a_chapter(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await open_palette(pilot)
            await pilot.press(*"02")
            await wait_for(pilot, lambda: "打开章节 02 图：用完就扔" in screen_text(app), what="the palette hit")
            await pilot.press("enter")
            await open_loaded_reader(pilot, app, "02")
            assert "图：用完就扔" in screen_text(app)

    @sync
    async def test_command_palette_speaks_chinese(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await open_palette(pilot)
            await wait_for(pilot, lambda: "打开章节 01" in screen_text(app), what="the entries")
            text = screen_text(app)
            assert "输入章节名" in text, text
            for english in ("Search for commands", "Theme", "Screenshot", "Maximize", "Keys", "Quit"):
                assert english not in text, text
            await pilot.press(*"退出")
            await wait_for(pilot, lambda: "退出程序（进度随时已保存）" in screen_text(app), what="quit entry")
            await pilot.press(*"zzqq")
            await wait_for(pilot, lambda: "没有匹配的命令" in screen_text(app), what="no matches line")


class TestRobust:
    @sync
    async def test_missing_torch_shows_the_install_hint(self, tmp_path):
        import subprocess
        import sys

        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        torchy = '```python {#uses-torch}\nimport torch\nprint(torch.zeros(2))\n```\n\n```output\ntensor([0., 0.])\n```\n\n'
        root = edited_course(tmp_path, "```python {#hello}", torchy + "```python {#hello}")
        async with started(tmp_path / "p.sqlite3", course_root=root, warm=True, python=str(venv / "bin" / "python"), size=(120, 30)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet_view(screen, "uses-torch")
            view.focus()
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", timeout=60, what="the run")
            assert "pip install torch==2.13.0" in widget_text(view.query_one(".verdict"))
            assert isinstance(app.screen, ReaderScreen)

    @sync
    async def test_shipped_course_smoke(self, tmp_path):
        from torchcourse import paths

        async with started(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir(), size=(80, 24)) as (app, store, pilot):
            text = screen_text(app)
            assert app.course.title in text
            written = [c for c in app.course.chapters if c.available]
            for ch in written:
                app.open_chapter(ch.id)
                screen = await open_loaded_reader(pilot, app, ch.id)
                assert ch.title in screen_text(app)
                assert len(screen.query(SnippetView)) == len(ch.snippets)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")


class TestReadMinutes:
    @sync
    async def test_a_chapter_whose_parts_were_read_counts_as_read(self, tmp_path):
        # fixture 02 has one break point near its end and a 15-character tail: its two parts read
        # (issue 13 item 5: parts read, not breaks reached, give the minutes) are the whole chapter
        app, store = build_app(tmp_path / "p.sqlite3")
        store.reach_break("02", 1)
        store.mark_part_read("02", 0)
        store.mark_part_read("02", 1)
        async with run_app(app, store, size=SIZE) as pilot:
            text = screen_text(app)
            assert "已完成 0/3 章 · 已读约 4/46 分钟" in text, text


class TestHomeArrows:
    @sync
    async def test_down_from_continue_reaches_the_route_list(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(80, 24)) as (app, store, pilot):
            assert app.focused.id == "continue"
            await pilot.press("up")  # the first line: stays
            assert app.focused.id == "continue"
            await pilot.press("down")
            assert app.focused.id == "review"
            await pilot.press("down")
            assert app.focused.id == "routes"
            # ↓ on the last route (D, the default) stays in the route list (issue 13 item 12); Tab moves on
            await pilot.press("down")
            assert app.focused.id == "routes"
            await pilot.press("tab")
            assert app.focused.id == "chapters"
            chapters = app.focused
            chapters.highlighted = 0
            await pilot.press("up")
            assert app.focused.id == "routes"
            await pilot.press("shift+tab", "up")
            assert app.focused.id == "continue"


class TestChapterMapStatus:
    @sync
    async def test_a_chapter_read_to_its_last_break_is_not_read_halfway(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        store.reach_break("02", 1)  # 02's only break point; its quiz not done
        store.reach_break("01", 1)  # 1 of 2
        async with run_app(app, store, size=SIZE) as pilot:
            lines = screen_text(app).splitlines()
            line02 = next(ln for ln in lines if " 02 " in ln and "⏱" in ln)
            line01 = next(ln for ln in lines if " 01 " in ln and "⏱" in ln)
            assert "已读完 · 测验待做 (m)" in line02 and "读到一半" not in line02, line02
            assert "读到一半 1/2" in line01, line01


class TestContinueAfterCompletion:
    @sync
    async def test_continue_goes_on_to_the_next_chapter_once_this_one_is_completed(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        store.reach_break("01", 2)
        store.set_position("01", 2)
        store.set_completed("01", True)
        async with run_app(app, store, size=SIZE) as pilot:
            text = screen_text(app)
            assert "▶ 继续 (c)：02 图：用完就扔" in text and "断点 2/2 之后" not in text, text
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "02")


class TestFirstStart:
    @sync
    async def test_a_problem_in_a_chapter_parsed_after_start_is_still_announced(self, tmp_path):
        """A first start parses chapters after the home screen is up (lazy load): a broken chapter
        is still named in the notice, just a moment later, and the home screen is unaffected."""
        from torchcourse.course import load_course
        from torchcourse.progress import open_store
        from torchcourse.tui.app import make_app

        root = tmp_path / "course"
        shutil.copytree(FIXTURE, root)
        chapter = [c for c in load_course(root).chapters if c.available and c.snippets][-1]
        chapter.file.write_text(chapter.file.read_text(encoding="utf-8") + "\n```python {#never-closed}\nprint(1)\n",
                                encoding="utf-8")
        course = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
        assert not course.problems and not chapter_parsed(course, chapter.id)
        store, notice = open_store(tmp_path / "p.sqlite3")
        app = make_app(course, store, notice=notice)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("课程内容有问题" in n.message for n in app._notifications),
                           what="the content-problem notice")
            notice = next(n.message for n in app._notifications if "课程内容有问题" in n.message)
            assert chapter.file.name in notice and "一直没有关闭" in notice, notice
            assert isinstance(app.screen, HomeScreen) and "02 图：用完就扔" in screen_text(app)
        store.close()


def chapter_parsed(course, chapter_id: str) -> bool:
    return course.chapter(chapter_id).parsed
