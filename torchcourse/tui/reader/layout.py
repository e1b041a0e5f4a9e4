"""The reader's layout: the chapter mounted part by part, and jumps within it.

Owns: which segments are mounted (the first screen in ``compose``, then every part, batch by
batch, the view kept still when content lands above it), the chapter-end panel, rendering
ahead, the landing place (target line / break point) and whether the learner has moved since,
and jumps to a line or a break point (mounting its part first).

May call: :mod:`.positions` (where things are) and :mod:`.blocks`; the host screen's Textual
API (``app`` for the course, the store's edits and the chapter's neighbour,
``call_after_refresh``, ``notify``, ``focused``, its compositor). It knows nothing of the reading
place, links or snippet runs, and never imports the screen or a part (``tests/test_layers.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from textual.containers import VerticalScroll
from textual.widget import Widget

from torchcourse.tui import gcpolicy
from torchcourse.tui.reader.blocks import PartView, build_widgets, segment_size
from torchcourse.tui.reader.positions import Positions
from torchcourse.tui.segments import Segment, course_segments
from torchcourse.tui.summary import neighbour
from torchcourse.tui.widgets.banner import BreakBanner, ChapterEnd

FIRST_BATCH_CHARS = 900  # a bit more than one screen: mounted before the first paint
BATCH_CHARS = 4000  # later batches, one per refresh


class ChapterLayout:
    """The chapter's blocks in the screen's ``#body`` (see the module docstring)."""

    def __init__(self, screen, positions: Positions, *, part: int, line: int | None, anchor: str | None,
                 offset: int) -> None:
        self.screen = screen  # the host: its Textual API, nothing of the other parts
        self.positions = positions
        self.chapter = chapter = positions.chapter
        self.target_offset = max(0, offset) if line is not None else 0  # rows of the line's block above the view
        self.breaks = chapter.break_points
        if anchor and line is None:
            line = chapter.anchor_line(anchor)
        self.target_line = line
        self.start_part = max(0, part)  # p > 0: open at break point p (the start of part p)
        self.edits: dict[str, str] = {}  # the learner's edited snippets (``e``), shown in place of the book's code
        self.reached_before = 0  # the chapter's furthest break in the store when it opened
        self._mount_lock = asyncio.Lock()
        self._initial_y = 0.0
        self._moved = False
        self.first_paint_at: float | None = None  # perf_counter() when the first screen was painted
        self.first_paint_cpu: float | None = None  # thread_time() then (robust on a busy machine)
        self.scrolled_at = 0.0  # when the learner last scrolled (the render-ahead steps aside)

    @property
    def body(self) -> VerticalScroll:
        return self.positions.body

    # -- the first screen ---------------------------------------------------------------------

    def load_edits(self) -> None:
        try:
            self.edits = {e.snippet_id: e.code for e in self.screen.app.store.edits(self.chapter.id)}
        except Exception as exc:
            self.edits = {}
            self.screen.notify(f"读不到改过的代码：{exc}", severity="error")
        try:  # the breaks reached in earlier visits are shown as reached ("✔ 已记下") again
            self.reached_before = self.screen.app.store.chapter_progress(self.chapter.id).furthest_break
        except Exception:
            self.reached_before = 0  # a store that cannot be read: no break is shown as reached

    def first_parts(self) -> Iterator[PartView]:
        """The body's first screen: the segments from where the learner lands, about a screen of them."""
        ch = self.chapter
        target = self.target_part()
        segs = self.segments(target)
        lo = self.segment_at(segs, self.target_line) if self.target_line is not None else 0
        hi = lo
        size = 0
        while hi < len(segs) and size < FIRST_BATCH_CHARS:
            size += segment_size(segs[hi])
            hi += 1
        n = len(ch.parts)
        if self.target_line is None and 0 < self.start_part < n:
            # opened at break point p: the banner closing part p-1 heads the first screen
            yield PartView(target - 1, self.banner_widget(target), id=f"part-{target - 1}", classes="part")
        if self.target_line is None and self.start_part >= n and ch.parts[-1].break_label is not None:
            # past the last break point (it closes the chapter): that banner, the part above it after
            yield PartView(n - 1, self.banner_widget(n), lo=len(segs), hi=len(segs), id=f"part-{n - 1}",
                           classes="part")
        else:
            yield PartView(target, *self.widgets(segs[lo:hi]), lo=lo, hi=hi, id=f"part-{target}", classes="part")

    def target_part(self) -> int:
        if self.target_line is not None:
            index = self.chapter.part_at(self.target_line)
            if index is not None:
                return index
        return min(self.start_part, len(self.chapter.parts) - 1)

    def segments(self, index: int) -> list[Segment]:
        """Part ``index``'s display segments (split once per process; the chapter is always the
        app's course's, see ``open_chapter``)."""
        return course_segments(self.screen.app.course, self.chapter, index)

    @staticmethod
    def segment_at(segs: list[Segment], line: int) -> int:
        """The segment holding ``line`` (else the last one starting before it)."""
        best = 0
        for i, seg in enumerate(segs):
            if seg.start_line <= line:
                best = i
            if seg.start_line <= line <= seg.end_line:
                return i
        return best

    def widgets(self, segs: list[Segment]) -> list[Widget]:
        return build_widgets(segs, self.edits)

    def banner_widget(self, k: int) -> BreakBanner:
        return BreakBanner(k, self.breaks, self.chapter.parts[k - 1].break_label or "", reached=k <= self.reached_before, id=f"break-{k}")

    # -- parts --------------------------------------------------------------------------------

    def part_view(self, index: int) -> PartView:
        """Part ``index``'s container, mounted (empty) in its place among the others if it is not yet."""
        body = self.body
        found = body.query_children(f"#part-{index}")
        if found:
            return found.first()  # type: ignore[return-value]
        pv = PartView(index, id=f"part-{index}", classes="part")
        later = [p for p in body.query_children(PartView) if p.index > index]
        if later:
            body.mount(pv, before=min(later, key=lambda p: p.index))
        else:
            end = body.query_children(ChapterEnd)
            body.mount(pv, before=end.first()) if end else body.mount(pv)
        return pv

    async def mount_end(self) -> None:
        """The chapter-end panel (quiz, next chapter) after the last part (the caller checked it
        is not there yet), laid out before anything scrolls to what is below it."""
        ch, app = self.chapter, self.screen.app
        nxt = neighbour(app.course, app.store, ch.id, 1)
        has_quiz = ch.checkpoint is not None and ch.checkpoint.is_file()
        from torchcourse.tui.summary import current_route

        route = current_route(app.course, app.store)
        # the route's next chapter, named as such: the chapter's own text may point elsewhere (walk M7)
        whose = f"路线 {route.id} 的下一章" if route is not None else "下一章"
        end = ChapterEnd(has_quiz, f"{nxt.id} {nxt.title}" if nxt else None, id="chapter-end", next_words=whose)
        self.body.mount(end)
        # Its buttons are composed and sized over the next refreshes, each a new layout of the
        # whole chapter: done before the chapter counts as loaded, not on the learner's first PgDn.
        last = None
        for _ in range(10):
            await self.wait_refresh()
            sizes = [w.outer_size for w in end.walk_children(with_self=True)]
            if sizes == last:
                break
            last = sizes

    # -- progressive mounting -----------------------------------------------------------------

    async def mount_chapter(self) -> None:
        """Land where the learner should, let that screen paint, then mount every part: the one
        composed first, the parts after it, then those above (the view kept where it is)."""
        n = len(self.chapter.parts)
        first = self.target_part()
        order = [first] + list(range(first + 1, n)) + list(range(first - 1, -1, -1))
        await self.wait_refresh()  # the composed first screen is laid out and painted
        await self._first_screen()  # only an offset into the block at the top is left to scroll
        if self.screen.focused is None:
            self.body.focus()  # ↑ ↓ PgUp PgDn scroll it
        for pi in order:
            await self.ensure_part(pi)
        if not self.learner_moved() and (self.target_line is not None or self.start_part > 0):
            # scrolling was clamped while less was mounted (a target near the chapter's end): redo it
            await self.wait_refresh()
            if self._position_initial():
                await self.wait_refresh()

    async def prerender(self) -> None:
        """Render every block's lines ahead, a few per refresh, from the view down (then up):
        Textual keeps them until the block changes, so a PgDn only composes lines already made
        instead of rendering the Markdown and code that scroll in (most of a PgDn's time)."""
        from textual.geometry import Region

        parts = self.positions.parts_mounted()
        here = self.positions.part_at_top()
        order = [p for p in parts if p.index >= here] + [p for p in reversed(parts) if p.index < here]
        for pv in order:
            for widget in pv.walk_children():
                if widget.children:
                    continue  # a container: only its visible lines are ever drawn, on demand
                # one block per refresh, and none while the learner is paging: a key waits for at
                # most one block's render (a long chapter's PgDn landed behind four of them)
                while time.monotonic() - self.scrolled_at < 0.3:
                    await asyncio.sleep(0.1)
                self._arrange_all_while_idle()
                width, height = widget.outer_size
                if not widget.is_attached or not width or not height or not widget.display:
                    continue
                widget.render_lines(Region(0, 0, *widget.size))
                gcpolicy.keep()  # lines kept for as long as the chapter is open
                await self.wait_refresh()  # keys and scrolling are served in between
        self._arrange_all_while_idle()

    def _arrange_all_while_idle(self) -> None:
        """Have Textual's map of every widget's place up to date now, while nobody is paging.

        Rendering a block off screen asks for its region, and so does a scroll (for the
        scrollbar) right after a layout: when that map is stale, Textual arranges every block of
        the chapter first (20-35 ms in a long chapter). A scroll makes it stale, so each block
        rendered ahead after a scroll paid it, and so did the first PgDn after loading."""
        compositor = self.screen._compositor  # Textual's private API (the pin keeps it; see the tests)
        if compositor._full_map_invalidated:
            compositor.full_map  # noqa: B018 - the property arranges and keeps the map

    async def _first_screen(self) -> None:
        """Scroll to where the learner should land and let that screen paint."""
        if self._position_initial():
            await self.wait_refresh()
        self._initial_y = self.body.scroll_y
        if self.first_paint_at is None:
            self.first_paint_at = time.perf_counter()
            self.first_paint_cpu = time.thread_time()

    async def wait_refresh(self) -> None:
        done = asyncio.Event()
        self.screen.call_after_refresh(done.set)
        await done.wait()

    async def ensure_part(self, index: int) -> None:
        """Mount all of part ``index`` (what is missing of it), its banner and, after the last part,
        the chapter's end. Content mounted above the view keeps the view where it is."""
        async with self._mount_lock:
            pv = self.part_view(index)
            if pv.complete:
                return
            segs = self.segments(index)
            if pv.lo is None or pv.hi is None:
                pv.lo = pv.hi = 0
            # the tail, batch by batch (one per refresh): the view never waits for all of it
            while pv.hi < len(segs):
                size, end = 0, pv.hi
                while end < len(segs) and size < BATCH_CHARS:
                    size += segment_size(segs[end])
                    end += 1
                batch = self.widgets(segs[pv.hi:end])
                banner = self.positions.banner(index + 1)
                await self._mount_keeping_view(pv, batch, before=banner)
                pv.hi = end
                gcpolicy.keep()  # mounted for as long as the chapter is open
            if self.chapter.parts[index].break_label is not None and self.positions.banner(index + 1) is None:
                await self._mount_keeping_view(pv, [self.banner_widget(index + 1)], before=None)
            if index == len(self.chapter.parts) - 1 and not self.body.query_children(ChapterEnd):
                await self.mount_end()
            if pv.lo > 0:  # opened at a line inside the part: the segments above it
                batch = self.widgets(segs[:pv.lo])
                await self._mount_keeping_view(pv, batch, before=pv.children[0] if pv.children else None)
                pv.lo = 0
            pv.complete = True

    async def _mount_keeping_view(self, pv: PartView, batch: list[Widget], before: Widget | None) -> None:
        """Mount ``batch`` into ``pv``; when it lands above the top of the view, keep the view still:
        once the layout has settled, scroll down by exactly the height the body grew."""
        moved = self.learner_moved()
        body = self.body
        above = self.first_paint_at is not None and self._above_view(pv, before)
        grown_from = body.virtual_size.height
        await (pv.mount_all(batch, before=before) if before is not None else pv.mount_all(batch))
        await self.wait_refresh()
        if above:
            # heights arrive over a few refreshes (a snippet's blocks are composed after it mounts)
            last = -1
            for _ in range(30):
                height = body.virtual_size.height
                if height == last and all(w.outer_size.height > 0 for w in batch):
                    break
                last = height
                await self.wait_refresh()
            body.scroll_to(y=body.scroll_y + body.virtual_size.height - grown_from, animate=False, immediate=True)
            await self.wait_refresh()
        if not moved:
            self._initial_y = body.scroll_y  # where the loader left the view

    def learner_moved(self) -> bool:
        """The learner scrolled since the loader last placed the view (then it is theirs to keep)."""
        if self.first_paint_at is not None and self.body.scroll_y != self._initial_y:
            self._moved = True
        return self._moved

    def _above_view(self, pv: PartView, before: Widget | None) -> bool:
        """Whether content mounted into ``pv`` (before ``before``, else at its end) lands above the view's top."""
        if before is not None:
            at = self.positions.y(before) - before.styles.margin.top
        elif pv.children:
            last = pv.children[-1]
            at = self.positions.y(last) + last.outer_size.height
        else:  # an empty part just created: it sits where the part before it ends
            siblings = list(self.body.children)
            i = siblings.index(pv)
            prev = siblings[i - 1] if i > 0 else None
            at = self.positions.y(prev) + prev.outer_size.height if prev is not None else 0
        return at <= int(self.body.scroll_y)

    def _position_initial(self) -> bool:
        """Scroll to the target line or break point; False when the top of the chapter is right."""
        body = self.body
        if self.target_line is not None:
            w = self.positions.widget_for_line(self.target_line)
            y = None if w is None else self.positions.y(w) + self.target_offset
        else:
            b = self.positions.banner(self.start_part) if self.start_part > 0 else None
            y = None if b is None else self.positions.y(b)
        if y is None or y == int(body.scroll_y):
            return False
        body.scroll_to(y=y, animate=False, immediate=True)
        return True

    # -- jumps --------------------------------------------------------------------------------

    async def jump_to_line(self, line: int) -> None:
        index = self.chapter.part_at(line)
        if index is not None:
            await self.ensure_part(index)
        await self.wait_refresh()
        w = self.positions.widget_for_line(line)
        if w is not None:
            self.body.scroll_to(y=self.positions.y(w), animate=False, immediate=True)

    async def jump_to_break(self, k: int) -> None:
        await self.ensure_part(k - 1)
        await self.wait_refresh()
        b = self.positions.banner(k)
        if b is not None:
            self.body.scroll_to(y=self.positions.y(b), animate=False, immediate=True)
