"""Where things are in the reader's body, from the last layout's sizes (read-only).

Owns: the parts mounted and their tops, a break point's banner, a widget's top (worked out the
way Textual's vertical layout stacks children, never from the compositor's map), snippet tops,
the view's range and what is on it (banners, a widget, the widget and part at its top), the
block that holds a source line. It mounts, scrolls and stores nothing.

May call: :mod:`.blocks` (``PartView``); the host screen's ``query_one`` (the ``#body``). Never
the layout's mounting, the screen module or a part (``tests/test_layers.py``).
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget

from torchcourse.course.model import Chapter
from torchcourse.tui.reader.blocks import PartView
from torchcourse.tui.widgets.banner import BreakBanner
from torchcourse.tui.widgets.snippet import SnippetView


def stack(container: Widget):
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


def stacked_top(container: Widget, child: Widget) -> int:
    """``child``'s top inside ``container`` (where it would go when it is not there)."""
    y = container.styles.padding.top
    for kid, top in stack(container):
        if kid is child:
            return top
        y = top + kid.outer_size.height
    return y


class Positions:
    """Position questions on the open chapter's body (see the module docstring)."""

    def __init__(self, screen, chapter: Chapter) -> None:
        self.screen = screen  # the host: only its ``#body``
        self.chapter = chapter

    @property
    def body(self) -> VerticalScroll:
        return self.screen.query_one("#body", VerticalScroll)

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
        body = self.body
        out, y = [], body.styles.padding.top
        for kid in body.children:
            if not kid.display:
                continue
            if isinstance(kid, PartView):
                out.append((kid, y))
            y += kid.outer_size.height
        return out

    def y(self, widget: Widget) -> int:
        """The widget's top in the body's virtual space.

        For the body's parts and what they hold it is worked out from the sizes of the last layout,
        the way Textual's vertical layout stacks them (adjacent margins collapse to the larger):
        asking the compositor for the region of a widget off screen makes it arrange every widget
        of the chapter again after each scroll (~40 ms a PgDn in a long chapter)."""
        body = self.body
        parent = widget.parent
        if parent is body:
            return stacked_top(body, widget)
        if parent is not None and parent.parent is body:
            return stacked_top(body, parent) + stacked_top(parent, widget)
        return widget.region.y - body.region.y + int(body.scroll_y)

    def snippet_tops(self) -> list[tuple[SnippetView, int]]:
        """Every snippet in the body with its top, in one pass (not one :meth:`y` per snippet,
        each of which walks the siblings above it: Tab was quadratic in a long chapter)."""
        out = []
        for pv, part_top in self.part_tops():
            out.extend((kid, part_top + y) for kid, y in stack(pv) if isinstance(kid, SnippetView))
        return out

    def view_range(self) -> tuple[float, float]:
        """The top and bottom of the view in the body's virtual space."""
        body = self.body
        return body.scroll_y, body.scroll_y + body.scrollable_content_region.height

    def on_screen(self, widget: Widget) -> bool:
        top, bottom = self.view_range()
        y = self.y(widget)
        return y + widget.outer_size.height > top and y < bottom

    def widget_at_top(self) -> Widget | None:
        top = int(self.body.scroll_y)
        best = None
        for pv in self.parts_mounted():
            for child in pv.children:
                y = self.y(child)
                if y <= top + 1:
                    best = child
                elif best is not None:
                    return best
                else:
                    return child
        return best

    def part_at_top(self) -> int:
        top = self.body.scroll_y
        current = 0
        for pv, y in self.part_tops():
            if y <= top + 1:
                current = pv.index
        return current

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

    def blocks_in(self, top: int, bottom: int):
        """``(part index, block, share of the block's rows in [top, bottom))`` for each block of a
        mounted part with rows in that range (reading credit: what a view shows)."""
        for pv, part_top in self.part_tops():
            h = pv.outer_size.height
            if part_top >= bottom or part_top + h <= top:
                continue
            for kid, y in stack(pv):
                kh = kid.outer_size.height
                lo, hi = max(top, part_top + y), min(bottom, part_top + y + kh)
                if kh > 0 and hi > lo:
                    yield pv.index, kid, (hi - lo) / kh

    def visible_banners(self) -> list[BreakBanner]:
        top, bottom = self.view_range()
        out = []
        for pv, top_of_part in self.part_tops():
            b = pv.children[-1] if pv.children else None
            if not isinstance(b, BreakBanner):
                continue
            y = top_of_part + stacked_top(pv, b)
            if y < bottom and y + b.outer_size.height > top:
                out.append(b)
        return out
