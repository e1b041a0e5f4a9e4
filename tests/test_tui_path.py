"""Issue 13: the learner's path as a new user walks it — resume, routes, running the snippet in
view, reading credit, the two home lists. Pilot on the fixture course with a real store."""

from __future__ import annotations

import pytest

from torchcourse.tui.screens.home import HomeScreen

from tui_support import build_app, home, open_reader, run_app, screen_text, started, sync, wait_for
from tui_support import open_loaded_reader as loaded_reader

SIZE = (100, 30)


class TestResume:
    @sync
    async def test_reaching_the_last_break_with_n_moves_继续_there(self, tmp_path):
        """Item 1: 01, n (1/2), Esc, c, n (2/2), Esc: 继续 offers 2/2, not 1/2."""
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await pilot.press("c")
            await loaded_reader(pilot, app, "01")
            await pilot.press("n")
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 1, what="break 1")
            await pilot.press("escape")
            await home(pilot, app)
            await pilot.press("c")
            await loaded_reader(pilot, app, "01")
            await pilot.press("n")
            # the last break is stored as past the end (a break inserted later never moves the learner back)
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 2, what="break 2")
            await wait_for(pilot, lambda: "断点 2/2" in screen_text(app) and "已记下" in screen_text(app), what="banner 2/2 marked")
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, lambda: "断点 2/2 之后" in screen_text(app), what="继续 at 2/2")
            assert store.last_position()[0] == "01" and store.last_position()[1] >= 2

    @sync
    async def test_resume_returns_to_the_line_at_the_top_of_the_view(self, tmp_path):
        """Item 2: scrolled a few lines, quit, restart, c: the same view, not the break."""
        db = tmp_path / "p.sqlite3"
        async with started(db, size=(80, 24)) as (app, store, pilot):
            await pilot.press("c")
            screen = await loaded_reader(pilot, app, "01")
            # the save once the view rests (0.8 s after the last scroll) is put an hour away, so
            # that only q can save this place however slowly the machine runs the keys
            set_timer = screen.set_timer
            screen.set_timer = lambda delay, cb=None, **kw: set_timer(3600 if cb == screen.place.save_place else delay, cb, **kw)
            for _ in range(4):
                await pilot.press("down")
            await wait_for(pilot, lambda: screen.body.scroll_y == 4, what="scrolled 4 rows")
            top = screen_text(app).splitlines()[2]
            await wait_for(pilot, app.writer.idle, what="the writer idle")
            assert (store.reading_place() or {}).get("line") is None  # not saved before q
            await pilot.press("q")
        async with started(db, size=(80, 24)) as (app2, store2, pilot):
            await pilot.press("c")
            screen = await loaded_reader(pilot, app2, "01")
            await wait_for(pilot, lambda: screen.body.scroll_y == 4, what="back at the same row")
            assert screen_text(app2).splitlines()[2] == top

    @sync
    async def test_an_edited_chapter_falls_back_to_its_break(self, tmp_path):
        """Item 2: a saved line of a chapter changed since is not trusted: the break still there."""
        from torchcourse.tui.summary import resume_place

        app, store = build_app(tmp_path / "p.sqlite3")
        store.reach_break("01", 1)
        store.set_position("01", 1, line=30, offset=2, digest="not-this-text")
        assert resume_place(app.course, store) == ("01", 1, None, 0)
        store.set_position("01", 7, line=30, offset=2, digest="old")  # a break removed since
        assert resume_place(app.course, store)[:2] == ("01", 2)
        store.close()


class TestPlannedRoute:
    @sync
    async def test_a_route_of_unwritten_chapters_is_not_finished(self, tmp_path):
        """Item 3: a route whose chapters are only planned says which are still to come."""
        app, store = build_app(tmp_path / "p.sqlite3")
        store.set_completed("02")
        store.set_route("A")  # 02 (done) → 03 (planned)
        async with run_app(app, store, size=(120, 30)) as pilot:
            text = screen_text(app)
            assert "全部读完" not in text and "🎉" not in text
            assert "还没写好：03" in text
            assert "1 章未写，按目标计" in text
            await pilot.press("c")
            await wait_for(pilot, lambda: any("还没写好" in str(n.message) for n in app._notifications), what="notice")


def snippet(screen, sid):
    from torchcourse.tui.widgets.snippet import SnippetView

    return next(v for v in screen.query(SnippetView) if v.snippet.id == sid)


