"""Walk L1: keys a less / vim user presses scroll the reader and never open a dialog."""

from __future__ import annotations

from textual.screen import ModalScreen

from torchcourse.tui import keys
from torchcourse.tui.reader import ReaderScreen

from tui_support import build_app, open_reader, sync, wait_for


@sync
async def test_space_b_j_k_scroll_like_less_and_m_opens_the_quiz(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with app.run_test(size=(80, 16)) as pilot:
        await pilot.pause()
        screen = await open_reader(pilot, "01")
        body = screen.body
        page = body.scrollable_content_region.height
        await pilot.press("space")
        await wait_for(pilot, lambda: body.scroll_y == page, what="space: one page down")
        await pilot.press("j", "j")
        await wait_for(pilot, lambda: body.scroll_y == page + 2, what="j j: two lines down")
        await pilot.press("k")
        await wait_for(pilot, lambda: body.scroll_y == page + 1, what="k: one line up")
        await pilot.press("b")
        await wait_for(pilot, lambda: body.scroll_y == 1, what="b: one page up")
        # less's and vim's scroll keys (e, less's line-down, is the in-place editor: not a dialog)
        for key in ("space", "b", "j", "k", "d", "u", "g", "G", "f", "y", "w", "z", "h", "pagedown", "pageup"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, ReaderScreen) and not isinstance(app.screen, ModalScreen), (key, app.screen)
        await pilot.press("m")
        await wait_for(pilot, lambda: not isinstance(app.screen, ReaderScreen), what="m: the quiz")
    store.close()


def test_the_quiz_key_is_m_everywhere_and_k_scrolls():
    quiz = {k.scope: k.key for k in keys.KEYS if k.action in ("quiz", "chapter_quiz")}
    assert quiz == {"首页": "m", "阅读": "m"}
    reader = {k.key: k.action for k in keys.KEYS if k.scope == "阅读"}
    assert reader["k"] == "line_up" and reader["j"] == "line_down" and reader["space"] == "page_down" and reader["b"] == "page_up"


class TestEWithNoSnippetPointsToTheLookup:
    @sync
    async def test_e_with_no_code_on_screen_names_the_error_lookup(self, tmp_path):
        """Walk L13: e edits code in the reader; a learner who pressed it to paste an error is
        told where the lookup is."""
        from tui_support import edited_course, run_app

        prose = "\n\n".join(f"第 {i} 段：这里只有文字。" for i in range(1, 40))
        root = edited_course(tmp_path, "一个盒子里装着一排数。我们先把它打印出来看看。", prose)
        app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
        async with run_app(app, store, size=(100, 20), notifications=True) as pilot:
            await open_reader(pilot, "01")
            await pilot.press("e")
            await wait_for(pilot, lambda: any("代码块" in n.message for n in app._notifications), what="the notice")
            [note] = [n.message for n in app._notifications if "代码块" in n.message]
            assert "Ctrl+P" in note and "报错反查" in note, note
