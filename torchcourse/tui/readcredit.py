"""Which parts of the open chapter the learner really read (issue 13 item 5, walk L8).

The rule (:mod:`torchcourse.progress.reading`): a page counts as read once it has been on screen
as long as a reader at a fluent pace (the course's 170 字/分 times ``PACE_FACTOR``) needs for the text it shows, code and
output at half weight. Time on a view is spread over the text it shows: a page held half that
long reads half of each block on it, a block cut by the page's edge gets its share of rows, and
the rest comes from the next page or a later visit (line by line with ``j``/``k`` adds up too).
A part (between two break points) is read once blocks holding :data:`SEEN_SHARE` of its weighted
characters are read. Jumping (``n``, the TOC, a held PgDn) shows a page for a moment: it reads
next to nothing. Time after five minutes without any scrolling is not reading.

:class:`ReadingTracker` is fed by the reader: :meth:`account` runs on every scroll, on a timer
and on every exit; it credits the time since the last call to the view that was on screen during
it, then notes the new view. Parts read are written to the store once (``mark_part_read``).
"""

from __future__ import annotations

import time

from torchcourse.progress.reading import IDLE_CAP_S, SEEN_SHARE, block_chars, reading_pace


class ReadingTracker:
    clock = staticmethod(time.monotonic)  # tests replace it with a fake clock

    def __init__(self, screen) -> None:
        self.screen = screen
        self.read: set[int] = set()
        self.covered: dict[int, dict[object, float]] = {}  # part -> {block: share of it read, 0..1}
        now = self.clock()
        self._tick = now
        self._active = now  # last scroll: time after IDLE_CAP_S without one is not reading
        self._view: tuple[int, int] | None = None

    def load(self) -> None:
        screen = self.screen
        try:
            self.read = set(screen.app.store.parts_read(screen.chapter.id).get(screen.chapter.id, set()))
        except Exception:  # StoreError: credit nothing rather than crash
            self.read = set()

    def scrolled(self) -> None:
        self.account()
        self._active = self.clock()

    @staticmethod
    def weight(block) -> float:
        """The block's characters as the credit counts them (cached on the block)."""
        cached = getattr(block, "_read_chars", None)
        if cached is None:
            seg = getattr(block, "seg", None)
            cached = block_chars(seg.kind, seg.text, seg.snippet.expected if seg.snippet else None) if seg else 0.0
            try:
                block._read_chars = cached
            except AttributeError:
                pass
        return cached

    def part_share(self, index: int) -> float:
        """The share (0..1) of part ``index``'s weighted characters read so far."""
        pv = next((p for p, _y in self.screen.part_tops() if p.index == index), None)
        if pv is None:
            return 0.0
        total = sum(self.weight(k) for k in pv.children)
        got = sum(self.weight(k) * share for k, share in self.covered.get(index, {}).items())
        return got / total if total else 0.0

    def _credit(self, top: int, bottom: int, dt: float) -> set[int]:
        """Spread ``dt`` seconds over the text of the view [top, bottom); the parts it touched."""
        shown = [(i, block, rows, self.weight(block)) for i, block, rows in self.screen.blocks_in(top, bottom)]
        visible = sum(rows * w for _i, _b, rows, w in shown)
        if visible <= 0:
            return set()
        need = visible * 60.0 / reading_pace(self.screen.app.course.chars_per_minute)  # seconds to read what it shows
        share = min(1.0, dt / need)
        touched = set()
        for index, block, rows, w in shown:
            if index in self.read or w <= 0:
                continue
            cov = self.covered.setdefault(index, {})
            cov[block] = min(1.0, cov.get(block, 0.0) + rows * share)
            touched.add(index)
        return touched

    def account(self) -> list[int]:
        """Credit the time since the last call to the view then on screen; note the current view.
        Returns the parts newly counted as read (already stored)."""
        screen = self.screen
        now = self.clock()
        # the time that counts: since the last tick, but not past IDLE_CAP_S after the last scroll
        dt = max(0.0, min(now, self._active + IDLE_CAP_S) - self._tick)
        self._tick = now
        if not screen.loaded or not screen.is_current:  # a dialog or another screen on top
            self._view = None
            return []
        newly: list[int] = []
        if self._view is not None and dt > 0:
            for index in sorted(self._credit(*self._view, dt)):
                if self.part_share(index) >= SEEN_SHARE - 1e-9:
                    newly.append(index)
        cid = screen.chapter.id
        for index in newly:  # queued off the UI thread (the app's one write path)
            screen.app.save_progress(f"{cid} 章第 {index + 1} 段的阅读记录", lambda s, i=index: s.mark_part_read(cid, i))
            self.read.add(index)
        body = screen.body
        self._view = (int(body.scroll_y), int(body.scroll_y) + body.scrollable_content_region.height)
        return newly
