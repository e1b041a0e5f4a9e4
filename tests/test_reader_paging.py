"""Walk M7: paging a chapter with PgDn never skips a line. Every shipped chapter is paged from
its top to its end at 80 and 100 columns; every line of every snippet (its code and its expected
output) must be on some page."""

from __future__ import annotations

import pytest

from torchcourse import paths
from torchcourse.course import load_course

from test_tui_support import build_app, screen_text, sync, wait_for

SHIPPED = paths.shipped_content_dir()
CHAPTERS = [c.id for c in load_course(SHIPPED).chapters if c.available]


def block_lines(chapter, width: int) -> list[str]:
    """The lines a reader must see on some page: code and expected output lines short enough not
    to wrap in the body at this width (a wrapped line's rows are split across the screen)."""
    lines = []
    for s in chapter.snippets:
        texts = [s.code] + ([s.expected] if s.expected else [])
        for text in texts:
            for line in text.splitlines():
                line = line.rstrip()
                if len(line.strip()) >= 8 and len(line) <= width // 2 - 12 and line.isascii():
                    lines.append(line.strip())
    return lines


@pytest.mark.parametrize("width, height", [(80, 24), (100, 30)])
@pytest.mark.parametrize("chapter_id", CHAPTERS)
def test_paging_shows_every_line(tmp_path, chapter_id, width, height):
    @sync
    async def body():
        app, store = build_app(tmp_path / "p.sqlite3", course_root=SHIPPED)
        try:
            async with app.run_test(size=(width, height)) as pilot:
                await pilot.pause()
                # paged from the first screen on, as a learner does: parts still mounting below
                app.open_chapter(chapter_id)
                await wait_for(pilot, lambda: getattr(app.screen, "chapter", None) is not None and app.screen.chapter.id == chapter_id
                               and app.screen.first_paint_at is not None, what=f"{chapter_id} on screen")
                screen = app.screen
                # no wait for the render-ahead: a learner pages while it runs (and while parts mount)
                seen = []
                turns = 0
                while True:
                    await pilot.pause()
                    seen.append(screen_text(app))
                    if screen.body.scroll_y >= screen.body.max_scroll_y:
                        if screen.loaded:
                            break
                        await wait_for(pilot, lambda: screen.loaded or screen.body.scroll_y < screen.body.max_scroll_y,
                                       what="more of the chapter mounted")
                        continue
                    assert turns < 600, "paging never reached the end"
                    before = screen.body.scroll_y
                    await pilot.press("pagedown")
                    await wait_for(pilot, lambda: screen.body.scroll_y != before, what="paged")
                    turns += 1
                pages = "\n".join(seen)
                missing = [line for line in block_lines(screen.chapter, width) if line not in pages]
                assert not missing, f"{chapter_id} at {width}x{height}: {len(missing)} lines on no page, first {missing[:3]}"
        finally:
            store.close()

    body()
