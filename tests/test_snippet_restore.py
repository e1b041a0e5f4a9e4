"""Walk L3: after ``u`` + ``y`` restores the book's code, the edited run's panel ("书上的预期输出 /
改动后的实际输出") and its verdict go too: the block is the book's, as before any run."""

from __future__ import annotations

from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import build_app, open_reader, screen_text, sync, wait_for, widget_text


@sync
async def test_restoring_the_book_code_clears_the_edited_run(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    store.save_edit("01", "hello", "print('changed')\n")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = await open_reader(pilot, "01")
        view = next(v for v in screen.query(SnippetView) if v.snippet.id == "hello")
        view.focus()
        await pilot.press("x")
        await wait_for(pilot, lambda: view.state == "done", what="the edited run")
        await wait_for(pilot, lambda: "代码已改动" in screen_text(app), what="the edited verdict on screen")
        await pilot.press("u")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmRestore", what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.screen is screen and view.edited_code is None, what="restored")
        await wait_for(pilot, lambda: "代码已改动" not in screen_text(app), what="the edited verdict gone")
        assert not view.query(".verdict") and not view.query(".outputs") and view.state == "idle"
        assert "预期输出" in widget_text(view.query_one(".expected")) and "changed" not in screen_text(app)
        await pilot.press("x")  # a run now shows the book's result as usual
        await wait_for(pilot, lambda: view.state == "done" and view.result is not None, what="the book's run")
        assert view.result.status == "match" and "一致" in widget_text(view.query_one(".verdict"))
    store.close()
