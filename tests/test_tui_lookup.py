"""The app's error lookup (e) on the shipped course: a near match is marked as such, and a text
no row matches lists the chapter lines that hold it (Enter opens the first one there)."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.widgets import TextArea

from tui_support import build_app, screen_text, sync, wait_for

CONTENT = Path(__file__).resolve().parents[1] / "content"
SIZE = (120, 40)


async def _paste(pilot, app, text: str) -> None:
    await pilot.press("e")
    await wait_for(pilot, lambda: app.screen.query("#lookup-input") and isinstance(app.focused, TextArea), what="the paste box")
    app.post_message(events.Paste(text))
    await wait_for(pilot, lambda: getattr(app.screen, "hits", None), what="lookup results")
    await pilot.pause()


@sync
async def test_a_text_without_a_row_lists_where_the_chapters_show_it(tmp_path):
    app, _store = build_app(tmp_path / "p.sqlite3", course_root=CONTENT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _paste(pilot, app, "RuntimeError: function MyFnBackward returned a gradient different than None at "
                                 "position 3, but the corresponding forward input was not a Variable")
        text = screen_text(app)
        assert "附录 A 里没有这条报错的条目；正文里有" in text and "→ 09 · backward 该还什么" in text
        assert "本教程没有讲到" not in text
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReaderScreen", what="the reader")
        assert app.screen.chapter.id == "09"


@sync
async def test_a_near_match_is_marked_not_an_answer(tmp_path):
    app, _store = build_app(tmp_path / "p.sqlite3", course_root=CONTENT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _paste(pilot, app, "retain_graph")
        text = screen_text(app)
        assert "相近，不确定：附录 A 里没有完全对得上的条目" in text and "相近，不确定 · 1." in text
