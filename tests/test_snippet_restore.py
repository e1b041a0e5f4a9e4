"""``u`` + ``y``: the book's code again. Walk L3: the edited run's panel ("书上的预期输出 /
改动后的实际输出") and its verdict go too, the block is the book's as before any run; and ``e``
right after opens a fresh editor on the book's code, however soon it comes."""

from __future__ import annotations

import asyncio

import pytest
from textual import events

from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import build_app, open_reader, screen_text, sync, wait_for, widget_text

CHANGED = "print('changed')\n"


class TestRestoringClearsTheEditedRun:
    @sync
    async def test_restoring_the_book_code_clears_the_edited_run(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        store.save_edit("01", "hello", CHANGED)
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


def editors(view: SnippetView) -> list:
    from torchcourse.tui.widgets.editor import SnippetEditor

    return list(view.query(SnippetEditor))


def editing_the_book_code(screen, view: SnippetView) -> bool:
    """The cursor in an editor of ``view`` that holds the book's code."""
    area = screen.focused
    return area is not None and area.parent in editors(view) and area.text == view.snippet.code


async def open_edited_snippet_in_its_editor(pilot, store):
    """The reader on chapter 01 with #hello edited, its editor open, then the block selected
    with the mouse (keys typed in the editor go into the code: u restores from the block)."""
    store.save_edit("01", "hello", CHANGED)
    screen = await open_reader(pilot, "01")
    view = next(v for v in screen.query(SnippetView) if v.snippet.id == "hello")
    view.focus()
    await wait_for(pilot, lambda: screen.focused is view, what="#hello selected")
    await pilot.press("e")
    await wait_for(pilot, lambda: editors(view) and editors(view)[0].query(".editor-area")
                   and screen.focused is editors(view)[0].area, what="the editor on the learner's code")
    assert editors(view)[0].area.text == CHANGED
    await pilot.click(view.query_one(".expected"))  # the learner clicks the block, outside the editor
    await wait_for(pilot, lambda: screen.focused is view, what="the block selected by the click")
    return screen, view


async def then_a_fresh_editor_on_the_book_code(pilot, store, screen, view) -> None:
    await wait_for(pilot, lambda: len(editors(view)) == 1 and editing_the_book_code(screen, view),
                   what="one editor, on the book's code, with the cursor in it", fail=lambda: not pilot.app.is_running)
    await wait_for(pilot, pilot.app.writer.idle, what="the queued writes")
    assert view.edited_code is None and not view.has_class("-edited") and store.edit("01", "hello") is None
    assert not view.query_one(".code").display  # the editor stands in for the code block, as after any e
    await pilot.press("escape")  # leaving it unchanged keeps the book's code: nothing edited
    await wait_for(pilot, lambda: not editors(view) and screen.focused is view, what="the editor closed")
    await wait_for(pilot, pilot.app.writer.idle, what="the queued writes")
    assert view.edited_code is None and store.edit("01", "hello") is None and view.query_one(".code").display


class TestEditRightAfterRestoreOpensAFreshEditor:
    """Red team, in the served app: ``u``, ``y``, then ``e`` crashed the app (``NoMatches:
    '.editor-area'``). Textual removes the restored editor in steps (its children, then itself)
    and ``e`` found it still in the block, already empty."""

    @pytest.mark.parametrize("timing", ["one read", "back to back", "after the removal"])
    @sync
    async def test_e_opens_the_book_code_whenever_it_comes(self, tmp_path, monkeypatch, timing):
        from torchcourse.tui.widgets.editor import SnippetEditor

        # the editor's unmount is the removal's last step: its children are gone, it is still in
        # the block. Taking 0.2 s here (10 ms did it too) stands for the red team's loaded server,
        # where an e read with u and y reached the reader at that moment; here it did not
        async def slow_last_step(editor) -> None:
            await asyncio.sleep(0.2)

        monkeypatch.setattr(SnippetEditor, "on_unmount", slow_last_step, raising=False)
        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen, view = await open_edited_snippet_in_its_editor(pilot, store)
            if timing == "one read":  # as a terminal read or the browser's stdin message delivers them
                for key in "uye":
                    app.post_message(events.Key(key, key))
            elif timing == "back to back":  # the pilot waits for the app to settle after each key
                await pilot.press("u", "y", "e")
            else:
                await pilot.press("u", "y")
                await wait_for(pilot, lambda: not editors(view) and view.edited_code is None, what="restored, editor gone")
                await pilot.press("e")
            await then_a_fresh_editor_on_the_book_code(pilot, store, screen, view)
        store.close()
