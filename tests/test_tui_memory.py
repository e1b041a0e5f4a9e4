"""The reader's objects and the garbage collector: a full collection walks every object it
tracks, and with a chapter mounted that took 100-330 ms per collection in a long chapter (a
PgDn that landed on one stalled). While a chapter is open its widgets are kept out of the
collector's walk; once it is closed they are collected."""

from __future__ import annotations

import gc
import weakref

from torchcourse import paths
from torchcourse.tui.screens.home import HomeScreen

from tui_support import build_app, open_reader, sync, wait_for


def _tracked(obj) -> bool:
    """Whether a collection of some generation would walk ``obj`` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


class TestCollector:
    @sync
    async def test_an_open_chapter_is_not_walked_and_a_closed_one_is_freed(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            reader = await open_reader(pilot, "03")
            await wait_for(pilot, lambda: app.screen.rendered_ahead, what="the chapter rendered ahead")
            blocks = list(reader.query("SnippetView"))
            assert len(blocks) > 5
            assert not _tracked(reader) and not any(_tracked(b) for b in blocks)
            gone = [weakref.ref(reader), *(weakref.ref(b) for b in blocks)]
            del reader, blocks
            app.go_home()
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="the home screen")
            # the closed chapter's widgets hold cycles (parent <-> child): only a collection frees them
            await wait_for(pilot, lambda: all(ref() is None for ref in gone), timeout=30, what="the closed chapter freed")
        app.runner.close()
        store.close()


class TestCollectorAtStart:
    """``torchcourse`` pauses the collector from its start to the first frame: it must be on
    again once the home screen is up, and after any way out before that."""

    @sync
    async def test_the_first_frame_turns_the_collector_back_on(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        gc.disable()  # as app_entry.start_app leaves it
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="the home screen")
                await pilot.pause()
                assert gc.isenabled()
        finally:
            gc.enable()
            store.close()

    def test_a_start_that_fails_before_the_app_leaves_the_collector_on(self, tmp_path, capsys):
        from argparse import Namespace

        from torchcourse.app_entry import start_app

        assert gc.isenabled()
        code = start_app(Namespace(content=str(tmp_path / "no-such-course")))
        assert code != 0 and "torchcourse" in capsys.readouterr().err  # the clear message, no app
        assert gc.isenabled()
