"""The reader: one chapter, mounted part by part (visible part first), with runnable snippets."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from torchcourse.course.model import Chapter
from torchcourse.tui import gcpolicy, keys
from torchcourse.tui.screens.lean import LeanScreen
from torchcourse.tui.cjkwrap import glue_inline_code
from torchcourse.tui.links import ClickableLinks, Link, course_link, prepare_links
from torchcourse.tui.widgets.keybar import KeyBar
from torchcourse.tui.segments import Segment, course_segments
from torchcourse.tui.summary import neighbour
from torchcourse.tui.widgets.banner import BreakBanner, ChapterEnd
from torchcourse.tui.widgets.snippet import SnippetView

FIRST_BATCH_CHARS = 900  # a bit more than one screen: mounted before the first paint
BATCH_CHARS = 4000  # later batches, one per refresh
NARROW = 100  # below this width expected/actual outputs stack vertically (each column wraps)


class PartView(Vertical):
    """One part of the chapter: its segments ``lo:hi`` are mounted (``complete``: all of them)."""

    def __init__(self, index: int, *children: Widget, lo: int | None = None, hi: int | None = None, **kwargs) -> None:
        super().__init__(*children, **kwargs)
        self.index = index
        self.lo, self.hi = lo, hi  # None: none of its segments placed yet
        self.complete = False

    @property
    def mounted(self) -> bool:
        """Some of its segments are there."""
        return self.complete or (self.lo is not None and self.hi is not None and self.hi > self.lo)


class Prose(Static):
    """A run of prose (or a ⭐/⚠️ callout) rendered by Rich's Markdown: one widget per segment.

    Textual's Markdown widget mounts one widget per block (~30 µs per character); a Static
    holding a Rich renderable keeps the first screen of the longest chapter fast. Course links
    (``[文字](02#anchor)``) are clickable (``screen.follow_link``); others show their URL.
    """

    def __init__(self, seg: Segment, **kwargs) -> None:
        from rich.markdown import Markdown as RichMarkdown

        text = seg.text
        if seg.kind == "callout":  # the border and tint mark the callout; drop the quote markers
            text = "\n".join(line[1:].lstrip(" ") if line.startswith(">") else line for line in text.splitlines())
        md = RichMarkdown(text, code_theme="monokai", hyperlinks=True)
        glue_inline_code(md.parsed)  # `x.view(4, 3)` never breaks at its inner spaces
        self.links: list[Link] = prepare_links(md.parsed)
        super().__init__(RenderedOnce(ClickableLinks(md) if self.links else md), **kwargs)
        self.seg = seg


class RenderedOnce:
    """A Rich renderable rendered once per width: Textual renders a Static's content once to
    measure its height and again to paint it, and Markdown (a table above all) is the costliest
    part of the reader's first screen."""

    def __init__(self, renderable) -> None:
        self.renderable = renderable
        self._lines: tuple[tuple, list] | None = None

    def __rich_console__(self, console, options):
        from rich.segment import Segment as RichSegment

        key = (options.max_width, options.min_width, options.justify, options.overflow, options.no_wrap,
               options.highlight, options.markup)
        if self._lines is None or self._lines[0] != key:  # the height only crops: Textual does that
            lines = console.render_lines(self.renderable, options.update(height=None), pad=False, new_lines=False)
            self._lines = (key, lines)
        new_line = RichSegment.line()
        for line in self._lines[1]:
            yield from line
            yield new_line


def segment_widget(seg: Segment) -> Widget:
    if seg.kind == "snippet":
        w: Widget = SnippetView(seg.snippet)
        w.seg = seg  # type: ignore[attr-defined]
        return w
    if seg.kind == "callout":
        return Prose(seg, classes=f"callout callout-{seg.callout}")
    return Prose(seg, classes="prose")


def segment_size(seg: Segment) -> int:
    """Characters a segment puts on screen (a snippet's expected output included)."""
    extra = len(seg.snippet.expected or "") if seg.snippet is not None else 0
    return len(seg.text) + extra


class ReaderScreen(LeanScreen):
    CSS_PATH = Path(__file__).resolve().parent.parent / "reader.tcss"
    BINDINGS = keys.bindings("阅读")
    # focused after the first screen is painted: focusing restyles the body and all it holds
    AUTO_FOCUS = ""

    loaded: reactive[bool] = reactive(False)

    def __init__(self, chapter: Chapter, *, part: int = 0, line: int | None = None, anchor: str | None = None,
                 offset: int = 0) -> None:
        super().__init__()
        self.chapter = chapter
        self.target_offset = max(0, offset) if line is not None else 0  # rows of the line's block above the view
        self._save_timer = None
        self.breaks = chapter.break_points
        if anchor and line is None:
            line = chapter.anchor_line(anchor)
        self.target_line = line
        self.start_part = max(0, part)  # p > 0: open at break point p (the start of part p)
        self._mount_lock = asyncio.Lock()
        self._cancels: dict[int, threading.Event] = {}
        self._run_all_cancel: threading.Event | None = None
        self._last_scroll_y = 0.0
        self._initial_y = 0.0
        self._loaded_event = threading.Event()
        # perf_counter() stamps for benchmarks/bench_app.py: opened, first part painted, all mounted
        self.created_at = time.perf_counter()
        self.created_cpu = time.thread_time()  # CPU of the UI thread: robust on a busy machine
        self.first_paint_cpu: float | None = None
        self.first_paint_at: float | None = None
        self.loaded_at: float | None = None
        self.rendered_ahead = False  # every block's lines rendered after loading (see _prerender)
        self._scrolled_at = 0.0  # when the learner last scrolled (the render-ahead steps aside)

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The frame and the first screen only: the segments from where the learner lands, about a
        screen of them, in one layout. The rest of the chapter (other parts, their banners, the
        chapter's end) is mounted after the first paint, so its cost does not grow with the chapter."""
        try:  # the learner's edited snippets (``e``), shown in place of the book's code
            self.edits = {e.snippet_id: e.code for e in self.app.store.edits(self.chapter.id)}
        except Exception as exc:
            self.edits = {}
            self.notify(f"读不到改过的代码：{exc}", severity="error")
        self.set_class(self.app.size.width < NARROW, "-narrow")
        ch = self.chapter
        yield Static(f"{ch.id} · {ch.title} · ⏱ {ch.minutes} 分钟", id="reader-title")
        target = self._target_part()
        segs = self._segments(target)
        lo = self._segment_at(segs, self.target_line) if self.target_line is not None else 0
        hi = lo
        size = 0
        while hi < len(segs) and size < FIRST_BATCH_CHARS:
            size += segment_size(segs[hi])
            hi += 1
        n = len(ch.parts)
        with VerticalScroll(id="body"):
            if self.target_line is None and 0 < self.start_part < n:
                # opened at break point p: the banner closing part p-1 heads the first screen
                yield PartView(target - 1, self._banner_widget(target), id=f"part-{target - 1}", classes="part")
            if self.target_line is None and self.start_part >= n and ch.parts[-1].break_label is not None:
                # past the last break point (it closes the chapter): that banner, the part above it after
                yield PartView(n - 1, self._banner_widget(n), lo=len(segs), hi=len(segs), id=f"part-{n - 1}",
                               classes="part")
            else:
                yield PartView(target, *self._widgets(segs[lo:hi]), lo=lo, hi=hi, id=f"part-{target}", classes="part")
        yield KeyBar("阅读")

    def on_mount(self) -> None:
        body = self.query_one("#body", VerticalScroll)
        self.watch(body, "scroll_y", self._scrolled, init=False)
        # reading credit (issue 13 item 5): parts scrolled through or stayed in, never jumped to
        from torchcourse.tui.readcredit import ReadingTracker

        self.reading = ReadingTracker(self)
        self.reading.load()
        self.set_interval(2.0, self.reading.account, name="reading credit")
        self.load_parts()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#body", VerticalScroll)

    def part_view(self, index: int) -> PartView:
        """Part ``index``'s container, mounted (empty) in its place among the others if it is not yet."""
        found = self.body.query_children(f"#part-{index}")
        if found:
            return found.first()  # type: ignore[return-value]
        pv = PartView(index, id=f"part-{index}", classes="part")
        later = [p for p in self.body.query_children(PartView) if p.index > index]
        if later:
            self.body.mount(pv, before=min(later, key=lambda p: p.index))
        else:
            end = self.body.query_children(ChapterEnd)
            self.body.mount(pv, before=end.first()) if end else self.body.mount(pv)
        return pv

    def banner(self, k: int) -> BreakBanner | None:
        if not 1 <= k <= len(self.chapter.parts):
            return None
        found = self.body.query_children(f"#part-{k - 1}")
        if not found:
            return None
        banner = found.first().query_children(f"#break-{k}")
        return banner.first() if banner else None  # type: ignore[return-value]

    def parts_mounted(self) -> list[PartView]:
        """The parts now in the body, top to bottom (direct children: no query of the whole DOM)."""
        return [c for c in self.body.children if isinstance(c, PartView)]

    def part_tops(self) -> list[tuple[PartView, int]]:
        """Each part in the body with its top (one pass over the body's children; parts have no margin)."""
        out, y = [], self.body.styles.padding.top
        for kid in self.body.children:
            if not kid.display:
                continue
            if isinstance(kid, PartView):
                out.append((kid, y))
            y += kid.outer_size.height
        return out

    def _banner_widget(self, k: int) -> BreakBanner:
        return BreakBanner(k, self.breaks, self.chapter.parts[k - 1].break_label or "", id=f"break-{k}")

    def _segments(self, index: int) -> list[Segment]:
        """Part ``index``'s display segments (split once per process; the chapter is always the
        app's course's, see ``open_chapter``)."""
        return course_segments(self.app.course, self.chapter, index)

    @staticmethod
    def _segment_at(segs: list[Segment], line: int) -> int:
        """The segment holding ``line`` (else the last one starting before it)."""
        best = 0
        for i, seg in enumerate(segs):
            if seg.start_line <= line:
                best = i
            if seg.start_line <= line <= seg.end_line:
                return i
        return best

    def _widgets(self, segs: list[Segment]) -> list[Widget]:
        edits = getattr(self, "edits", {})
        out = []
        for seg in segs:
            w = segment_widget(seg)
            if isinstance(w, SnippetView):
                w.edited_code = edits.get(w.snippet.id)
            out.append(w)
        return out

    async def mount_end(self) -> None:
        """The chapter-end panel (quiz, next chapter) after the last part (the caller checked it
        is not there yet), laid out before anything scrolls to what is below it."""
        ch = self.chapter
        nxt = neighbour(self.app.course, self.app.store, ch.id, 1)
        has_quiz = ch.checkpoint is not None and ch.checkpoint.is_file()
        end = ChapterEnd(has_quiz, f"{nxt.id} {nxt.title}" if nxt else None, id="chapter-end")
        self.body.mount(end)
        # Its buttons are composed and sized over the next refreshes, each a new layout of the
        # whole chapter: done before the chapter counts as loaded, not on the learner's first PgDn.
        last = None
        for _ in range(10):
            await self._wait_refresh()
            sizes = [w.outer_size for w in end.walk_children(with_self=True)]
            if sizes == last:
                break
            last = sizes

    # -- progressive mounting ---------------------------------------------------------------

    def _target_part(self) -> int:
        if self.target_line is not None:
            index = self.chapter.part_at(self.target_line)
            if index is not None:
                return index
        return min(self.start_part, len(self.chapter.parts) - 1)

    @work(exclusive=True, group="load", exit_on_error=False)
    async def load_parts(self) -> None:
        n = len(self.chapter.parts)
        first = self._target_part()  # composed first; then the parts after it, then those above
        order = [first] + list(range(first + 1, n)) + list(range(first - 1, -1, -1))
        await self._wait_refresh()  # the composed first screen is laid out and painted
        await self._first_screen()  # only an offset into the block at the top is left to scroll
        if self.focused is None:
            self.body.focus()  # ↑ ↓ PgUp PgDn scroll it
        for pi in order:
            await self.ensure_part(pi)
        if not self._learner_moved() and (self.target_line is not None or self.start_part > 0):
            # scrolling was clamped while less was mounted (a target near the chapter's end): redo it
            await self._wait_refresh()
            if self._position_initial():
                await self._wait_refresh()
        self.loaded = True
        self.loaded_at = time.perf_counter()
        self._loaded_event.set()
        self._last_scroll_y = self.body.scroll_y
        self.reading.account()  # the first view starts counting now
        await self._prerender()
        gcpolicy.keep()  # the lines rendered ahead too
        self.rendered_ahead = True

    def on_unmount(self) -> None:
        gcpolicy.release_later(self)  # the chapter's widgets are garbage now

    async def _prerender(self) -> None:
        """Render every block's lines ahead, a few per refresh, from the view down (then up):
        Textual keeps them until the block changes, so a PgDn only composes lines already made
        instead of rendering the Markdown and code that scroll in (most of a PgDn's time)."""
        from textual.geometry import Region

        parts = self.parts_mounted()
        here = self._part_at_top()
        order = [p for p in parts if p.index >= here] + [p for p in reversed(parts) if p.index < here]
        for pv in order:
            for widget in pv.walk_children():
                if widget.children:
                    continue  # a container: only its visible lines are ever drawn, on demand
                # one block per refresh, and none while the learner is paging: a key waits for at
                # most one block's render (a long chapter's PgDn landed behind four of them)
                while time.monotonic() - self._scrolled_at < 0.3:
                    await asyncio.sleep(0.1)
                self._arrange_all_while_idle()
                width, height = widget.outer_size
                if not widget.is_attached or not width or not height or not widget.display:
                    continue
                widget.render_lines(Region(0, 0, *widget.size))
                gcpolicy.keep()  # lines kept for as long as the chapter is open
                await self._wait_refresh()  # keys and scrolling are served in between
        self._arrange_all_while_idle()

    def _arrange_all_while_idle(self) -> None:
        """Have Textual's map of every widget's place up to date now, while nobody is paging.

        Rendering a block off screen asks for its region, and so does a scroll (for the
        scrollbar) right after a layout: when that map is stale, Textual arranges every block of
        the chapter first (20-35 ms in a long chapter). A scroll makes it stale, so each block
        rendered ahead after a scroll paid it, and so did the first PgDn after loading."""
        compositor = self._compositor  # Textual's private API (the pin keeps it; see the tests)
        if compositor._full_map_invalidated:
            compositor.full_map  # noqa: B018 - the property arranges and keeps the map

    async def _first_screen(self) -> None:
        """Scroll to where the learner should land and let that screen paint."""
        if self._position_initial():
            await self._wait_refresh()
        self._initial_y = self.body.scroll_y
        if self.first_paint_at is None:
            self.first_paint_at = time.perf_counter()
            self.first_paint_cpu = time.thread_time()

    async def _wait_refresh(self) -> None:
        done = asyncio.Event()
        self.call_after_refresh(done.set)
        await done.wait()

    async def ensure_part(self, index: int) -> None:
        """Mount all of part ``index`` (what is missing of it), its banner and, after the last part,
        the chapter's end. Content mounted above the view keeps the view where it is."""
        async with self._mount_lock:
            pv = self.part_view(index)
            if pv.complete:
                return
            segs = self._segments(index)
            if pv.lo is None or pv.hi is None:
                pv.lo = pv.hi = 0
            # the tail, batch by batch (one per refresh): the view never waits for all of it
            while pv.hi < len(segs):
                size, end = 0, pv.hi
                while end < len(segs) and size < BATCH_CHARS:
                    size += segment_size(segs[end])
                    end += 1
                batch = self._widgets(segs[pv.hi:end])
                banner = self.banner(index + 1)
                await self._mount_keeping_view(pv, batch, before=banner)
                pv.hi = end
                gcpolicy.keep()  # mounted for as long as the chapter is open
            if self.chapter.parts[index].break_label is not None and self.banner(index + 1) is None:
                await self._mount_keeping_view(pv, [self._banner_widget(index + 1)], before=None)
            if index == len(self.chapter.parts) - 1 and not self.body.query_children(ChapterEnd):
                await self.mount_end()
            if pv.lo > 0:  # opened at a line inside the part: the segments above it
                batch = self._widgets(segs[:pv.lo])
                await self._mount_keeping_view(pv, batch, before=pv.children[0] if pv.children else None)
                pv.lo = 0
            pv.complete = True

    async def _mount_keeping_view(self, pv: PartView, batch: list[Widget], before: Widget | None) -> None:
        """Mount ``batch`` into ``pv``; when it lands above the top of the view, keep the view still:
        once the layout has settled, scroll down by exactly the height the body grew."""
        moved = self._learner_moved()
        body = self.body
        above = self.first_paint_at is not None and self._above_view(pv, before)
        grown_from = body.virtual_size.height
        await (pv.mount_all(batch, before=before) if before is not None else pv.mount_all(batch))
        await self._wait_refresh()
        if above:
            # heights arrive over a few refreshes (a snippet's blocks are composed after it mounts)
            last = -1
            for _ in range(30):
                height = body.virtual_size.height
                if height == last and all(w.outer_size.height > 0 for w in batch):
                    break
                last = height
                await self._wait_refresh()
            body.scroll_to(y=body.scroll_y + body.virtual_size.height - grown_from, animate=False, immediate=True)
            await self._wait_refresh()
        if not moved:
            self._initial_y = body.scroll_y  # where the loader left the view

    def _learner_moved(self) -> bool:
        """The learner scrolled since the loader last placed the view (then it is theirs to keep)."""
        if self.first_paint_at is not None and self.body.scroll_y != self._initial_y:
            self._moved = True
        return getattr(self, "_moved", False)

    def _above_view(self, pv: PartView, before: Widget | None) -> bool:
        """Whether content mounted into ``pv`` (before ``before``, else at its end) lands above the view's top."""
        if before is not None:
            at = self._y(before) - before.styles.margin.top
        elif pv.children:
            last = pv.children[-1]
            at = self._y(last) + last.outer_size.height
        else:  # an empty part just created: it sits where the part before it ends
            siblings = list(self.body.children)
            i = siblings.index(pv)
            prev = siblings[i - 1] if i > 0 else None
            at = self._y(prev) + prev.outer_size.height if prev is not None else 0
        return at <= int(self.body.scroll_y)

    def _y(self, widget: Widget) -> int:
        """The widget's top in the body's virtual space.

        For the body's parts and what they hold it is worked out from the sizes of the last layout,
        the way Textual's vertical layout stacks them (adjacent margins collapse to the larger):
        asking the compositor for the region of a widget off screen makes it arrange every widget
        of the chapter again after each scroll (~40 ms a PgDn in a long chapter)."""
        body = self.body
        parent = widget.parent
        if parent is body:
            return self._stacked_top(body, widget)
        if parent is not None and parent.parent is body:
            return self._stacked_top(body, parent) + self._stacked_top(parent, widget)
        return widget.region.y - body.region.y + int(body.scroll_y)

    @staticmethod
    def _stack(container: Widget):
        """``(child, top)`` for each shown child of ``container``'s vertical layout, top to bottom
        (margin excluded from the top; adjacent margins collapse to the larger), from sizes."""
        y = container.styles.padding.top
        prev_bottom = None
        for kid in container.children:
            if not kid.display:
                continue
            margin = kid.styles.margin
            y += margin.top if prev_bottom is None else max(prev_bottom, margin.top)
            yield kid, y
            y += kid.outer_size.height
            prev_bottom = margin.bottom

    @classmethod
    def _stacked_top(cls, container: Widget, child: Widget) -> int:
        """``child``'s top inside ``container`` (where it would go when it is not there)."""
        y = container.styles.padding.top
        for kid, top in cls._stack(container):
            if kid is child:
                return top
            y = top + kid.outer_size.height
        return y

    def snippet_tops(self) -> list[tuple[SnippetView, int]]:
        """Every snippet in the body with its top, in one pass (not one :meth:`_y` per snippet,
        each of which walks the siblings above it: Tab was quadratic in a long chapter)."""
        out = []
        for pv, part_top in self.part_tops():
            out.extend((kid, part_top + y) for kid, y in self._stack(pv) if isinstance(kid, SnippetView))
        return out

    def _widget_at_top(self) -> Widget | None:
        top = int(self.body.scroll_y)
        best = None
        for pv in self.parts_mounted():
            for child in pv.children:
                y = self._y(child)
                if y <= top + 1:
                    best = child
                elif best is not None:
                    return best
                else:
                    return child
        return best

    def _position_initial(self) -> bool:
        """Scroll to the target line or break point; False when the top of the chapter is right."""
        body = self.body
        if self.target_line is not None:
            w = self.widget_for_line(self.target_line)
            y = None if w is None else self._y(w) + self.target_offset
        else:
            b = self.banner(self.start_part) if self.start_part > 0 else None
            y = None if b is None else self._y(b)
        if y is None or y == int(body.scroll_y):
            return False
        body.scroll_to(y=y, animate=False, immediate=True)
        return True

    def widget_for_line(self, line: int) -> Widget | None:
        best = None
        for pv in self.parts_mounted():
            for child in pv.children:
                seg = getattr(child, "seg", None)
                if seg is None:
                    continue
                if seg.start_line <= line:
                    best = child
                if seg.start_line <= line <= seg.end_line:
                    return child
        return best

    async def jump_to_line(self, line: int) -> None:
        index = self.chapter.part_at(line)
        if index is not None:
            await self.ensure_part(index)
        await self._wait_refresh()
        w = self.widget_for_line(line)
        if w is not None:
            self.body.scroll_to(y=self._y(w), animate=False, immediate=True)

    async def jump_to_break(self, k: int) -> None:
        await self.ensure_part(k - 1)
        await self._wait_refresh()
        b = self.banner(k)
        if b is not None:
            self.body.scroll_to(y=self._y(b), animate=False, immediate=True)

    # -- break points ------------------------------------------------------------------------

    def visible_banners(self) -> list[BreakBanner]:
        body = self.body
        top, bottom = body.scroll_y, body.scroll_y + body.scrollable_content_region.height
        out = []
        for pv, top_of_part in self.part_tops():
            b = pv.children[-1] if pv.children else None
            if not isinstance(b, BreakBanner):
                continue
            y = top_of_part + self._stacked_top(pv, b)
            if y < bottom and y + b.outer_size.height > top:
                out.append(b)
        return out

    def _scrolled(self, old: float, new: float) -> None:
        self._scrolled_at = time.monotonic()
        if not self.loaded:
            return
        self.reading.scrolled()
        # the place is saved once the view rests (a closed terminal loses at most the last second)
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = self.set_timer(0.8, self.save_place)
        if new > self._last_scroll_y:
            for b in self.visible_banners():
                if not b.reached:
                    self.reach(b.index)
        self._last_scroll_y = new

    def reach(self, k: int) -> None:
        """Break point k was reached: record it (the store also sets the resume position)."""
        cid = self.chapter.id
        b = self.banner(k)
        if b is not None:
            b.mark_reached()  # shown at once; the write is queued off the UI thread
        self.app.save_progress(f"{cid} 章的断点 {k}", lambda s: s.reach_break(cid, k))
        self.app.after_progress(cid)

    # -- actions ----------------------------------------------------------------------------

    async def action_next_part(self) -> None:
        top = self.body.scroll_y
        for k in range(1, self.breaks + 1):
            if not self.part_view(k - 1).mounted:
                await self.ensure_part(k - 1)
                await self._wait_refresh()
            b = self.banner(k)
            if b is None:
                continue
            if self._y(b) > top + 0.5:
                self.reach(k)
                self.body.scroll_to(y=self._y(b), animate=False, immediate=True)
                self._last_scroll_y = self.body.scroll_y
                return
        self.body.scroll_end(animate=False, immediate=True)
        self.notify("这已经是本章最后一段了。")

    def action_stop_here(self) -> None:
        visible = [b for b in self.visible_banners()]
        if visible:
            k = max(b.index for b in visible)
            self.reach(k)
            where = f"断点 {k}/{self.breaks}"
        else:
            pv = self._part_at_top()
            where = f"第 {pv + 1} 段里" if pv else "本章开头"
        if not self.save_place():
            return
        self.app.go_home()
        self.app.notify(f"已保存：{self.chapter.id} {self.chapter.title} · {where}。下次按 c 从这里继续。")

    # -- the exact reading place -------------------------------------------------------------

    def current_place(self) -> tuple[int, int | None, int] | None:
        """(part, line, offset) of the view: the block at its top (its first source line and how
        many of its rows are above the view); part is the furthest reached break on screen when
        that is further (the chapter's end cannot scroll its last banner to the top)."""
        if not self.loaded:
            return None
        top = int(self.body.scroll_y)
        w = self._widget_at_top()
        if w is None:
            return None
        seg = getattr(w, "seg", None)
        if isinstance(w, BreakBanner):
            part, line, offset = w.index, None, 0
        elif seg is not None:
            pv = w.parent
            part = pv.index if isinstance(pv, PartView) else self._part_at_top()
            line, offset = seg.start_line, max(0, top - self._y(w))
        else:
            part, line, offset = self._part_at_top(), None, 0
        reached = [b.index for b in self.visible_banners() if b.reached]
        return max([part, *reached]), line, offset

    def save_place(self) -> bool:
        """Store the exact place for 继续 (on every exit, and whenever the view rests)."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        self.reading.account()  # the time up to this exit counts
        place = self.current_place()
        if place is None:
            return True
        from torchcourse.tui.summary import chapter_digest

        part, line, offset = place
        self.app.save_place(self.chapter.id, part, line, offset, chapter_digest(self.chapter))  # queued
        return True

    def _part_at_top(self) -> int:
        top = self.body.scroll_y
        current = 0
        for pv, y in self.part_tops():
            if y <= top + 1:
                current = pv.index
        return current

    def action_back(self) -> None:
        self.app.go_home()

    def action_toc(self) -> None:
        from torchcourse.tui.screens.toc import TocScreen

        def chosen(target) -> None:
            if target is None:
                return
            kind, value = target
            if kind == "break":
                self.run_worker(self.jump_to_break(value), group="jump", exclusive=True)
            else:
                self.run_worker(self.jump_to_line(value), group="jump", exclusive=True)

        self.app.push_screen(TocScreen(self.chapter), chosen)

    def action_next_chapter(self) -> None:
        self._open_neighbour(1)

    def action_prev_chapter(self) -> None:
        self._open_neighbour(-1)

    def _open_neighbour(self, step: int) -> None:
        ch = neighbour(self.app.course, self.app.store, self.chapter.id, step)
        if ch is None:
            self.notify("当前路线上没有" + ("下一章" if step > 0 else "上一章") + "了（还没写好的章节会跳过）。")
            return
        self.app.open_chapter(ch.id)

    def action_quiz(self) -> None:
        self.app.open_quiz(self.chapter.id)

    # -- links --------------------------------------------------------------------------------

    def action_follow_link(self, href: str) -> None:
        """A course link was clicked or picked: open its chapter at its section (or jump here)."""
        link = course_link("", href)
        if link is None:
            self.notify(f"这个链接不在教程里：{href}")
            return
        if link.chapter is None or link.chapter == self.chapter.id:
            if link.anchor is None:
                self.body.scroll_home(animate=False, immediate=True)
                return
            line = self.chapter.anchor_line(link.anchor)
            if line is None:
                self.notify(f"本章没有 #{link.anchor} 这一节。", severity="warning")
                return
            self.run_worker(self.jump_to_line(line), group="jump", exclusive=True)
            return
        ch = self.app.written_chapter(link.chapter)
        if ch is None:
            return
        anchor = link.anchor
        if anchor is not None and ch.anchor_line(anchor) is None:
            self.notify(f"第 {ch.id} 章里没有 #{anchor} 这一节，从本章开头打开。", severity="warning")
            anchor = None
        self.app.open_chapter(ch.id, anchor=anchor)

    def visible_links(self) -> list[Link]:
        """Course links of the prose on screen, top to bottom (the whole visible part if none is on screen)."""
        body = self.body
        top, bottom = body.scroll_y, body.scroll_y + body.scrollable_content_region.height
        out: list[Link] = []
        for prose in self.query(Prose):
            if not prose.links:
                continue
            y = self._y(prose)
            if y < bottom and y + prose.outer_size.height > top:
                out.extend(prose.links)
        if not out:
            pv = self.part_view(self._part_at_top())
            for prose in pv.query(Prose):
                out.extend(prose.links)
        return out

    def action_links(self) -> None:
        from torchcourse.tui.screens.toc import LinksScreen

        links = self.visible_links()
        if not links:
            self.notify("这一屏没有可以打开的链接。")
            return

        def chosen(link: Link | None) -> None:
            if link is not None:
                self.action_follow_link(link.href)

        self.app.push_screen(LinksScreen(links, self.app.course, self.chapter), chosen)

    # -- running snippets -------------------------------------------------------------------

    def _on_screen(self, view: Widget) -> bool:
        body = self.body
        top, bottom = body.scroll_y, body.scroll_y + body.scrollable_content_region.height
        y = self._y(view)
        return y + view.outer_size.height > top and y < bottom

    def focused_or_visible_snippet(self) -> SnippetView | None:
        """The snippet x runs: the selected one while it is on screen, else the first on screen
        (never one selected earlier and scrolled away: the learner reads what is in view)."""
        if isinstance(self.focused, SnippetView) and self._on_screen(self.focused):
            return self.focused
        body = self.body
        top, bottom = body.scroll_y, body.scroll_y + body.scrollable_content_region.height
        for view, y in self.snippet_tops():
            if y >= bottom:
                break
            if view.snippet.runnable and y + view.outer_size.height > top:
                return view
        return None

    def action_next_snippet(self) -> None:
        self._step_snippet(1)

    def action_prev_snippet(self) -> None:
        self._step_snippet(-1)

    def _step_snippet(self, step: int) -> None:
        """Tab / Shift+Tab: the next / previous snippet from the selected one when it is on
        screen, else from where the learner is reading (the top of the view)."""
        tops = self.snippet_tops()
        views = [v for v, _y in tops]
        focused = self.focused if isinstance(self.focused, SnippetView) else None
        if focused is not None and focused in views and self._on_screen(focused):
            i = views.index(focused) + step
        else:
            top = self.body.scroll_y
            if step > 0:
                i = next((j for j, (_v, y) in enumerate(tops) if y >= top), len(views))
            else:
                i = max((j for j, (_v, y) in enumerate(tops) if y < top), default=-1)
        if not 0 <= i < len(views):
            self.notify("后面没有代码块了。" if step > 0 else "前面没有代码块了。")
            return
        views[i].focus()
        views[i].scroll_visible(animate=False)

    def action_run_snippet(self) -> None:
        view = self.focused_or_visible_snippet()
        if view is None:
            self.notify("屏幕上没有可以运行的代码块。按 Tab 选一个。")
            return
        view.request_run()

    def action_rerun_fresh(self) -> None:
        """X: run the snippet in view again without the cache, in a brand-new interpreter."""
        view = self.focused_or_visible_snippet()
        if view is None:
            self.notify("屏幕上没有可以运行的代码块。按 Tab 选一个。")
            return
        if view.state != "running":
            view.fresh_run = True
        view.request_run()

    def _runner_is_warm(self) -> bool:
        runner = self.app.runner
        get = getattr(runner, "get", None)
        real = get() if get is not None else runner
        return bool(getattr(real, "warm", False))

    @on(SnippetView.RunRequested)
    def _run_requested(self, event: SnippetView.RunRequested) -> None:
        event.stop()
        view = event.view
        if id(view) in self._cancels:
            return
        cancel = threading.Event()
        self._cancels[id(view)] = cancel
        view.show_running()
        self.call_after_refresh(self._reveal, view)  # the spinner: x on a block near the bottom
        self._run_one(view, cancel)

    def _reveal(self, view: SnippetView) -> None:
        """Scroll just enough that the block's verdict line (spinner or result) is on screen."""
        found = view.query(".verdict")
        if found and view.is_attached:
            found.first().scroll_visible(animate=False)
        view.result_revealed = view.state == "done"  # tests wait for this state, not for time

    @work(thread=True, exit_on_error=False, group="run")
    def _run_one(self, view: SnippetView, cancel: threading.Event) -> None:
        result = self._run_snippet_blocking(view, cancel)
        self.app.call_from_thread(self._finish, view, result)
        self.app.call_from_thread(lambda: self.call_after_refresh(self._reveal, view))

    def _run_snippet_blocking(self, view: SnippetView, cancel: threading.Event):
        snippet = view.effective_snippet()  # the learner's edit runs under the same runner and isolation
        edited = snippet is not view.snippet
        fresh, view.fresh_run = getattr(view, "fresh_run", False), False  # X: no cache, a new interpreter
        kwargs = {"use_cache": False} if edited else {}
        if fresh:
            kwargs = {"use_cache": False, "cold": True}
        try:
            result = self.app.runner.run(snippet, cancel=cancel, **kwargs)
        except Exception as exc:  # never crash the UI; show what happened
            result = SimpleNamespace(status="error", actual=None, expected=view.snippet.expected, diff=None,
                                     seconds=None, message=f"{type(exc).__name__}: {exc}", cached=False, truncated=False)
        try:  # which mode ran, for the verdict line (a cached result names none)
            result.mode = "cold" if (fresh or snippet.cold or snippet.gpu or not self._runner_is_warm()) else "warm"
        except Exception:
            pass
        if edited:
            result.edited = True  # the verdict says the code was changed (not a failure of the book)
        cid, sid = self.chapter.id, view.snippet.id
        verdict = f"edited-{result.status}" if edited else result.status
        self.app.save_progress(f"#{sid} 的运行记录", lambda s: s.record_run(cid, sid, verdict))  # queued
        return result

    def _finish(self, view: SnippetView, result) -> None:
        self._cancels.pop(id(view), None)
        view.show_result(result)

    # -- editing snippets (改一改再跑) ------------------------------------------------------------

    def action_edit_snippet(self) -> None:
        """``e``: open the snippet in view (as ``x`` chooses) in an editor, in place."""
        view = self.focused_or_visible_snippet()
        if view is None:
            focused = self.focused
            while focused is not None and not isinstance(focused, SnippetView):
                focused = focused.parent  # type: ignore[assignment]
            view = focused if isinstance(focused, SnippetView) else None
        if view is None:
            self.notify("屏幕上没有可以改的代码块。按 Tab 选一个。")
            return
        if view.snippet.norun:
            self.notify(f"#{view.snippet.id} 只供阅读（不运行），不能改。")
            return
        from torchcourse.tui.widgets.editor import SnippetEditor, open_editor

        found = view.query(SnippetEditor)
        if found:
            found.first().area.focus()
            return
        open_editor(view, view.code)

    def _keep_edit(self, view: SnippetView, code: str) -> bool:
        """Store the learner's version (or forget it when it is the book's again); show it."""
        cid, sid = self.chapter.id, view.snippet.id
        if code == view.snippet.code:
            self.app.save_progress(f"#{sid} 恢复原文", lambda s: s.delete_edit(cid, sid))
        else:
            self.app.save_progress(f"#{sid} 改过的代码", lambda s: s.save_edit(cid, sid, code))
        view.set_edited(code)
        return True

    def on_snippet_editor_run_edited(self, event) -> None:
        event.stop()
        view = event.editor.view
        self._keep_edit(view, event.code)
        if view.state == "running":
            self.notify("这个代码块还在运行（z 取消）。")
            return
        view.request_run()

    def on_snippet_editor_left(self, event) -> None:
        event.stop()
        from torchcourse.tui.widgets.editor import close_editor

        view = event.editor.view
        self._keep_edit(view, event.code)
        close_editor(view)
        view.focus()

    def action_restore_snippet(self) -> None:
        """``u``: the book's version again, after a confirmation."""
        focused = self.focused
        while focused is not None and not isinstance(focused, SnippetView):
            focused = focused.parent  # type: ignore[assignment]
        view = focused if isinstance(focused, SnippetView) and focused.edited_code is not None else None
        if view is None:
            body = self.body
            top, bottom = body.scroll_y, body.scroll_y + body.scrollable_content_region.height
            for v in self.query(SnippetView):
                y = self._y(v)
                if v.edited_code is not None and y + v.outer_size.height > top and y < bottom:
                    view = v
                    break
        if view is None:
            self.notify("屏幕上没有改过的代码块（改过的标着 ✏️）。")
            return
        from torchcourse.tui.widgets.editor import ConfirmRestore, close_editor

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            cid, sid = self.chapter.id, view.snippet.id
            self.app.save_progress(f"#{sid} 恢复原文", lambda s: s.delete_edit(cid, sid))
            close_editor(view)
            view.set_edited(None)
            view.focus()
            self.notify(f"#{view.snippet.id} 已恢复成书上的原文。")

        self.app.push_screen(ConfirmRestore(view.snippet.id), answered)

    def action_cancel_run(self) -> None:
        events = list(self._cancels.values())
        if self._run_all_cancel is not None:
            events.append(self._run_all_cancel)
        if not events:
            self.notify("现在没有在运行的代码块。")
            return
        for ev in events:
            ev.set()
        self.notify("已请求取消运行。")

    def action_run_all(self) -> None:
        if self._run_all_cancel is not None:
            self.notify("已经在运行本章全部代码块了（z 取消）。")
            return
        self._run_all_cancel = threading.Event()
        self.notify("开始依次运行本章所有代码块……")
        self._run_all(self._run_all_cancel)

    @work(thread=True, exit_on_error=False, group="run-all", exclusive=True)
    def _run_all(self, cancel: threading.Event) -> None:
        from torchcourse.tui.screens.dialogs import STATUS_NAMES

        self._loaded_event.wait(30)
        views = self.app.call_from_thread(lambda: [v for v in self.query(SnippetView) if v.snippet.runnable])
        counts: dict[str, int] = {}
        failed: list[str] = []
        for view in views:
            if cancel.is_set():
                counts["cancelled"] = counts.get("cancelled", 0) + 1
                continue
            self._cancels[id(view)] = cancel
            self.app.call_from_thread(view.show_running)
            result = self._run_snippet_blocking(view, cancel)
            self.app.call_from_thread(self._finish, view, result)
            counts[result.status] = counts.get(result.status, 0) + 1
            if result.status in ("mismatch", "error", "timeout"):
                changed = "，代码已改动" if getattr(result, "edited", False) else ""
                failed.append(f"#{view.snippet.id}（{STATUS_NAMES.get(result.status, result.status)}{changed}）")
        self.app.call_from_thread(self._run_all_done, counts, failed, len(views))

    def _run_all_done(self, counts: dict[str, int], failed: list[str], total: int) -> None:
        self._run_all_cancel = None
        from torchcourse.tui.screens.dialogs import RunSummaryScreen

        self.app.push_screen(RunSummaryScreen(self.chapter, counts, failed, total))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.notify(f"出错了：{event.worker.error}", severity="error")
            if event.worker.group == "run-all":
                self._run_all_cancel = None
