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


class TestLongOutputLinesAreFoldedWithAMark:
    @sync
    async def test_a_long_expected_output_line_continues_on_a_marked_row(self, tmp_path):
        long_out = "盒子: " + ", ".join(str(i) for i in range(40))
        root = edited_course(tmp_path, "盒子: [1, 2, 3]\n```", long_out + "\n```")
        app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
        async with run_app(app, store, size=(60, 30)) as pilot:
            await open_reader(pilot, "01")
            rows = screen_text(app).splitlines()
            at = next(i for i, r in enumerate(rows) if "盒子: 0, 1" in r)
            assert "↪" in rows[at + 1], rows[at:at + 3]

    @sync
    async def test_an_edited_runs_added_line_keeps_a_mark_on_its_continuation(self, tmp_path):
        """The + lines of an edited run's panel: a wrapped one used to continue at column 0."""
        from textual.app import App

        from torchcourse.tui.widgets.codeblock import CodeBlock
        from torchcourse.tui.widgets.editor import marked_pair

        _left, right = marked_pair("a\n", "a\n" + "b" * 30 + " " + "c" * 30 + "\n")

        class One(App):
            CSS = "CodeBlock { width: 40; }"

            def compose(self):
                yield CodeBlock(right)

        app = One()
        async with app.run_test(size=(60, 12)) as pilot:
            await pilot.pause()
            rows = [r for r in screen_text(app).splitlines() if r.strip()]
            at = next(i for i, r in enumerate(rows) if r.lstrip().startswith("+ b"))
            assert rows[at + 1].lstrip().startswith("↪"), rows
