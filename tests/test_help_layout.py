"""Walk L2: in the help dialog a description's wrapped lines start under its first line, not at
the box's edge, and every row of the box ends at the same column (its right border)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from torchcourse.tui import keys
from torchcourse.tui.screens.dialogs import HelpScreen

from tui_support import build_app, screen_text, sync, wait_for


@pytest.mark.parametrize("width", [80, 100])
def test_help_descriptions_wrap_under_themselves_inside_the_border(tmp_path, width):
    @sync
    async def body():
        app, store = build_app(tmp_path / "p.sqlite3")
        try:
            async with app.run_test(size=(width, 200)) as pilot:  # tall: the whole table on screen
                await pilot.pause()
                await pilot.press("question_mark")
                await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
                await pilot.pause()
                rows = [r.rstrip() for r in screen_text(app).split("\n") if "│" in r]
                assert rows
                edges = {cell_len(r) for r in rows}
                assert len(edges) == 1, f"the right border is not one column: {sorted(edges)}"
                inner = [r.strip()[1:-1].rstrip() for r in rows]  # between the borders
                keyed = {f"  {key} " for _scope, key, _desc in keys.key_table()}
                for prev, row in zip(inner, inner[1:]):
                    if not row.strip() or row.lstrip().startswith("【") or any(row.startswith(" " + k) for k in keyed):
                        continue
                    if any(prev.startswith(" " + k) for k in keyed) or prev.startswith(" " * 17):
                        # a continuation of a key's description: indented to the description column
                        assert row.startswith(" " * 17), f"a wrapped line at the box's edge: {row!r}"
        finally:
            store.close()

    body()
