"""The reading place: where the learner is in the chapter, and what that earns.

Owns: the reading-credit tracker (:class:`~torchcourse.tui.readcredit.ReadingTracker`), the
break points reached while scrolling down (``reach``), ``n`` (the next break point) and ``s``
(stop here), the exact place for 继续 (:meth:`ReadingPlace.current_place`) and saving it once
the view rests and on every exit.

May call: :class:`~.layout.ChapterLayout` (``ensure_part``, ``part_view``) and
:class:`~.positions.Positions` (banners, tops, the block at the top); the host
screen's Textual API (``app`` for the progress queue and ``go_home``, ``notify``, timers) and its
``chapter`` and ``loaded``. Never the screen module, links or snippets (``tests/test_layers.py``).
"""

from __future__ import annotations

from torchcourse.tui.readcredit import ReadingTracker
from torchcourse.tui.reader.blocks import PartView
from torchcourse.tui.reader.layout import ChapterLayout
from torchcourse.tui.reader.positions import Positions
from torchcourse.tui.summary import break_words, chapter_digest, end_words, resume_where, status_of
from torchcourse.tui.widgets.banner import BreakBanner, ChapterEnd


class ReadingPlace:
    """The learner's place in the open chapter (see the module docstring)."""

    def __init__(self, screen, layout: ChapterLayout, positions: Positions) -> None:
        self.screen = screen  # the host: its Textual API, chapter and ``loaded``
        self.layout = layout
        self.positions = positions
        self.chapter = layout.chapter
        self.reading: ReadingTracker | None = None  # made when the screen is mounted
        self._save_timer = None
        self._last_scroll_y = 0.0

    def start(self) -> None:
        """On mount: reading credit (issue 13 item 5): parts scrolled through or stayed in, never jumped to."""
        self.reading = ReadingTracker(self.screen)
        self.reading.load()
        self.screen.set_interval(2.0, self.reading.account, name="reading credit")

    def chapter_loaded(self) -> None:
        """Every part is mounted: scrolling from here on reaches break points; the first view starts counting."""
        self._last_scroll_y = self.positions.body.scroll_y
        self.reading.account()
        self.show_state()

    def show_state(self, _result=None) -> None:
        """The reached banners and the chapter-end panel say the chapter's state in the one
        progress model's words (home and ``torchcourse progress`` print the same)."""
        app = self.screen.app
        try:
            status = status_of(app.course, app.store, self.chapter.id)
        except Exception:  # a store that cannot be read now: the banners keep their words
            return
        if status is None:
            return
        for k in range(1, self.layout.breaks + 1):
            b = self.positions.banner(k)
            if b is not None:
                b.show_words(break_words(status, k))
        for end in self.positions.body.query_children(ChapterEnd):
            end.show_title(end_words(status))

    def adopt(self) -> None:
        """A visited view becomes the reading place: breaks from here on are reached by reading."""
        self._last_scroll_y = self.positions.body.scroll_y

    async def move_view(self, *, line: int | None = None, part: int = 0, offset: int = 0) -> None:
        """A jump inside this chapter: the view moves, no break is reached on the way."""
        layout, body = self.layout, self.positions.body
        if line is not None:
            await layout.jump_to_line(line)
            if offset:
                body.scroll_to(y=body.scroll_y + offset, animate=False, immediate=True)
        elif part > 0:
            await layout.jump_to_break(part)
        else:
            body.scroll_home(animate=False, immediate=True)
        self._last_scroll_y = body.scroll_y

    def scrolled(self, new: float) -> None:
        if not self.screen.loaded:
            return
        self.reading.scrolled()
        if self.screen.visiting:  # a jump's view: no break reached, no place saved
            self._last_scroll_y = new
            return
        # the place is saved once the view rests (a closed terminal loses at most the last second)
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = self.screen.set_timer(0.8, self.save_place)
        if new > self._last_scroll_y:
            for b in self.positions.visible_banners():
                if not b.reached:
                    self.reach(b.index)
        self._last_scroll_y = new

    def reach(self, k: int) -> None:
        """Break point k was reached: record it (the store also sets the resume position)."""
        if self.screen.visiting:
            return
        cid, app = self.chapter.id, self.screen.app
        b = self.positions.banner(k)
        if b is not None:
            b.mark_reached()  # shown at once; the write is queued off the UI thread
        final = k >= self.chapter.break_points  # stored as "past the last break", however many come later
        app.save_progress(f"{cid} 章的断点 {k}", lambda s: s.reach_break(cid, k, final=final))
        app.after_progress(cid, done=self.show_state)  # the words once the store has the break

    async def next_part(self) -> None:
        """``n``: the next break point below the top of the view (reached, unless this view is a
        jump's visit), else the chapter's end."""
        layout, body = self.layout, self.positions.body
        top = body.scroll_y
        for k in range(1, layout.breaks + 1):
            if not layout.part_view(k - 1).mounted:
                await layout.ensure_part(k - 1)
                await layout.wait_refresh()
            b = self.positions.banner(k)
            if b is None:
                continue
            if self.positions.y(b) > top + 0.5:
                self.reach(k)
                body.scroll_to(y=self.positions.y(b), animate=False, immediate=True)
                self._last_scroll_y = body.scroll_y
                return
        body.scroll_end(animate=False, immediate=True)
        self.screen.notify("这已经是本章最后一段了。")

    def stop_here(self) -> None:
        """``s``: the furthest break on screen reached, the place saved, back home with a note of it."""
        self.screen.visiting = False  # s makes even a jump's view the reading place
        self.screen.app.back_stack = []
        visible = self.positions.visible_banners()
        if visible:
            self.reach(max(b.index for b in visible))
        place = self.current_place()
        if not self.save_place(chosen=True):
            return
        app = self.screen.app
        # the words home's 继续 line uses for the same place (review-00 F4: "本章开头" mid-chapter)
        where = resume_where(app.course, app.store, (self.chapter.id, *place)) if place else "开头"
        where = "本章开头" if where == "开头" else where
        app.go_home()
        app.notify(f"已保存：{self.chapter.id} {self.chapter.title} · {where}。下次按 c 从这里继续。")

    def current_place(self) -> tuple[int, int | None, int] | None:
        """(part, line, offset) of the view: the block at its top (its first source line and how
        many of its rows are above the view); part is the furthest reached break on screen when
        that is further (the chapter's end cannot scroll its last banner to the top)."""
        if not self.screen.loaded:
            return None
        top = int(self.positions.body.scroll_y)
        w = self.positions.widget_at_top()
        if w is None:
            return None
        seg = getattr(w, "seg", None)
        if isinstance(w, BreakBanner):
            part, line, offset = w.index, None, 0
        elif seg is not None:
            pv = w.parent
            part = pv.index if isinstance(pv, PartView) else self.positions.part_at_top()
            line, offset = seg.start_line, max(0, top - self.positions.y(w))
        else:
            part, line, offset = self.positions.part_at_top(), None, 0
        reached = [b.index for b in self.positions.visible_banners() if b.reached]
        return max([part, *reached]), line, offset

    def untouched_top(self) -> bool:
        """The view rests at the chapter's very top, no break of it reached and no place of its
        own stored: the learner opened it and has not read in it yet (no place to save)."""
        if self.positions.body.scroll_y > 0:
            return False
        store, cid = self.screen.app.store, self.chapter.id
        return store.chapter_progress(cid).furthest_break == 0 and cid not in store.placed_chapters()

    def save_place(self, chosen: bool = False) -> bool:
        """Store the exact place for 继续 (on every exit, and whenever the view rests); ``chosen``:
        the learner pressed s, a place even at an untouched top."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        self.reading.account()  # the time up to this exit counts
        if self.screen.visiting:  # a jump's view is not the reading place
            return True
        place = self.current_place()
        if place is None:
            return True
        part, line, offset = place
        if not chosen and self.untouched_top():
            return True  # opening a chapter is not reading it: it stays 未开始 (issue 49)
        self.screen.app.save_place(self.chapter.id, part, line, offset, chapter_digest(self.chapter))  # queued
        return True
