"""Which parts of the open chapter the learner really read (issue 13 item 5).

The rule (:mod:`torchcourse.progress.reading`): a part is read once about 90% of its rows have
been on screen in views that rested at least a second, or once the learner has spent a third of
its computed minutes with it on screen. Jumping (``n``, the TOC, a held PgDn) shows rows for less
than a second and credits nothing. Time after five minutes without any scrolling is not reading.

:class:`ReadingTracker` is fed by the reader: :meth:`account` runs on every scroll, on a timer
and on every exit; it credits the time since the last call to the view that was on screen during
it, then notes the new view. Parts read are written to the store once (``mark_part_read``).
"""

from __future__ import annotations

import time

from torchcourse.progress.reading import DWELL_SHARE, IDLE_CAP_S, MIN_LOOK_S, SEEN_SHARE, part_seconds

BUCKETS = 100  # a part's rows, as shares of its height (robust when a resize reflows it)


class ReadingTracker:
    clock = staticmethod(time.monotonic)  # tests replace it with a fake clock

    def __init__(self, screen) -> None:
        self.screen = screen
        self.read: set[int] = set()
        self.seen: dict[int, set[int]] = {}
        self.dwell: dict[int, float] = {}
        now = self.clock()
        self._tick = now
        self._active = now  # last scroll: time after IDLE_CAP_S without one is not reading
        self._view: tuple[int, int] | None = None
        self._view_since = now

    def load(self) -> None:
        screen = self.screen
        try:
            self.read = set(screen.app.store.parts_read(screen.chapter.id).get(screen.chapter.id, set()))
        except Exception:  # StoreError: credit nothing rather than crash
            self.read = set()

    def scrolled(self) -> None:
        self.account()
        self._active = self.clock()

    def _parts_in(self, top: int, bottom: int):
        """(index, part top, part height, rows of it in [top, bottom)) of mounted parts overlapping the view."""
        screen = self.screen
        for pv, y in screen.part_tops():
            if not pv.mounted:
                continue
            h = pv.outer_size.height
            lo, hi = max(top, y), min(bottom, y + h)
            if h > 0 and hi > lo:
                yield pv.index, y, h, lo, hi

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
        if self._view is not None:
            top, bottom = self._view
            rested = now - self._view_since >= MIN_LOOK_S
            for index, y, h, lo, hi in self._parts_in(top, bottom):
                if index in self.read:
                    continue
                self.dwell[index] = self.dwell.get(index, 0.0) + dt * (hi - lo) / max(1, bottom - top)
                if rested:
                    first, last = int((lo - y) * BUCKETS / h), -(-(hi - y) * BUCKETS // h)
                    self.seen.setdefault(index, set()).update(range(first, min(BUCKETS, last)))
                enough_rows = len(self.seen.get(index, ())) >= SEEN_SHARE * BUCKETS
                enough_time = self.dwell[index] >= DWELL_SHARE * part_seconds(screen.chapter, index)
                if enough_rows or enough_time:
                    newly.append(index)
        cid = screen.chapter.id
        for index in newly:  # queued off the UI thread (the app's one write path)
            screen.app.save_progress(f"{cid} 章第 {index + 1} 段的阅读记录", lambda s, i=index: s.mark_part_read(cid, i))
            self.read.add(index)
        body = screen.body
        view = (int(body.scroll_y), int(body.scroll_y) + body.scrollable_content_region.height)
        if view != self._view:
            self._view, self._view_since = view, now
        return newly
