"""The preview loop (an author edits the chapter the reader shows): what the reader says when
the file changes or goes away."""

from __future__ import annotations

import shutil

from tui_support import FIXTURE, build_app, open_reader, screen_text, sync, wait_for


class TestADeletedChapterFileIsSaid:
    """Row 73 / L10: the chapter's file deleted while the reader shows it."""

    @sync
    async def test_the_reader_says_it_is_gone_and_shift_r_does_not_claim_it_is_unchanged(self, tmp_path):
        root = tmp_path / "course"
        shutil.copytree(FIXTURE, root)
        app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.pause()
            await open_reader(pilot, "01")
            (root / "01-box.md").rename(tmp_path / "moved-away.md")
            await wait_for(pilot, lambda: "这一章的文件 01-box.md 不见了" in screen_text(app), what="the notice")
            await pilot.press("R")
            await pilot.pause()
            assert "没有改过，不用重新载入" not in screen_text(app)
        store.close()
