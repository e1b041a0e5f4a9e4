"""Full-text search over the whole course (Chinese included); Enter jumps to the place."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from torchcourse.tui.screens.dialogs import Dialog


class SearchScreen(Dialog):
    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.hits: list = []

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box", classes="dialog-box"):
            yield Label("搜索全文（输入关键词，回车跳到第一条；↓ 进入结果列表，Esc 关闭）", classes="dialog-title")
            yield Input(self.initial, placeholder="比如：stride、retain_graph、就地", id="search-input")
            yield Label("", id="search-status")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        self.query_one("#search-input", Input).focus()
        if self.initial:
            self.search(self.initial)

    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        self.search(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="search")
    def search(self, query: str) -> None:
        from torchcourse.lookup import search_text

        hits = search_text(self.app.course, query.strip(), limit=50) if query.strip() else []
        self.app.call_from_thread(self._show, query, hits)

    def _show(self, query: str, hits: list) -> None:
        if query != self.query_one("#search-input", Input).value:
            return
        self.hits = hits
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        course = self.app.course
        for i, h in enumerate(hits):
            ch = course.chapter(h.chapter_id)
            title = f"{h.chapter_id} {ch.title if ch else ''}"
            sec = ch.section(h.anchor) if ch and h.anchor else None
            where = f" · {sec.title}" if sec else ""
            results.add_option(Option(Content.assemble((title + where, "bold"), "\n  ", h.excerpt.strip()), id=f"hit-{i}"))
        status = self.query_one("#search-status", Label)
        if not query.strip():
            status.update("")
        elif hits:
            status.update(f"找到 {len(hits)} 处")
            results.highlighted = 0
        else:
            status.update("没有找到。换个词试试（中文、英文、代码都可以）。")

    @on(Input.Submitted, "#search-input")
    def _submitted(self) -> None:
        if self.hits:
            self._jump(0)

    def on_key(self, event) -> None:
        if event.key == "down" and self.focused is self.query_one("#search-input", Input) and self.hits:
            self.query_one("#search-results", OptionList).focus()
            event.stop()

    @on(OptionList.OptionSelected, "#search-results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._jump(event.option_index)

    def _jump(self, index: int) -> None:
        hit = self.hits[index]
        self.dismiss(None)
        self.app.open_chapter(hit.chapter_id, line=hit.line)
