"""NO_COLOR (walk L10): the app sends no colour at all, so the terminal's own background (light or
dark) shows through; Textual's default turned every colour grey and painted a near-black
background on every row. Pilot on the fixture course; what is checked is the rendered rows."""

from __future__ import annotations

from tui_support import build_app, open_reader, run_app, sync, wait_for, screen_text


def painted_backgrounds(app) -> set[str]:
    strips = app.screen._compositor.render_update(full=True).strips
    out = set()
    for row in strips:
        for strip in row if not hasattr(row, "text") else [row]:
            for seg in strip:
                style = seg.style
                if style is not None and style.bgcolor is not None and not style.bgcolor.is_default:
                    out.add(str(style.bgcolor))
    return out


class TestNoColorPaintsNoBackground:
    @sync
    async def test_home_and_reader_send_no_background_colour(self, tmp_path, monkeypatch):
        monkeypatch.setenv("NO_COLOR", "1")
        app, store = build_app(tmp_path / "p.sqlite3")
        async with run_app(app, store) as pilot:
            await wait_for(pilot, lambda: "(c)" in screen_text(app), what="home drawn")
            assert painted_backgrounds(app) == set()
            await open_reader(pilot, "01")
            assert painted_backgrounds(app) == set()

    @sync
    async def test_without_no_color_the_theme_paints_its_background(self, tmp_path, monkeypatch):
        monkeypatch.delenv("NO_COLOR", raising=False)
        app, store = build_app(tmp_path / "p.sqlite3")
        async with run_app(app, store) as pilot:
            await wait_for(pilot, lambda: "(c)" in screen_text(app), what="home drawn")
            assert painted_backgrounds(app)  # the check above can see a background


def reverse_rows(app) -> list[str]:
    """The text the rendered rows send in reverse video (scrollbars and the title bar included)."""
    rows = []
    for row in app.screen._compositor.render_update(full=True).strips:
        segments = [seg for strip in ([row] if hasattr(row, "text") else row) for seg in strip]
        text = "".join(seg.text for seg in segments if seg.style is not None and seg.style.reverse)
        if text.strip():
            rows.append(text)
    return rows


class TestNoColorMarksTheCursorInReverse:
    """Under NO_COLOR a list's cursor row has no colour to show it: it is sent in reverse video,
    and it moves with the cursor (walk L1: the route picker's cursor was invisible)."""

    @sync
    async def test_the_route_pickers_cursor_is_reverse_and_moves(self, tmp_path, monkeypatch):
        monkeypatch.setenv("NO_COLOR", "1")
        app, store = build_app(tmp_path / "p.sqlite3")
        async with run_app(app, store) as pilot:
            await wait_for(pilot, lambda: "(c)" in screen_text(app), what="home drawn")
            routes = app.screen.query_one("#routes")
            await pilot.press("r")
            await wait_for(pilot, lambda: routes.has_focus, what="the route list focused")
            first = routes.highlighted
            name = str(routes.get_option_at_index(first).prompt).split("\n")[0].strip()[:6]
            await wait_for(pilot, lambda: any(name in row for row in reverse_rows(app)),
                           what=f"the highlighted route {name!r} in reverse")
            await pilot.press("up")
            await wait_for(pilot, lambda: routes.highlighted == first - 1, what="the cursor moved up")
            above = str(routes.get_option_at_index(first - 1).prompt).split("\n")[0].strip()[:6]
            await wait_for(pilot, lambda: any(above in row for row in reverse_rows(app))
                           and not any(name in row for row in reverse_rows(app)),
                           what=f"{above!r} in reverse and {name!r} no longer")
            assert painted_backgrounds(app) == set()  # still no colour sent
