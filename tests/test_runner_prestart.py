"""Issue 37: the warm runner starts in the background when a chapter opens (never on home), and
the run line says so; the first run then finds it ready."""

from __future__ import annotations

import sys

import pytest

from torchcourse.tui.app import LazyRunner
from torchcourse.tui.widgets.snippet import SnippetHead, SnippetView

from tui_support import build_app, open_reader, screen_text, sync, wait_for


@pytest.mark.skipif(sys.platform == "win32", reason="the warm runner forks")
@sync
async def test_opening_a_chapter_starts_the_warm_runner_and_the_run_line_shows_it(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3", warm=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        runner = app.runner
        assert isinstance(runner, LazyRunner) and runner.state == "idle" and not runner.started  # home pays nothing
        screen = await open_reader(pilot, "01")
        await wait_for(pilot, lambda: runner.state == "ready", timeout=180, what="the warm runner started")
        assert runner.get()._zygote is not None and runner.get()._zygote.alive()
        await wait_for(pilot, lambda: "运行环境已就绪" in screen_text(app), what="the run line says it is ready")
        view = next(v for v in screen.query(SnippetView) if v.snippet.id == "hello")
        view.focus()
        await pilot.press("x")
        await wait_for(pilot, lambda: view.state == "done", what="the first run")
        assert view.result.status == "match" and view.result.mode == "warm"
    SnippetHead.runner_note = ""
    store.close()


@pytest.mark.skipif(sys.platform == "win32", reason="the warm runner forks")
@sync
async def test_opening_a_chapter_starts_the_runner_before_its_screen_is_built(tmp_path):
    """The warm process starts as the chapter is opened, not once its screen has mounted (that
    was up to 0.5 s later on a first open: the reader's modules imported and composed first)."""
    app, store = build_app(tmp_path / "p.sqlite3", warm=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        runner = app.runner
        assert runner.state == "idle"
        app.open_chapter("01")
        assert runner.state != "idle"  # asked already, before the reader screen mounted
        await wait_for(pilot, lambda: runner.state == "ready", timeout=180, what="the warm runner started")
        await wait_for(pilot, lambda: "运行环境已就绪" in screen_text(app), what="the open reader's run line says ready")
    SnippetHead.runner_note = ""
    store.close()
