"""Table of contents of a chapter: its sections and break points, in reading order."""

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
