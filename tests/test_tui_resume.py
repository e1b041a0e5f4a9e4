"""Issue 37 H1 / M6 / L9 / L19: the place saved last is where 继续 goes — also in a finished
chapter —, every chapter reopens at its own saved line, 继续 follows the current route, and the
home says which chapter and where. Pilot on the fixture course with a real store."""

from __future__ import annotations

from tui_support import build_app, home, open_loaded_reader, open_reader, run_app, screen_text, started, sync, wait_for

SIZE = (80, 16)  # short: the fixture's chapters scroll


def finish(store, chapter_id: str, breaks: int) -> None:
    for k in range(1, breaks + 1):
        store.reach_break(chapter_id, k)
    store.set_completed(chapter_id)


def line_at_top(screen):
    """(source line, rows of it above the view) of the block at the top of the view."""
    place = screen.current_place()
    return None if place is None else place[1:]


async def scroll_down(pilot, screen, rows: int):
    screen.body.scroll_to(y=screen.body.scroll_y + rows, animate=False, immediate=True)
    await pilot.pause()
    await wait_for(pilot, lambda: screen.current_place() is not None and screen.current_place()[1] is not None, what="a line at the top")
    return line_at_top(screen)


class TestSavedPlace:
    @sync
    async def test_s_then_c_in_a_finished_chapter_returns_to_the_saved_line(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3")
        finish(store, "01", app.course.chapter("01").break_points)
        async with run_app(app, store, size=SIZE) as pilot:
            screen = await open_reader(pilot, "01")
            saved = await scroll_down(pilot, screen, 6)
            await pilot.press("s")
            await home(pilot, app)
            assert store.last_position()[1] < app.course.chapter("01").break_points  # saved before the chapter's end
            # home says which chapter and where, and 继续 goes there, not to the route's next chapter
            await wait_for(pilot, lambda: any("继续 (c)：01 盒子：一块内存 · " in row and " · §" in row for row in screen_text(app).splitlines()),
                           what="继续 names 01 and the section")
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app, "01")
            await wait_for(pilot, lambda: line_at_top(screen) == saved, what=f"back at {saved}")

    @sync
    async def test_every_chapter_reopens_at_its_own_saved_line(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            in_01 = await scroll_down(pilot, screen, 5)
            app.open_chapter("02")  # as the palette or ] would: leaves 01 with its place saved
            screen = await open_loaded_reader(pilot, app, "02")
            in_02 = await scroll_down(pilot, screen, 3)
            await pilot.press("escape")
            await home(pilot, app)
            screen = await open_reader(pilot, "01")
            await wait_for(pilot, lambda: line_at_top(screen) == in_01, what=f"01 at {in_01}")
            screen = await open_reader(pilot, "02")
            await wait_for(pilot, lambda: line_at_top(screen) == in_02, what=f"02 at {in_02}")

    @sync
    async def test_a_chapter_read_in_is_not_未开始(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            await scroll_down(pilot, screen, 2)
            assert store.chapter_progress("01") is None or store.chapter_progress("01").furthest_break == 0
            await pilot.press("s")
            await home(pilot, app)
            await pilot.resize_terminal(100, 40)  # the chapter map in view
            await wait_for(pilot, lambda: "章节地图" in screen_text(app), what="the chapter map")
            rows = [r for r in screen_text(app).splitlines() if "01 盒子" in r and "⏱" in r]
            assert rows and "未开始" not in rows[0] and "读到一半" in rows[0], rows


class TestRoute:
    @sync
    async def test_继续_follows_a_route_switch_and_a_place_saved_on_the_new_route(self, tmp_path):
        async with started(tmp_path / "p.sqlite3", size=SIZE) as (app, store, pilot):
            await pilot.press("c")  # route D starts with 01
            screen = await open_loaded_reader(pilot, app, "01")
            await scroll_down(pilot, screen, 3)
            await pilot.press("escape")
            await home(pilot, app)
            assert "继续 (c)：01" in screen_text(app)
            app.set_route("A")  # 02 → 03: chapter 01 is not on it
            await home(pilot, app)
            await wait_for(pilot, lambda: "(c)：02 图：用完就扔" in screen_text(app), what="继续 on route A")
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "02")
            # on route A, a look back into 01 (a lookup hit, the palette) is the place saved last
            screen = await open_reader(pilot, "01")
            place = await scroll_down(pilot, screen, 2)
            await pilot.press("s")
            await home(pilot, app)
            await wait_for(pilot, lambda: "继续 (c)：01" in screen_text(app), what="继续 back to 01")
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app, "01")
            await wait_for(pilot, lambda: line_at_top(screen) == place, what=f"01 at {place}")


@sync
async def test_a_broken_course_never_celebrates(tmp_path):
    root = tmp_path / "badc"
    root.mkdir()
    (root / "course.toml").write_text('title = "坏掉的课程\n', encoding="utf-8")
    async with started(tmp_path / "p.sqlite3", course_root=root, size=(100, 30)) as (app, store, pilot):
        text = screen_text(app)
        assert "🎉" not in text and "全部读完" not in text
        assert "torchcourse check" in text


