"""Walk M7: paging a chapter with PgDn never skips a line. Every shipped chapter is paged from
its top to its end at 80 and 100 columns; every line of every snippet (its code and its expected
output) must be on some page.

The keys are delivered the way a terminal delivers them (through the driver, nobody waiting for
an animation to end), and each screen is read as soon as its key is handled. ``Pilot.press``
waits for every animation to complete before it returns, which hid the cause of M7: Textual
animates ``scroll_page_down`` (50 rows a second: a 28-row page took 0.56 s, more on a loaded
machine), so a screen read while the key's scroll was under way (the walker's ``tmux
capture-pane`` after a fixed sleep) stood between two pages, and the rows between it and the next
page were on no screen."""

from __future__ import annotations

import pytest
from textual import events

from torchcourse import paths
from torchcourse.course import load_course

from tui_support import build_app, screen_text, sync, wait_for

SHIPPED = paths.shipped_content_dir()
CHAPTERS = [c.id for c in load_course(SHIPPED).chapters if c.available]


def block_lines(chapter, width: int) -> list[str]:
    """The lines a reader must see on some page: code and expected output lines short enough not
    to wrap in the body at this width (a wrapped line's rows are split across the screen)."""
    lines = []
    for s in chapter.snippets:
        if getattr(s, "proof", False):  # folded under its claim until the learner opens it (p)
            continue
        texts = [s.code] + ([s.expected] if s.expected else [])
        for text in texts:
            for line in text.splitlines():
                line = line.rstrip()
                if len(line.strip()) >= 8 and len(line) <= width // 2 - 12 and line.isascii():
                    lines.append(line.strip())
    return lines


async def terminal_key(pilot, body, key: str) -> None:
    """``key`` as a terminal sends it: through the driver, then only until the reader handled it
    (its scroll target moved), never until an animation ends (``Pilot.press`` waits for that)."""
    before = body.scroll_target_y
    event = events.Key(key, " " if key == "space" else None)
    event.set_sender(pilot.app)
    pilot.app._driver.send_message(event)
    await wait_for(pilot, lambda: body.scroll_target_y != before, what=f"{key} handled")


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
                    body = screen.body
                    before, page = body.scroll_y, body.scrollable_content_region.height
                    await terminal_key(pilot, body, "pagedown" if turns % 4 else "space")
                    # the screen the key leaves is its page, not a frame of a scroll on its way there
                    assert body.scroll_y == body.scroll_target_y == min(before + page, body.max_scroll_y), (
                        f"{chapter_id}: the page key left the view at row {body.scroll_y} on its way from {before} "
                        f"to {body.scroll_target_y}")
                    turns += 1
                pages = "\n".join(seen)
                missing = [line for line in block_lines(screen.chapter, width) if line not in pages]
                assert not missing, f"{chapter_id} at {width}x{height}: {len(missing)} lines on no page, first {missing[:3]}"
        finally:
            store.close()

    body()
