"""Error lookup: paste an error text, get the best matching entries; Enter in the paste box jumps
to the best match's section (Tab to the results to pick another)."""

from __future__ import annotations

from textual import events, on
from textual.content import Content
from textual.widgets import TextArea
from textual.widgets.option_list import Option

from torchcourse.tui.bindings import LOOKUP_BINDINGS
from torchcourse.tui.screens.dialogs import Finder

INPUT_ROWS = 6  # the paste box; fewer (down to 4) on a short terminal


class PasteBox(TextArea):
    """The paste box. A pasted traceback arrives whole (a paste is not a key press), so Enter is
    free to mean "go": with results it jumps to the best match; shift+Enter (where the terminal
    tells it apart) or Enter with no results types a newline."""

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if event.key == "enter" and isinstance(screen, LookupScreen) and screen.hits:
            event.stop()
            event.prevent_default()
            screen.action_first()
            return
        if event.key == "shift+enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        await super()._on_key(event)


class LookupScreen(Finder):
    NAME = "lookup"
    HEADING = "报错反查：把报错原文粘贴进来（整段 Traceback 也行）。回车直接跳到最相关的那一节，Tab 到结果挑别的。"
    EMPTY_OTHER = "本课程没有讲到这条报错（附录里没有相近的）。下一步：去掉你自己的数字和名字，拿最后一行去搜。"

    @property
    def EMPTY(self) -> str:  # noqa: N802 - the Finder's name for it
        """The course's own ``not_covered`` (course.toml; the shipped course names PyTorch's
        forums and its chapter 00), else a wording that names no library and no chapter."""
        course = getattr(self.app, "course", None)
        return (getattr(course, "not_covered", "") or self.EMPTY_OTHER).strip()
    BINDINGS = LOOKUP_BINDINGS

    def make_input(self) -> TextArea:
        return PasteBox(self.initial, id="lookup-input", soft_wrap=True, show_line_numbers=False)

    def input_text(self) -> str:
        return self.query_one("#lookup-input", TextArea).text

    def fit_height(self, height: int) -> None:
        rows = max(4, min(INPUT_ROWS, height // 4))
        self.query_one("#lookup-input", TextArea).styles.height = rows
        # title (up to three lines when narrow) and margin, the paste box, status, border
        self.FIT = {"#lookup-results": (rows + 7, 14)}
        super().fit_height(height)

    def find_hits(self, text: str) -> list:
        from torchcourse.lookup import lookup_error, mentions

        # no row: the chapters' prose and outputs that hold a run of the message's words
        return lookup_error(self.app.course, text, limit=10) or mentions(self.app.course, text)

    def hit_option(self, index: int, hit) -> Option:
        if not hasattr(hit, "entry"):  # a mention in a chapter
            ch = self.app.course.chapter(hit.chapter_id)
            sec = ch.section(hit.anchor) if ch is not None and hit.anchor else None
            where = f"{hit.chapter_id} · {sec.title}" if sec else hit.chapter_id
            return Option(Content.assemble((f"{index + 1}. {hit.excerpt}", "bold"), "\n   ", (f"→ {where}", "$accent")),
                          id=f"hit-{index}")
        e = hit.entry
        last = e.text.strip().splitlines()[-1] if e.text.strip() else ""
        near = () if getattr(hit, "sure", True) else (("相近，不确定 · ", "$warning"),)
        return Option(
            Content.assemble(
                *near, (f"{index + 1}. {e.cause}", "bold"), "\n   ",
                *((f"先查：{e.check}", "\n   ") if e.check else ()),
                (f"→ {e.chapter_id} · {e.section_title}", "$accent"), "\n   ",
                (last, "$text-muted"),
            ),
            id=f"hit-{index}",
        )

    def found_text(self, count: int) -> str:
        if self.hits and not hasattr(self.hits[0], "entry"):
            return f"附录 A 里没有这条报错的条目；正文里有 {count} 处出现了同样的话（不确定讲的是同一个问题）："
        if self.hits and not getattr(self.hits[0], "sure", True):
            return f"相近，不确定：附录 A 里没有完全对得上的条目，下面 {count} 条只是像，别当成答案："
        return f"最相关的 {count} 条（按相关度排序）："

    def open_hit(self, hit) -> None:
        if not hasattr(hit, "entry"):
            self.app.jump_to(hit.chapter_id, line=hit.line)
            return
        self.app.jump_to(hit.entry.chapter_id, anchor=hit.entry.anchor)  # a jump: the place stays

    @on(TextArea.Changed, "#lookup-input")
    def _changed(self, event: TextArea.Changed) -> None:
        self.find(event.text_area.text)

    def action_first(self) -> None:
        self.first_hit()