class TestNavigation:
    @sync
    async def test_bracket_follows_the_current_route_from_a_chapter_off_it(self, tmp_path):
        """Walk M6: on route B (05 → 06 → 07), ] in 00 goes onto the route (05), not to 01."""
        from torchcourse import paths

        app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
        store.set_route("B")
        async with run_app(app, store, size=SIZE) as pilot:
            await open_reader(pilot, "00")
            await pilot.press("right_square_bracket")
            await wait_for(pilot, lambda: getattr(app.screen, "chapter", None) is not None and app.screen.chapter.id != "00", what="] opened a chapter")
            assert app.screen.chapter.id == "05"

    @sync
    async def test_esc_after_a_link_goes_back_to_the_chapter_it_was_followed_from(self, tmp_path):
        """Walk L16: a back stack, not home."""
        async with started(tmp_path / "p.sqlite3", size=(100, 40)) as (app, store, pilot):
            screen = await open_reader(pilot, "01")
            screen.action_follow_link("02#divide")
            await open_loaded_reader(pilot, app, "02")
            await wait_for(pilot, lambda: "图：用完就扔" in screen_text(app), what="02 on screen")
            await pilot.press("escape")
            await open_loaded_reader(pilot, app, "01")
            await wait_for(pilot, lambda: "盒子：一块内存" in screen_text(app), what="01 on screen again")
            await pilot.press("escape")  # nothing left to go back to: home
            await home(pilot, app)
            assert "开始 (c)：01" in screen_text(app)  # 01 was opened, never read in: still 开始

    @sync
    async def test_the_key_bar_offers_no_quiz_where_there_is_none_and_no_next_chapter_at_the_route_end(self, tmp_path):
        """Walk L7: the appendix's footer offered ] and the quiz, and each only said no."""
        app, store = build_app(tmp_path / "p.sqlite3")
        store.set_route("A")  # 02 → 03, and 03 is not written: 02 is the route's last readable chapter
        async with run_app(app, store, size=(120, 30)) as pilot:
            await open_reader(pilot, "02")
            bar = screen_text(app).splitlines()[-1]
            assert "下一章" not in bar and "m 测验" in bar, bar
            await open_reader(pilot, "01")  # off route A: ] leads onto it
            bar = screen_text(app).splitlines()[-1]
            assert "] 下一章" in bar, bar


@sync
async def test_a_search_hit_in_a_chapters_opening_names_its_title_once(tmp_path):
    """Walk L15: `01 张量：… · 01 · 张量：…`."""
    from torchcourse import paths

    async with started(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir(), size=(100, 30)) as (app, store, pilot):
        await pilot.press("slash")
        await pilot.press(*"说明书")
        await wait_for(pilot, lambda: getattr(app.screen, "hits", None), what="search results")
        await pilot.pause()
        title = app.course.chapter("01").title
        rows = [r for r in screen_text(app).splitlines() if title in r]
        assert rows and all(r.count(title) == 1 for r in rows), rows


class TestRouteSwitchKeepsThePlace:
    """A switch to another route that also holds the chapter being read keeps 继续 in that
    chapter: the place is the learner's, the route only decides what comes after it."""

    @sync
    async def test_继续_stays_in_the_chapter_when_the_new_route_also_holds_it(self, tmp_path):
        import shutil

        from tui_support import FIXTURE

        root = tmp_path / "course"
        shutil.copytree(FIXTURE, root)
        toml = root / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8") + '\n[[routes]]\nid = "B"\nname = "两章"\naudience = "测试"\nchapters = ["01", "02"]\n',
                        encoding="utf-8")
        app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
        store.set_route("D")
        async with run_app(app, store, size=SIZE) as pilot:
            screen = await open_reader(pilot, "02")  # 01, first on both routes, not read yet
            place = await scroll_down(pilot, screen, 3)
            await pilot.press("s")
            await home(pilot, app)
            app.set_route("B")  # 01 → 02: 02 is on it, after 01
            await home(pilot, app)
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app, "02")
            assert app.screen.chapter.id == "02"
            await wait_for(pilot, lambda: line_at_top(screen) == place, what=f"02 at {place}")
class TestHomeRereadsThePlaceWhenTheWindowGetsFocusBack:
    @sync
    async def test_another_tab_moved_the_place_and_继续_follows_on_focus(self, tmp_path):
        from textual import events

        from torchcourse.progress import open_store

        db = tmp_path / "p.sqlite3"
        async with started(db, size=SIZE) as (app, store, pilot):
            await home(pilot, app)
            assert "继续 (c)：02" not in screen_text(app)
            other, _ = open_store(db)  # a second browser tab on the same progress reads on in 02
            try:
                other.set_position("02", 1)
            finally:
                other.close()
            app.post_message(events.AppFocus())  # the learner comes back to this tab
            await wait_for(pilot, lambda: "继续 (c)：02" in screen_text(app), what="继续 follows the other tab")


class TestOpeningIsNotReading:
    @sync
    async def test_a_chapter_opened_with_c_and_left_at_its_top_stays_未开始(self, tmp_path):
        """Opening a chapter and leaving without scrolling is not reading: no place, 未开始."""
        async with started(tmp_path / "p.sqlite3", size=(100, 40)) as (app, store, pilot):
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "01")
            await pilot.pause()
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, app.writer.idle, what="writes landed")
            assert "01" not in store.placed_chapters()
            await wait_for(pilot, lambda: "章节地图" in screen_text(app), what="the chapter map")
            rows = [r for r in screen_text(app).splitlines() if "01 盒子" in r and "⏱" in r]
            assert rows and "未开始" in rows[0] and "读到一半" not in rows[0], rows
