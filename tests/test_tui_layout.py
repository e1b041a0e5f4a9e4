"""Terminal sizes: below the minimum a notice covers the screen (state kept underneath);
between the minimum and a wide terminal every screen keeps what matters readable."""

from __future__ import annotations

from textual.widgets import Input

from torchcourse.tui.screens.home import HomeScreen
from torchcourse.tui.screens.reader import ReaderScreen
from torchcourse.tui.widgets.toosmall import MIN_HEIGHT, MIN_WIDTH

from test_tui_support import build_app, screen_text, sync, wait_for

NOTICE = "终端窗口太小"


async def resize(pilot, width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    await wait_for(pilot, lambda: pilot.app.screen.size == (width, height), what=f"the screen at {width}x{height}")
    await pilot.pause()


class TestTooSmall:
    @sync
    async def test_reader_is_covered_then_back_at_the_same_place(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            app.open_chapter("01")
            await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.loaded, what="the reader")
            reader = app.screen
            reader.body.scroll_to(y=3, animate=False, immediate=True)
            await pilot.pause()
            before = screen_text(app)
            assert "一块内存" in before and NOTICE not in before
            reached = store.chapter_progress("01").furthest_break

            await resize(pilot, 40, 12)
            await wait_for(pilot, lambda: NOTICE in screen_text(app), what="the notice")
            text = screen_text(app)
            assert "当前 40×12" in text and f"至少 {MIN_WIDTH}×{MIN_HEIGHT}" in text and "进度已保存" in text
            assert "一块内存" not in text  # nothing squeezed shows through
            await pilot.press("n", "s", "escape")  # keys do nothing behind the notice
            await pilot.pause()
            assert app.screen is reader
            assert store.chapter_progress("01").furthest_break == reached

            await resize(pilot, 59, 30)  # one column short is still too small; the size is current
            await wait_for(pilot, lambda: "当前 59×30" in screen_text(app), what="the new size")

            await resize(pilot, 80, 24)
            await wait_for(pilot, lambda: NOTICE not in screen_text(app), what="the notice gone")
            assert app.screen is reader and reader.body.scroll_y == 3
            assert screen_text(app) == before
            await pilot.press("n")  # keys work again: on to the next break point
            await wait_for(pilot, lambda: reader.body.scroll_y > 3, what="scrolled to the break point")
        store.close()

    @sync
    async def test_starting_small_then_growing_shows_home(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(40, 12)) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert "当前 40×12" in text and "测试课程" not in text
            await resize(pilot, MIN_WIDTH, MIN_HEIGHT)  # exactly the minimum is usable
            await wait_for(pilot, lambda: NOTICE not in screen_text(app), what="the notice gone")
            text = screen_text(app)
            assert isinstance(app.screen, HomeScreen)
            assert "测试课程：拆开一个小盒子" in text and "▶ 开始 (c)：01 盒子：一块内存" in text
        store.close()

    @sync
    async def test_a_dialog_keeps_its_input(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("slash", *"内存")
            await wait_for(pilot, lambda: getattr(app.screen, "hits", None), what="search results")
            search = app.screen
            await resize(pilot, 50, 20)
            await wait_for(pilot, lambda: "当前 50×20" in screen_text(app), what="the notice")
            await pilot.press("x")  # typing does not reach the input behind the notice
            await resize(pilot, 80, 24)
            await wait_for(pilot, lambda: NOTICE not in screen_text(app), what="the notice gone")
            assert app.screen is search
            assert search.query_one(Input).value == "内存"
            assert "找到" in screen_text(app)
        store.close()

    @sync
    async def test_q_quits_while_too_small(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("slash")  # on a dialog, q would only close it; too small, q quits
            await resize(pilot, 30, 8)
            await pilot.press("q")
        assert app.return_code == 0
        store.close()

    @sync
    async def test_ctrl_c_quits_while_too_small(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(30, 8)) as pilot:
            await pilot.pause()
            assert "当前 30×8" in screen_text(app)
            await pilot.press("ctrl+c")
        assert app.return_code == 0
        store.close()
