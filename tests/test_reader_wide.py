"""Walk L14: at 200 columns the chapter reads in a centred column about 100 wide (prose, code
and outputs alike), not in 195-column lines; at 100 columns nothing moves."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from torchcourse import paths

from tui_support import build_app, open_reader, screen_text, sync

SHIPPED = paths.shipped_content_dir()


def body_rows(app) -> list[str]:
    return screen_text(app).split("\n")[1:-1]  # the title and the key bar are outside the column


@pytest.mark.parametrize("width", [200, 100])
def test_the_chapter_is_a_centred_column_of_about_100(tmp_path, width):
    @sync
    async def body():
        app, store = build_app(tmp_path / "p.sqlite3", course_root=SHIPPED)
        try:
            async with app.run_test(size=(width, 40)) as pilot:
                await pilot.pause()
                await open_reader(pilot, "02")
                for _ in range(3):  # prose, callouts, a snippet and its output are on these pages
                    await pilot.press("pagedown")
                    rows = [r[:-3] for r in body_rows(app)]  # the scrollbar's columns cut off
                    text = [r for r in rows if r.strip()]
                    left = min(len(r) - len(r.lstrip(" ")) for r in text)
                    right = max(cell_len(r.rstrip()) for r in text)
                    assert right - left <= 100, (left, right)
                    if width == 200:  # centred: as much room on either side
                        assert 45 <= left <= 52 and right <= 152, (left, right)
                        assert any(cell_len(r.rstrip()) - left >= 90 for r in text)  # prose fills its column
                    else:
                        assert left <= 3
        finally:
            store.close()

    body()