class TestSnippetInView:
    @sync
    async def test_x_runs_the_snippet_in_view_not_an_old_selection(self, tmp_path):
        """Item 6: select #hello, scroll to #shape-print, x runs #shape-print."""
        async with started(tmp_path / "p.sqlite3", size=(80, 16)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            snippet(screen, "hello").focus()
            await pilot.pause()
            shape = snippet(screen, "shape-print")
            screen.body.scroll_to(y=screen._y(shape), animate=False, immediate=True)
            await wait_for(pilot, lambda: not screen._on_screen(snippet(screen, "hello")), what="hello scrolled away")
            top = screen.body.scroll_y
            await pilot.press("x")
            await wait_for(pilot, lambda: shape.state == "done", what="shape-print ran")
            assert snippet(screen, "hello").state == "idle"
            assert screen.body.scroll_y >= top  # never scrolled back up to the old selection

    @sync
    async def test_tab_goes_to_the_next_snippet_after_the_view(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(80, 16)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            hello = snippet(screen, "hello")
            screen.body.scroll_to(y=screen._y(hello) + 2, animate=False, immediate=True)  # past #hello's top
            await pilot.pause()
            await pilot.press("tab")
            await wait_for(pilot, lambda: screen.focused is snippet(screen, "shape-print"), what="tab to #shape-print")
            await pilot.press("shift+tab")
            await wait_for(pilot, lambda: screen.focused is hello, what="shift+tab back to #hello")

    @sync
    async def test_shift_x_runs_fresh_and_says_which_mode(self, tmp_path):
        """Item 7: the second x shows the cached result; X runs again, uncached, in a new interpreter."""
        from tui_support import widget_text

        async with started(tmp_path / "p.sqlite3", cache=tmp_path / "cache", size=SIZE) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            view = snippet(screen, "hello")
            view.focus()
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", what="first run")
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done" and "缓存结果" in widget_text(view.query_one(".verdict")), what="cached")
            await pilot.press("X")
            await wait_for(pilot, lambda: view.state == "done" and "全新解释器" in widget_text(view.query_one(".verdict")), what="fresh run")
            assert "缓存" not in widget_text(view.query_one(".verdict"))

    @sync
    async def test_expected_and_actual_side_by_side_from_100_columns(self, tmp_path):
        """Item 8: side by side at 100 columns, stacked below."""
        for width, side in ((100, True), (99, False)):
            async with started(tmp_path / f"p{width}.sqlite3", size=(width, 30)) as (app, store, pilot):
                screen = await open_reader(pilot, "01")
                view = snippet(screen, "hello")
                view.focus()
                await pilot.press("x")
                await wait_for(pilot, lambda: view.state == "done", what="the run")
                await pilot.pause()
                exp, act = view.query_one(".expected"), view.query_one(".actual")
                if side:
                    assert exp.region.y == act.region.y and act.region.x > exp.region.x
                else:
                    assert act.region.y > exp.region.y


class TestHomeListsAndPalette:
    @sync
    async def test_down_past_the_last_route_stays_in_the_route_list(self, tmp_path):
        """Item 12: r ↓↓↓ Enter switches route, never opens a chapter."""
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await pilot.press("r", "up", "down", "down", "down", "enter")
            await wait_for(pilot, lambda: store.get_route() == "D", what="route D chosen")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert app.screen.focused.id == "routes"

    @sync
    async def test_palette_finds_a_chapter_by_what_it_is_about_and_promises_no_error_search(self, tmp_path):
        """Item 10: the placeholder promised error keywords the palette never searched."""
        from textual.command import CommandPalette
        from textual.widgets import Input

        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await pilot.press("ctrl+p")
            await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
            assert "报错关键词" not in app.screen.query_one(Input).placeholder
            await pilot.press(*"第二次调用")  # words of chapter 02's promise, not of its title
            await wait_for(pilot, lambda: "打开章节 02" in screen_text(app), what="02 found by its promise")


def test_search_results_render_table_rows_as_text():
    """Item 11: no raw Markdown table rows in the search results."""
    from torchcourse.tui.screens.search import plain_excerpt

    assert plain_excerpt("| retain_graph | 0 次 |") == "retain_graph · 0 次"
    assert plain_excerpt("| a | b |\n|---|:--:|\n| `x` | 1 |") == "a · b x · 1"
    assert plain_excerpt("普通的一句 `code`") == "普通的一句 code"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TestReadingCredit:
    """Item 5: minutes read come from parts scrolled through or stayed in, never from jumping."""

    @sync
    async def test_jumping_with_n_credits_no_minutes(self, tmp_path, monkeypatch):
        from torchcourse.tui.readcredit import ReadingTracker

        clock = FakeClock()  # frozen: every view is left at once, as when n is pressed in a row
        monkeypatch.setattr(ReadingTracker, "clock", clock)
        async with started(tmp_path / "p.sqlite3", size=(80, 24)) as (app, store, pilot):
            await pilot.press("c")
            await loaded_reader(pilot, app, "01")
            await pilot.press("n")
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 1, what="break 1")
            await pilot.press("n")
            # the last break is stored as past the end (a break inserted later never moves the learner back)
            await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break >= 2, what="break 2")
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, app.writer.idle, what="every queued write landed")  # then a missing row is missing
            assert store.parts_read() == {}
            assert "已读约 0/46 分钟" in screen_text(app), screen_text(app)

    # how much time a page needs, and that a quick look reads nothing: tests/test_reader_credit.py (walk L8)

    @sync
    async def test_help_says_how_minutes_read_are_counted(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=(100, 40)) as (app, store, pilot):
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: "按键一览" in screen_text(app), what="help")
            help_text = app.screen.query_one("#help-table").render()
            assert "已读的分钟怎么算" in str(help_text) and "不算读过" in str(help_text)


