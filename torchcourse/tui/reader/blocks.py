"""The reader's blocks: what one segment of a chapter becomes on screen.

Owns: :class:`PartView` (one part's container and which of its segments are mounted),
:class:`Prose` (prose and callouts through Rich's Markdown), :class:`RenderedOnce`, and
:func:`segment_widget` / :func:`segment_size` / :func:`build_widgets`.

May call: the widgets (``SnippetView``), ``segments``, ``links``, ``cjkwrap``. Nothing else of
the reader: it is the bottom of the package (``tests/test_layers.py`` enforces the order).
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from torchcourse.tui.cjkwrap import glue_inline_code, space_links
from torchcourse.tui.links import ClickableLinks, Link, prepare_links
from torchcourse.tui.segments import Segment, underscores_as_written
from torchcourse.tui.widgets.snippet import SnippetView


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
        underscores_as_written(md.parsed)  # __setattr__ in a section title reads as written
        glue_inline_code(md.parsed)  # `x.view(4, 3)` never breaks at its inner spaces
        space_links(md.parsed)  # 见[06 章](06) reads 见 06 章
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
        term = SearchMark.term.lower()
        for line in self._lines[1]:
            if term and any(term in seg.text.lower() for seg in line):
                yield from SearchMark.mark(line, term)
            else:
                yield from line
            yield new_line


class SearchMark:
    """The active search's term (the app sets it; "" when none): its matches in prose are shown
    marked, like ``less`` does, while ``n`` / ``N`` step through them."""

    term = ""
    STYLE = "bold black on #e5c07b"

    @classmethod
    def mark(cls, line, term: str):
        from rich.segment import Segment as RichSegment
        from rich.style import Style

        hit = Style.parse(cls.STYLE)
        for seg in line:
            text, low, at = seg.text, seg.text.lower(), 0
            if seg.control or term not in low:
                yield seg
                continue
            while True:
                i = low.find(term, at)
                if i < 0:
                    break
                if i > at:
                    yield RichSegment(text[at:i], seg.style)
                yield RichSegment(text[i:i + len(term)], (seg.style or Style()) + hit)
                at = i + len(term)
            if at < len(text):
                yield RichSegment(text[at:], seg.style)


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


def build_widgets(segs: list[Segment], edits: Mapping[str, str]) -> list[Widget]:
    """The widgets of ``segs``; a snippet the learner edited (``edits``: id → code) shows their code."""
    out = []
    for seg in segs:
        w = segment_widget(seg)
        if isinstance(w, SnippetView):
            w.edited_code = edits.get(w.snippet.id)
        out.append(w)
    return out
