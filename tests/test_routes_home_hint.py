"""Route A starts at 02, which leans on 01 (storage, views, the version counter): home's line for
route A tells a reader who skips 01 what of it to read, and that section exists."""

from __future__ import annotations

from torchcourse import paths
from torchcourse.course import load_course

from tui_support import build_app, screen_text, sync, wait_for


@sync
async def test_route_a_names_what_to_read_of_01(tmp_path):
    course = load_course(paths.shipped_content_dir())
    assert course.route("A").chapters[0] == "02"
    recap = course.chapter("01").anchor_line("recap")
    assert recap is not None and "⚡ 走神救援" in course.chapter("01").source.splitlines()[recap - 1]
    app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "只想知道它为什么这样报错" in screen_text(app), what="home's routes")
        assert "（没读 01 的先看它末尾的 ⚡ 走神救援） · 02 → 03 → 04" in screen_text(app)
    store.close()


class TestTheAppendixInARouteIsNamed:
    """Walk: route A's chain ended in 「→ A」, which reads like route A."""

    @sync
    async def test_route_as_chain_ends_in_附录_A(self, tmp_path):
        course = load_course(paths.shipped_content_dir())
        appendix = next(c for c in course.chapters if c.kind == "appendix")
        assert course.route("A").chapters[-1] == appendix.id
        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: "只想知道它为什么这样报错" in screen_text(app), what="home's routes")
            shown = screen_text(app)
            route_a = " ".join(shown[shown.index(course.route("A").name):shown.index(course.route("B").name)].split())
            assert f"02 → 03 → 04 → {appendix.label}" in route_a, route_a  # 附录 A, wrapped as one
        store.close()
