"""Walk L2: a code line wider than its block is folded with a ``↪`` mark on each continuation
row, never soft-wrapped to column 0 (where Python reads it as a wrong indentation). Pilot on
the fixture course with a long line written in; what is checked is the painted screen."""

from __future__ import annotations

from tui_support import build_app, edited_course, open_reader, run_app, screen_text, sync, wait_for

LONG = 'print("盒子:", box, "一段很长的参数", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], sep=" | ")'


class TestLongCodeLinesAreFoldedWithAMark:
    @sync
    async def test_a_long_line_continues_on_a_row_marked_with_an_arrow(self, tmp_path):
        root = edited_course(tmp_path, 'print("盒子:", box)', LONG)
        app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
        async with run_app(app, store, size=(60, 30)) as pilot:
            await open_reader(pilot, "01")
            await wait_for(pilot, lambda: 'print("盒子:"' in screen_text(app), what="the snippet on screen")
            rows = screen_text(app).splitlines()
            at = next(i for i, r in enumerate(rows) if 'print("盒子:"' in r)
            following = rows[at + 1]
            assert "↪" in following, rows[at:at + 3]
            # every piece of the line is on screen, in order, nothing lost at the fold
            joined = "".join(r.split("↪ ", 1)[-1].strip() if "↪" in r else r.strip() for r in rows[at:at + 4])
            assert "sep=" in joined and "16]" in joined, rows[at:at + 4]

    @sync
    async def test_a_line_that_fits_is_left_alone(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        async with run_app(app, store, size=(100, 30)) as pilot:
            await open_reader(pilot, "01")
            assert "↪" not in screen_text(app)
