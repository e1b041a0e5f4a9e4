"""Pickers of the reader: the chapter's table of contents, and the links on screen."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from torchcourse.course.model import Chapter
from torchcourse.tui.screens.dialogs import Dialog


def toc_entries(chapter: Chapter) -> list[tuple[int, str, tuple[str, int]]]:
    """(line, label, target) for every section (level ≥ 2) and break point, by line."""
    out = []
    for s in chapter.sections:
        if s.level < 2:
            continue
        indent = "  " * (s.level - 2)
        out.append((s.line, f"{indent}{s.title}", ("line", s.line)))
    n = chapter.break_points
    for p in chapter.parts:
        if p.break_label is not None:
            out.append((p.end_line, f"🛑 断点 {p.index + 1}/{n} · {p.break_label}", ("break", p.index + 1)))
    return sorted(out, key=lambda e: e[0])


class TocScreen(Dialog):
    FIT = {"#toc-list": (5, 14)}  # title (two lines when narrow) and margin, border
    def __init__(self, chapter: Chapter) -> None:
        super().__init__()
        self.chapter = chapter
        self.entries = toc_entries(chapter)

    def compose(self) -> ComposeResult:
        with Vertical(id="toc-box", classes="dialog-box"):
            yield Label(f"目录 · {self.chapter.id} {self.chapter.title}（回车跳转，Esc 关闭）", classes="dialog-title")
            yield OptionList(*[Option(label, id=f"toc-{i}") for i, (_, label, _) in enumerate(self.entries)], id="toc-list")

    @on(OptionList.OptionSelected, "#toc-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.entries[event.option_index][2])


def link_label(link, course, current: Chapter) -> str:
    """``文字 → 02 图：用完就扔 · 小节`` (what a link opens; planned chapters say so)."""
    ch = current if link.chapter is None else course.chapter(link.chapter)
    if ch is None:
        where = f"{link.chapter}（没有这一章）"
    elif ch is current:
        where = "本章"
    else:
        where = f"{ch.id} {ch.title}" + ("" if ch.available else "（还没写好）")
    if link.anchor:
        sec = ch.section(link.anchor) if ch is not None and ch.available else None
        where += f" · {sec.title}" if sec else f" · #{link.anchor}"
    return f"{link.text} → {where}"


class LinksScreen(Dialog):
    """The course links on screen; Enter opens one (``l`` in the reader)."""

    FIT = {"#links-list": (4, 14)}  # title and margin, border

    def __init__(self, links, course, current: Chapter) -> None:
        super().__init__()
        self.links = links
        self.course = course
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="links-box", classes="dialog-box"):
            yield Label("这一屏的链接（回车打开，Esc 关闭）", classes="dialog-title")
            yield OptionList(*[Option(link_label(l, self.course, self.current), id=f"link-{i}") for i, l in enumerate(self.links)], id="links-list")

    @on(OptionList.OptionSelected, "#links-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.links[event.option_index])
