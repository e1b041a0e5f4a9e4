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