class TestSmallLayout:
    """Item 15: phrases, overlays, choices and inline code at 100 columns."""

    @sync
    async def test_continue_line_keeps_断点_k_n_之后_together_at_100_columns(self, tmp_path):
        from torchcourse import paths

        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        store.reach_break("02", 1)  # 02's long title put 「之」 and 「后」 on two lines
        async with run_app(app, store, size=(100, 30)) as pilot:
            await home(pilot, app)
            lines = app.screen.query_one("#continue").render_lines(app.screen.query_one("#continue").region.reset_offset)
            text = [ln.text.replace("\u00a0", " ").strip() for ln in lines]
            assert any(f"断点 1/{app.course.chapter('02').break_points} 之后" in ln for ln in text), text
            assert not any(ln.endswith("之") or ln.startswith("后") for ln in text), text

    @sync
    async def test_help_overlay_lets_nothing_of_home_show_beside_it(self, tmp_path):
        from torchcourse import paths

        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        store.reach_break("02", 1)
        async with run_app(app, store, size=(100, 30)) as pilot:
            await home(pilot, app)
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: "按键一览" in screen_text(app), what="help")
            box = app.screen.query_one("#help-box").region
            rows = screen_text(app).splitlines()
            from rich.cells import cell_len

            for y, row in enumerate(rows):
                x, outside = 0, []
                for ch in row:  # cells, not characters: a Chinese character is two cells wide
                    if not (box.y <= y < box.bottom and box.x <= x < box.right):
                        outside.append(ch)
                    x += cell_len(ch)
                assert not "".join(outside).strip(), (y, row)

    @sync
    async def test_a_wrapped_choice_continues_under_its_text(self, tmp_path):
        from torchcourse.tui.screens.quiz import HangingChoices
        from rich.text import Text
        from textual.app import App
        from textual.widgets import Static

        long = "切片只改说明书，不搬数据：" * 6
        choices = HangingChoices([(Text("❯ ( ) 1) "), Text(long)), (Text("  ( ) 2) "), Text("短"))])

        class One(App):
            def compose(self):
                yield Static(choices, id="c")

        app = One()
        async with app.run_test(size=(60, 12)) as pilot:
            await pilot.pause()
            rows = [ln.rstrip() for ln in screen_text(app).splitlines() if ln.strip()]
            assert rows[0].startswith("❯ ( ) 1) 切片") and len(rows) >= 3, rows
            indent = len("❯ ( ) 1) ")
            assert rows[1].startswith(" " * indent) and not rows[1][:indent].strip(), rows
            assert rows[-1].startswith("  ( ) 2) 短"), rows
        assert str(choices).splitlines()[1] == "  ( ) 2) 短"


class TestChapterEndNamesTheRoute:
    @sync
    async def test_the_end_panel_says_whose_next_chapter_it_offers(self, tmp_path):
        """Walk M7: at 09's end on route B, 「下一章 ▶ 05」 under the chapter's own 「下一章 👉 10」."""
        from torchcourse import paths

        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        store.set_route("B")
        async with run_app(app, store, size=SIZE) as pilot:
            await open_reader(pilot, "09")
            await wait_for(pilot, lambda: app.screen.loaded and bool(app.screen.query("#chapter-end")), what="09's end mounted")
            from torchcourse.tui.widgets.banner import ChapterEnd

            end = app.screen.query_one(ChapterEnd)
            assert end.next_words == "路线 B 的下一章" and end.next_title.startswith("05 ")
