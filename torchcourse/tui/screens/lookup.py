"""Error lookup: paste an error text, get the best matching entries; Enter jumps to the section."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Label, OptionList, TextArea
from textual.widgets.option_list import Option

from torchcourse.tui.screens.dialogs import Dialog


class LookupScreen(Dialog):
    BINDINGS = Dialog.BINDINGS + [Binding("ctrl+j", "first", "跳到第一条", show=False)]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.initial = text
        self.hits: list = []

    def compose(self) -> ComposeResult:
        with Vertical(id="lookup-box", classes="dialog-box"):
            yield Label("报错反查：把报错原文粘贴进来（整段 Traceback 也行）。Tab 到结果，回车跳到讲它的那一节。", classes="dialog-title")
            yield TextArea(self.initial, id="lookup-input", soft_wrap=True, show_line_numbers=False)
            yield Label("", id="lookup-status")
            yield OptionList(id="lookup-results")

    def on_mount(self) -> None:
        self.query_one("#lookup-input", TextArea).focus()
        if self.initial:
            self.lookup(self.initial)

    @on(TextArea.Changed, "#lookup-input")
    def _changed(self, event: TextArea.Changed) -> None:
        self.lookup(event.text_area.text)

    @work(thread=True, exclusive=True, exit_on_error=False, group="lookup")
    def lookup(self, text: str) -> None:
        from torchcourse.lookup import lookup_error

        hits = lookup_error(self.app.course, text, limit=10) if text.strip() else []
        self.app.call_from_thread(self._show, text, hits)

    def _show(self, text: str, hits: list) -> None:
        if text != self.query_one("#lookup-input", TextArea).text:
            return
        self.hits = hits
        results = self.query_one("#lookup-results", OptionList)
        results.clear_options()
        for i, h in enumerate(hits):
            e = h.entry
            results.add_option(
                Option(
                    Content.assemble(
                        (f"{i + 1}. {e.cause}", "bold"),
                        "\n   ",
                        (f"→ {e.chapter_id} · {e.section_title}", "$accent"),
                        "\n   ",
                        (e.text.strip().splitlines()[-1] if e.text.strip() else "", "$text-muted"),
                    ),
                    id=f"hit-{i}",
                )
            )
        status = self.query_one("#lookup-status", Label)
        if not text.strip():
            status.update("")
        elif hits:
            status.update(f"最相关的 {len(hits)} 条（按相关度排序）：")
            results.highlighted = 0
        else:
            status.update("没有找到相近的报错。试试只粘贴最后一行（例如 RuntimeError: …）。")

    def action_first(self) -> None:
        if self.hits:
            self._jump(0)

    @on(OptionList.OptionSelected, "#lookup-results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._jump(event.option_index)

    def _jump(self, index: int) -> None:
        e = self.hits[index].entry
        self.dismiss(None)
        self.app.open_chapter(e.chapter_id, anchor=e.anchor)
