"""Walk L8: a page counts as read once it stayed on screen as long as a reader at the course's
pace (170 字/分 × PACE_FACTOR = 425) needs for the text it shows, code and output at half weight; a quick look reads
next to nothing, and home says what its minutes mean. Pilot on the fixture course, a real store,
a fake clock for the reading time."""

from __future__ import annotations

from torchcourse.course.chapter import reading_chars
from torchcourse.progress.reading import part_seconds
from torchcourse.tui.readcredit import ReadingTracker
from torchcourse.tui.screens.home import HomeScreen

from tui_support import build_app, open_reader, screen_text, sync, wait_for, widget_text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def seconds_to_read(screen) -> float:
    """What the view shows, in seconds at the course's pace (the rule as the help states it:
    every non-space character, those of code and its output at half weight)."""
    top, bottom = int(screen.body.scroll_y), int(screen.body.scroll_y) + screen.body.scrollable_content_region.height
    chars = 0.0
    for _part, block, rows in screen.blocks_in(top, bottom):
        seg = getattr(block, "seg", None)
        if seg is None:
            continue
        if seg.kind == "snippet":
            chars += rows * 0.5 * (reading_chars(seg.text) + reading_chars(seg.snippet.expected or ""))
        else:
            chars += rows * reading_chars(seg.text)
    from torchcourse.progress.reading import reading_pace

    return chars * 60 / reading_pace(screen.app.course.chars_per_minute)


async def written(pilot, app) -> None:
    await wait_for(pilot, app.writer.idle, what="every queued write landed")  # then a missing row is missing


@sync
async def test_a_page_held_as_long_as_its_text_needs_is_read_a_quick_look_is_not(tmp_path, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(ReadingTracker, "clock", clock)
    app, store = build_app(tmp_path / "p.sqlite3")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = await open_reader(pilot, "01")
        # part 1 fits the first view at 100×30: the page read is the part read
        assert screen.part_view(0).outer_size.height <= screen.body.scrollable_content_region.height
        need = seconds_to_read(screen)
        assert need > 20  # (the fixture's first page: a reader needs well over the walker's 1.5 s)
        screen.reading.account()
        clock.now += 1.5  # the walker's pace: a page a second and a half
        screen.reading.account()
        await written(pilot, app)
        assert store.parts_read() == {}
        clock.now += 0.85 * need - 1.5  # 85% of the time it needs: 85% of it read, not yet 90%
        screen.reading.account()
        await written(pilot, app)
        assert store.parts_read() == {}
        clock.now += 0.1 * need
        screen.reading.account()
        await wait_for(pilot, lambda: store.parts_read() == {"01": {0}}, what="part 1 read at the course's pace")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
        await written(pilot, app)
        minutes = round(part_seconds(app.course.chapter("01"), 0) / 60)
        shown = widget_text(app.screen.query_one("#overall"))  # (it wraps at 100 columns in this fixture)
        assert f"已读约 {minutes}/46 分钟（⏱ 按 170 字/分估；已读按 425 字/分：停够的页才算；未写的章按目标计）" in shown, shown
        assert f"已读约 {minutes}/46 分钟" in screen_text(app)
    store.close()


@sync
async def test_the_time_a_part_needs_adds_up_over_pages_and_visits(tmp_path, monkeypatch):
    """Part 2 is longer than a page: each page held as long as it needs reads its share, a page
    left at half time reads half of it, and coming back to it later reads the rest."""
    clock = FakeClock()
    monkeypatch.setattr(ReadingTracker, "clock", clock)
    app, store = build_app(tmp_path / "p.sqlite3")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = await open_reader(pilot, "01")
        body, tracker = screen.body, screen.reading
        part2 = screen.part_view(1)
        top2 = dict((pv.index, y) for pv, y in screen.part_tops())[1]
        assert part2.outer_size.height > body.scrollable_content_region.height  # longer than a page
        body.scroll_to(y=top2, animate=False, immediate=True)
        await wait_for(pilot, lambda: body.scroll_y == top2, what="part 2 at the top")
        tracker.account()
        half = seconds_to_read(screen) / 2
        clock.now += half
        tracker.account()
        share = tracker.part_share(1)
        assert 0.2 < share < 0.7, share  # half of what this page shows of part 2
        await pilot.press("pagedown")  # the rest of part 2, read in full
        await wait_for(pilot, lambda: body.scroll_y > top2, what="a page down")
        clock.now += seconds_to_read(screen)
        tracker.account()
        await written(pilot, app)
        assert 1 not in store.parts_read().get("01", set())  # the first page was read only half
        body.scroll_to(y=top2, animate=False, immediate=True)  # back: the other half of the first page
        await wait_for(pilot, lambda: body.scroll_y == top2, what="back a page")
        clock.now += half + 1
        tracker.account()
        await wait_for(pilot, lambda: 1 in store.parts_read().get("01", set()), what="part 2 read over two visits")
    store.close()
